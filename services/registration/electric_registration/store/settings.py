"""Player settings (``registration_player_settings``): one row per player who changed them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from electric_domain.lobby import PlayerSettings, default_display_name
from sqlalchemy import Connection, select

from electric_registration.store import tables as t

_SWITCHES = (
    "muck_winning_hands",
    "muck_losing_hands",
    "four_color_deck",
    "alert_sounds",
    "sound_fx",
    "show_details",
)


def get(
    conn: Connection, player_id: str, *, lock: bool = False
) -> tuple[PlayerSettings, datetime | None]:
    """The player's settings (defaults, version 0, when never changed) and when they last
    changed."""
    q = select(t.player_settings).where(t.player_settings.c.player_id == player_id)
    r = conn.execute(q.with_for_update() if lock else q).first()
    if r is None:
        return PlayerSettings(player_id), None
    m = r._mapping
    return (
        PlayerSettings(
            player_id=player_id,
            display_name=m["display_name"],
            version=int(m["version"]),
            **{k: bool(m[k]) for k in _SWITCHES},
        ),
        m["updated_at"],
    )


def display_names(conn: Connection, player_ids: Iterable[str]) -> dict[str, str]:
    """The name shown for each player (chosen, else the default)."""
    ids = list(set(player_ids))
    chosen: dict[str, str] = {}
    if ids:
        q = select(t.player_settings.c.player_id, t.player_settings.c.display_name).where(
            t.player_settings.c.player_id.in_(ids)
        )
        chosen = {p: n for p, n in conn.execute(q) if n}
    return {p: chosen.get(p) or default_display_name(p) for p in ids}

"""Player settings (``electric_domain.lobby.profile``): read, and change in one transaction
with the ``PlayerSettingsChanged`` event (stream ``registration-player-<player_id>``, topic
``electric.registration.events``; the table service keeps the latest per player and uses the
muck settings at showdown)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from electric.registration.v1 import events_pb2
from electric_domain import lobby
from electric_eventlog import NO_STREAM, EventStore, utc_now
from sqlalchemy import Engine

from electric_registration.store import settings as store_settings


def player_stream(player_id: str) -> str:
    """Event stream of a player's settings."""
    return f"registration-player-{player_id}"


@dataclass(frozen=True)
class Settings:
    """A player's settings and when they last changed (None: never)."""

    settings: lobby.PlayerSettings
    updated_at: datetime | None


def get_settings(engine: Engine, player_id: str) -> Settings:
    """The player's settings (defaults when never changed)."""
    with engine.connect() as conn:
        settings, at = store_settings.get(conn, player_id)
    return Settings(settings, at)


def changed_event(s: lobby.PlayerSettings) -> events_pb2.PlayerSettingsChanged:
    """The event carrying the complete new state of ``s``."""
    return events_pb2.PlayerSettingsChanged(
        player_id=s.player_id,
        display_name=s.shown_name,
        muck_winning_hands=s.muck_winning_hands,
        muck_losing_hands=s.muck_losing_hands,
        four_color_deck=s.four_color_deck,
        alert_sounds=s.alert_sounds,
        sound_fx=s.sound_fx,
        show_details=s.show_details,
        version=s.version,
    )


def update_settings(
    engine: Engine,
    store: EventStore,
    player_id: str,
    update: lobby.SettingsUpdate,
    *,
    correlation_id: str,
) -> tuple[Settings, bool]:
    """Apply ``update``; on a change, store it and append PlayerSettingsChanged in the same
    transaction. Returns the settings and whether they changed."""
    now = utc_now()
    with engine.begin() as conn:
        current, at = store_settings.get(conn, player_id, lock=True)
        new, changed = lobby.apply_update(current, update)
        if not changed:
            return Settings(current, at), False
        store.append(
            conn,
            player_stream(player_id),
            current.version if current.version > 0 else NO_STREAM,
            [changed_event(new)],
            correlation_id=correlation_id,  # the causation: the bound request id
            occurred_at=now,
        )
        store_settings.save(conn, new, now)
    return Settings(new, now), True

"""Players' showdown settings on the table side (issue 11 gap 6): the consumer keeps the
latest PlayerSettingsChanged per player (a late older version never wins) and every deal
passes each seat's Muck Winning / Muck Losing Hands into the hand. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric_domain.tournament import ShowSettings
from electric_eventlog import EventStore, migrate, upgrade
from electric_table.store import repo
from electric_table.store.tables import VERSIONS_DIR
from electric_table.tournament.consumers import on_player_settings
from electric_table.tournament.handlers import TableHandlers
from electric_table.tournament.runtime import TableManager
from electric_table.tournament.tableinfo import SeatInfo, TableInfo
from sqlalchemy import Engine


def _changed(
    player: str, version: int, *, win: bool, lose: bool
) -> registration_events.PlayerSettingsChanged:
    return registration_events.PlayerSettingsChanged(
        player_id=player,
        display_name=player.title(),
        muck_winning_hands=win,
        muck_losing_hands=lose,
        version=version,
    )


def test_latest_settings_per_player_reach_the_deal(backend_engine: Engine) -> None:
    engine = backend_engine
    migrate(engine)
    upgrade(engine, versions_dir=VERSIONS_DIR, version_table="alembic_version_table")
    with engine.begin() as conn:
        on_player_settings(conn, Envelope(), _changed("bo", 2, win=False, lose=True))
        on_player_settings(conn, Envelope(), _changed("bo", 1, win=True, lose=False))  # late
        on_player_settings(conn, Envelope(), _changed("cy", 1, win=True, lose=False))
    with engine.connect() as conn:
        got = repo.player_settings(conn, ["ava", "bo", "cy"])
    assert got == {
        "bo": repo.PlayerSettings(False, True, 2),
        "cy": repo.PlayerSettings(True, False, 1),
    }
    manager = TableManager(engine, EventStore(engine, producer="table"), stopping=asyncio.Event())
    handlers = TableHandlers(manager)
    info = TableInfo(
        table_id="t",
        table_name="T",
        seats=tuple(SeatInfo(i + 1, p, f"e{i}", p) for i, p in enumerate(("ava", "bo", "cy"))),
        action_timer_ms=10_000,
    )
    settings = handlers.show_settings(SimpleNamespace(info=info))  # type: ignore[arg-type]
    assert settings == (
        ShowSettings(),  # never heard of: the defaults (muck what may be mucked)
        ShowSettings(muck_winning=False, muck_losing=True),
        ShowSettings(muck_winning=True, muck_losing=False),
    )

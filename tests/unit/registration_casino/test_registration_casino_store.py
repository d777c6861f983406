"""Registration's casino store on SQLite and PostgreSQL (``backend_engine``): joins racing
for UTH seats and THB table numbers each get their own (unique indexes + retry), and the
sweeper releases on the injected clock."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from electric_domain.casino.common.config import load_config
from electric_domain.lobby.casino import CasinoGame
from electric_eventlog import EventStore, migrate, upgrade
from electric_registration.casino.lobby import CasinoLobby
from electric_registration.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Engine

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _lobby(engine: Engine, now: list[datetime]) -> CasinoLobby:
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_registration",
        target_metadata=metadata,
    )
    lobby = CasinoLobby(
        engine, EventStore(engine, producer="registration"), load_config(), clock=lambda: now[0]
    )
    lobby.ensure_tables()
    return lobby


def test_concurrent_joins_get_distinct_seats_and_tables(backend_engine: Engine) -> None:
    now = [T0]
    lobby = _lobby(backend_engine, now)
    players = [f"p{i}" for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        uth = list(pool.map(lambda p: lobby.join(CasinoGame.UTH, p, "uth-1"), players))
        thb = list(pool.map(lambda p: lobby.join(CasinoGame.THB, p), players))
    assert sorted(j.session.seat for j in uth) == list(range(1, 9))
    assert sorted(j.session.table_id for j in thb) == sorted(f"thb-{n}" for n in range(1, 9))
    games, _ = lobby.lobby()
    assert [g.seated for g in games] == [8, 8]
    now[0] = T0 + timedelta(minutes=20)
    assert len(lobby.sweep()) == 16
    assert lobby.sweep() == []

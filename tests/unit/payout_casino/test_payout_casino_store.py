"""Payout's casino store on SQLite and PostgreSQL (``backend_engine``): a round is decided
once, its wins owed once, each credited once (the bookkeeping side; the wallet side is in
tests/component/payout_casino), and a player's wins are listed newest first with a total."""

from __future__ import annotations

from electric_eventlog import EventStore, migrate, upgrade
from electric_payout.casino import repo
from electric_payout.casino.rules import BetResult, SettledBet, SettledRound
from electric_payout.casino.wins import CasinoWins
from electric_payout.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Engine


def test_owed_once_credited_once(backend_engine: Engine) -> None:
    migrate(backend_engine)
    upgrade(
        backend_engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_payout",
        target_metadata=metadata,
    )
    wins = CasinoWins(backend_engine, EventStore(backend_engine, producer="payout"))
    r = SettledRound(
        "r1",
        "uth-1",
        "uth",
        (
            SettledBet("ann", "ante", 100, BetResult.WIN, 100),
            SettledBet("ann", "trips", 100, BetResult.WIN, 300),
            SettledBet("bob", "ante", 100, BetResult.LOSE, 0),
        ),
    )
    for source in ["e1", "e1", "e2"]:
        with backend_engine.begin() as conn:
            wins.on_settled(conn, r, source_event_id=source)
    owed = wins.owed()
    assert [(w.player_id, w.bet_kind, w.amount_cents) for w in owed] == [
        ("ann", "ante", 200),
        ("ann", "trips", 400),
    ]
    assert [wins.mark_credited(w, w.transfer_key) for w in owed] == [True, True]
    assert [wins.mark_credited(w, w.transfer_key) for w in owed] == [False, False]
    assert wins.owed() == []
    with backend_engine.connect() as conn:
        rows, total = repo.player_wins(conn, "ann", offset=0, limit=10)
    assert total == 600 and {w.status for w in rows} == {"credited"}

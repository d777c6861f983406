"""Payout's store (``electric_payout.store.repo``, and the projector that writes the rows
payout's own facts determine, ``store.projections``) on SQLite and PostgreSQL
(``backend_engine``): consumed facts are kept once, a result waits for its start and is
decided once, prizes read back by tournament and by player, and a prize is credited once
even when two crediters race for it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from electric_eventlog import migrate, upgrade
from electric_payout import facts as f
from electric_payout.store import projections, repo
from electric_payout.store import tables as t
from electric_payout.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import IntegrityError

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _migrated(engine: Engine) -> Engine:
    migrate(engine)
    for _ in range(2):  # idempotent
        upgrade(
            engine,
            versions_dir=VERSIONS_DIR,
            version_table="alembic_version_payout",
            target_metadata=metadata,
        )
    return engine


def _tournament(engine: Engine, table_id: str, started: bytes = b"started") -> None:
    with engine.begin() as conn:
        repo.add_tournament(
            conn,
            table_id=table_id,
            buy_in_cents=500,
            prize_pool_cents=3_000,
            multiplier=2,
            paytable_version="v1",
            table_size=3,
            started=started,
            at=T0,
        )


def _prize(table_id: str, place: int, player: str, amount: int, minute: int) -> f.PrizeAwarded:
    return f.PrizeAwarded(
        tournament_id=table_id,
        table_id=table_id,
        place=place,
        player_id=player,
        entry_id=f"e-{table_id}-{player}",
        amount_cents=amount,
        share_bps=0,
        tied_count=1,
        multiplier=2,
        paytable_version="v1",
        source_event_id="ev",
        occurred_at=T0 + timedelta(minutes=minute),
        buy_in_cents=500,
        seat=place,
    )


def _decide(conn: Connection, table_id: str, *, held: bool) -> None:
    """The decision columns of a result, as the projector writes them with the decision."""
    if held:
        failed = f.PrizeCheckFailed(table_id, table_id, (), 3_000, 2, "v1", "ev", T0)
        projections.project(conn, [failed])
    else:
        projections.mark_awarded_without_prizes(conn, table_id, T0)


def _credit(conn: Connection, place: int, player: str, transfer_id: str) -> bool:
    credited = f.PrizeCredited("t-1", place, player, 0, transfer_id, "key", T0)
    return projections.project(conn, [credited])


def test_consumed_facts_are_kept_once_and_results_decided_once(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    _tournament(engine, "t-1")
    _tournament(engine, "t-1", b"a replay")  # ignored: the first stays
    with engine.begin() as conn:
        repo.add_hand_button(conn, "t-1", 1, 3)
        repo.add_hand_button(conn, "t-1", 2, 1)
        repo.add_hand_button(conn, "t-1", 2, 2)  # replay: ignored
        repo.add_hand_button(conn, "t-2", 1, 2)
        # t-1 finished; t-2 finished before its TournamentStarted arrived.
        repo.add_result(conn, table_id="t-1", finished=b"fin-1", source_event_id="ev-1", at=T0)
        repo.add_result(conn, table_id="t-1", finished=b"again", source_event_id="ev-9", at=T0)
        repo.add_result(conn, table_id="t-2", finished=b"fin-2", source_event_id="ev-2", at=T0)
    with engine.connect() as conn:
        assert repo.get_tournament(conn, "t-1") == repo.TournamentRow("t-1", 3, b"started")
        assert repo.get_tournament(conn, "t-2") is None
        assert repo.hand_buttons(conn, "t-1") == {1: 3, 2: 1}
        assert repo.hand_buttons(conn, "t-2") == {1: 2}
        assert repo.undecided_results(conn) == ["t-1"]  # t-2 waits for its start
        assert repo.unawarded_count(conn) == 2
        assert repo.held_count(conn) == 0

    with engine.begin() as conn:
        assert repo.lock_undecided_result(conn, "t-1") == repo.ResultRow(b"fin-1", "ev-1")
        assert repo.lock_undecided_result(conn, "t-3") is None
        _decide(conn, "t-1", held=False)
    _tournament(engine, "t-2")
    with engine.begin() as conn:
        assert repo.lock_undecided_result(conn, "t-1") is None  # awarded already
        assert repo.undecided_results(conn) == ["t-2"]
        assert repo.lock_undecided_result(conn, "t-2") == repo.ResultRow(b"fin-2", "ev-2")
        _decide(conn, "t-2", held=True)
    with engine.connect() as conn:
        assert repo.lock_undecided_result(conn, "t-2") is None  # held
        assert repo.undecided_results(conn) == []
        assert (repo.unawarded_count(conn), repo.held_count(conn)) == (0, 1)


def test_prizes_read_back_by_tournament_and_player(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        projections.project(
            conn, [_prize("t-1", 1, "ava", 2_000, 0), _prize("t-1", 2, "bo", 1_000, 0)]
        )
        projections.project(conn, [_prize("t-2", 1, "ava", 3_000, minute=5)])
        projections.project(conn, [_prize("t-3", 2, "ava", 500, minute=9)])
    # One prize per (tournament, place, player).
    with pytest.raises(IntegrityError), engine.begin() as conn:
        projections.project(conn, [_prize("t-1", 1, "ava", 9_999, minute=1)])

    with engine.connect() as conn:
        t1 = repo.tournament_prizes(conn, "t-1")
        assert [(p.place, p.player_id, p.amount_cents) for p in t1] == [
            (1, "ava", 2_000),
            (2, "bo", 1_000),
        ]
        first = t1[0]
        assert (first.entry_id, first.table_id, first.status, first.credited_at) == (
            "e-t-1-ava",
            "t-1",
            "awarded",
            None,
        )
        assert (first.buy_in_cents, first.prize_pool_cents, first.multiplier) == (500, 3_000, 2)
        assert repo.tournament_prizes(conn, "t-9") == []

        page, total = repo.player_winnings(conn, "ava", offset=0, limit=2)
        assert [p.tournament_id for p in page] == ["t-3", "t-2"]  # newest first
        assert total == 5_500
        rest, total = repo.player_winnings(conn, "ava", offset=2, limit=2)
        assert [p.tournament_id for p in rest] == ["t-1"] and total == 5_500
        assert repo.player_winnings(conn, "zed", offset=0, limit=10) == ([], 0)

        owed = repo.owed_credits(conn, None)
        assert [(o.table_id, o.place, o.player_id) for o in owed] == [
            ("t-1", 1, "ava"),
            ("t-1", 2, "bo"),
            ("t-2", 1, "ava"),
            ("t-3", 2, "ava"),
        ]
        assert owed[0] == repo.OwedCredit("t-1", 1, "ava", 2_000, "prize-t-1-1-ava")
        assert [o.player_id for o in repo.owed_credits(conn, "t-1", limit=1)] == ["ava"]
        assert repo.uncredited_count(conn) == 4


def test_a_prize_is_credited_once(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        projections.project(
            conn, [_prize("t-1", 1, "ava", 2_000, 0), _prize("t-1", 2, "bo", 1_000, 0)]
        )
        repo.note_credit_failure(conn, "t-1", 2, "bo", "wallet unavailable " * 200)
        repo.note_credit_failure(conn, "t-1", 2, "bo", "wallet unavailable")

    def credit(transfer_id: str) -> bool:
        with engine.begin() as conn:
            return _credit(conn, 1, "ava", transfer_id)

    with ThreadPoolExecutor(4) as pool:
        won = list(pool.map(credit, [f"tr-{i}" for i in range(8)]))
    assert won.count(True) == 1

    with engine.connect() as conn:
        ava, bo = repo.tournament_prizes(conn, "t-1")
        assert ava.status == "credited" and ava.credited_at is not None
        assert ava.wallet_transfer_id == f"tr-{won.index(True)}"
        assert (bo.status, bo.wallet_transfer_id) == ("awarded", "")
        assert [o.player_id for o in repo.owed_credits(conn, None)] == ["bo"]
        assert repo.uncredited_count(conn) == 1
        failures = conn.execute(
            select(t.prizes.c.attempts, t.prizes.c.last_error).where(t.prizes.c.player_id == "bo")
        ).one()
        assert tuple(failures) == (2, "wallet unavailable")
        assert not _credit(conn, 1, "ava", "tr-late")
        assert not _credit(conn, 1, "zed", "tr-none")

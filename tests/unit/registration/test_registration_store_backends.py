"""Registration's core store (``electric_registration.store``: tiers, seating, requests,
wallet_ops, repo) on SQLite and PostgreSQL (``backend_engine``): the catalogue syncs, a
table and its entries go from registering to finished or cancelled, a register request is
recorded once per key and its attempts move on only from the attempt they name, owed wallet
calls are done once, and seats and players are unique per table even under racing joins."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from electric_domain.lobby import RequestRecord, Tier
from electric_eventlog import migrate, upgrade
from electric_registration.store import repo, requests, seating, tiers, wallet_ops
from electric_registration.store import tables as t
from electric_registration.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _naive(value: datetime | None) -> datetime | None:
    # SQLite hands datetimes back naive (stored as UTC).
    return None if value is None else value.replace(tzinfo=None)


def _tier(tier_id: str, buy_in: int, order: int = 0, name: str = "") -> dict[str, object]:
    return {
        "tier_id": tier_id,
        "name": name or tier_id.title(),
        "buy_in_cents": buy_in,
        "rake_cents": buy_in // 10,
        "seats": 3,
        "starting_stack": 500,
        "sort_order": order,
        "game_speed": "hyper_turbo",
        "active": 1,
    }


def _migrated(engine: Engine) -> Engine:
    migrate(engine)
    for _ in range(2):  # idempotent
        upgrade(
            engine,
            versions_dir=VERSIONS_DIR,
            version_table="alembic_version_registration",
            target_metadata=metadata,
        )
    with engine.begin() as conn:
        tiers.sync(conn, [_tier("gold", 1_000, 1), _tier("bronze", 100)])
    return engine


def _open(conn: Connection, table_id: str, tier_id: str = "bronze", minute: int = 0) -> None:
    seating.insert_table(
        conn,
        table_id=table_id,
        tier_id=tier_id,
        table_name=f"Table {table_id}",
        seats=3,
        seed_hex="ab" * 32,
        commitment="c0" * 32,
        paytable_version="v1",
        stream_version=1,
        opened_at=T0 + timedelta(minutes=minute),
    )


def _seat(conn: Connection, entry_id: str, player: str, table_id: str, seat: int) -> None:
    seating.insert_entry(
        conn,
        entry_id=entry_id,
        player_id=player,
        table_id=table_id,
        seat=seat,
        transfer_id=f"tr-{entry_id}",
        request_id=f"rq-{entry_id}",
        at=T0 + timedelta(seconds=seat),
    )


def test_tier_catalogue_syncs_and_keeps_history(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.connect() as conn:
        # The migration's default tiers were deactivated by the sync, not deleted.
        assert tiers.active_ids(conn) == ["bronze", "gold"]  # cheapest first
        assert tiers.active(conn, "gold") == Tier("gold", "Gold", 1_000, 100, 3, 500)
        every = {r.tier_id: int(r.active) for r in conn.execute(t.tiers.select())}
        assert len(every) > 2 and sum(every.values()) == 2
    with engine.begin() as conn:
        tiers.sync(conn, [_tier("gold", 2_000, name="Gold+"), _tier("silver", 500)])
        tiers.lock(conn, "gold")
        _open(conn, "t-1", "gold")
        _open(conn, "t-2", "gold", minute=1)
        _seat(conn, "e-1", "ava", "t-1", 1)
        seating.set_progress(conn, "t-1", players=1, stream_version=2)
    with engine.connect() as conn:
        assert tiers.active_ids(conn) == ["silver", "gold"]
        assert tiers.active(conn, "bronze") is None
        assert tiers.get(conn, "bronze") == Tier("bronze", "Bronze", 100, 10, 3, 500)
        assert tiers.get(conn, "nope") is None
        listed = {row.tier_id: row for row in repo.list_tiers(conn)}
    assert list(listed) == ["silver", "gold"]
    gold = listed["gold"]
    assert (gold.name, gold.buy_in_cents, gold.game_speed) == ("Gold+", 2_000, "hyper_turbo")
    assert (gold.open_tables, gold.tables_filling, gold.players_waiting) == (2, 1, 1)
    assert (listed["silver"].open_tables, listed["silver"].players_waiting) == (0, 0)


def test_table_and_entries_from_registering_to_finished(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        assert seating.get_table(conn, "t-1") is None
        _open(conn, "t-1")
        _open(conn, "t-2", minute=1)
        _seat(conn, "e-1", "ava", "t-1", 1)
        _seat(conn, "e-2", "bo", "t-1", 3)
        seating.set_progress(conn, "t-1", players=2, stream_version=3)
    with engine.connect() as conn:
        row = seating.get_table(conn, "t-1", lock=False)
        assert row is not None
        assert (row.tier_id, row.status, row.seats, row.players_registered) == (
            "bronze",
            "registering",
            3,
            2,
        )
        assert (row.seed_hex, row.commitment, row.stream_version) == ("ab" * 32, "c0" * 32, 3)
        assert (row.tournament_started, row.started_at) == (None, None)
        assert (seating.table_count(conn, "bronze"), seating.open_table_count(conn, "bronze")) == (
            2,
            2,
        )
        opened = {o.table_id: o for o in seating.open_tables(conn, "bronze")}
        assert (opened["t-1"].taken, opened["t-2"].taken) == ({1, 3}, set())
        assert seating.player_open_tables(conn, "ava", "bronze") == {"t-1"}
        assert seating.player_open_tables(conn, "ava", "gold") == set()
        assert seating.find_entry(conn, "e-2") == seating.EntryRecord(
            "e-2", "bo", "t-1", 3, "reserved", "tr-e-2"
        )
        mine = repo.my_tables(conn, "ava", offset=0, limit=10)
        assert [(m.table_id, m.entry_ids, m.seed_hex) for m in mine] == [("t-1", ("e-1",), "")]
        assert [e.buy_in_cents for e in repo.entries_by_id(conn, ["e-2", "e-1", "x"])] == [
            100,
            100,
        ]
        assert repo.table_players(conn, ["t-1", "t-2"]) == {"ava", "bo"}

    # ava leaves and comes back on another seat; cy takes her old seat.
    with engine.begin() as conn:
        seating.withdraw_entry(conn, "e-1")
        _seat(conn, "e-3", "ava", "t-1", 2)
        _seat(conn, "e-4", "cy", "t-1", 1)
        seating.set_progress(conn, "t-1", players=3, stream_version=6)
    with engine.connect() as conn:
        assert [(e.seat, e.player_id) for e in seating.active_entries(conn, "t-1")] == [
            (1, "cy"),
            (2, "ava"),
            (3, "bo"),
        ]
        latest = seating.latest_entry(conn, "t-1", "ava")
        assert latest is not None and latest.entry_id == "e-3"
        assert [o.table_id for o in seating.open_tables(conn, "bronze")] == ["t-2"]  # full

    with engine.begin() as conn:
        seating.mark_filled(
            conn,
            "t-1",
            multiplier=10,
            prize_pool_cents=3_000,
            payouts_json="[[1, 3000]]",
            positions_paid=1,
            tournament_started=b"started",
            stream_version=7,
            at=T0,
        )
    with engine.connect() as conn:
        filled = seating.get_table(conn, "t-1")
        assert filled is not None and filled.status == "filled"
        assert filled.tournament_started == b"started"
        assert {e.status for e in seating.active_entries(conn, "t-1")} == {"confirmed"}
        left = seating.find_entry(conn, "e-1")
        assert left is not None and left.status == "unregistered"
        assert seating.filled_not_started(conn) == ["t-1"]
        assert seating.open_table_count(conn, "bronze") == 1
        (mine_filled,) = repo.my_tables(conn, "ava", offset=0, limit=10)
        assert (mine_filled.multiplier, mine_filled.payouts) == (10, ((1, 3_000),))
        assert mine_filled.seed_hex == "ab" * 32  # revealed once filled

    with engine.begin() as conn:
        seating.mark_started(conn, "t-1", status="filled", stream_version=8, at=T0)
        assert seating.table_running(conn, "t-1")
        assert seating.hand_started(conn, "t-1", 4)
        assert seating.hand_started(conn, "t-1", 2)  # late: the number stays at 4
        assert not seating.hand_started(conn, "t-9", 1)
    with engine.connect() as conn:
        assert seating.filled_not_started(conn) == []
        (running,) = repo.my_tables(conn, "bo", offset=0, limit=10)
        assert (running.status, running.current_hand_number) == ("running", 4)
    with engine.begin() as conn:
        assert seating.table_finished(conn, "t-1", hands=3, at=T0 + timedelta(minutes=9))
    with engine.connect() as conn:
        assert repo.my_tables(conn, "bo", offset=0, limit=10) == []
        (done,) = repo.my_tables(conn, "bo", include_finished=True, offset=0, limit=10)
        assert (done.status, done.current_hand_number) == ("finished", 4)
        assert _naive(done.ended_at) == _naive(T0 + timedelta(minutes=9))
        assert repo.tables_by_status(conn) == {
            "registering": 1,
            "filled": 0,
            "running": 0,
            "finished": 1,
            "cancelled": 0,
        }


def test_cancelled_table_and_its_entries(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        _open(conn, "t-1")
        _seat(conn, "e-1", "ava", "t-1", 1)
        _seat(conn, "e-2", "bo", "t-1", 2)
        seating.withdraw_entry(conn, "e-2")
        assert seating.cancel_reason(conn, "t-1") == ""
        seating.mark_cancelled(conn, "t-1", reason="x" * 600, stream_version=5, at=T0)
    with engine.connect() as conn:
        row = seating.get_table(conn, "t-1")
        assert row is not None and (row.status, row.stream_version) == ("cancelled", 5)
        assert seating.cancel_reason(conn, "t-1") == "x" * 500
        statuses = [seating.find_entry(conn, e) for e in ("e-1", "e-2")]
        assert [e.status if e else "" for e in statuses] == ["cancelled", "unregistered"]
        assert seating.active_entries(conn, "t-1")[0].status == "cancelled"
        assert seating.exists(conn, "t-1") and not seating.exists(conn, "t-2")
        assert seating.open_table_count(conn, "bronze") == 0


def test_request_record_is_unique_and_attempts_move_from_the_named_one(
    backend_engine: Engine,
) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        assert requests.get(conn, "k-1") is None
        requests.insert_first(
            conn, key="k-1", player_id="ava", request_id="r-1", tier_id="bronze", entries=2, at=T0
        )
        requests.insert_first(
            conn, key="k-2", player_id="bo", request_id="r-1", tier_id="gold", entries=1, at=T0
        )
    # The de-duplication record: one row per request key.
    with pytest.raises(IntegrityError), engine.begin() as conn:
        requests.insert_first(
            conn, key="k-1", player_id="ava", request_id="r-1", tier_id="gold", entries=1, at=T0
        )
    with engine.connect() as conn:
        first = requests.get(conn, "k-1", lock=False)
        assert first is not None
        assert first == RequestRecord("bronze", 2, 1, "reserving", (), first.updated_at)
        assert first.updated_at == T0  # made aware again on SQLite
        assert repo.unfinished_attempts(conn) == 2

    later = T0 + timedelta(minutes=5)
    with engine.begin() as conn:
        assert requests.get(conn, "k-1", lock=True) is not None
        assert not requests.end_attempt(conn, "k-1", 2, status="failed", error="", at=later)
        assert requests.end_attempt(conn, "k-1", 1, status="voiding", error="e" * 3_000, at=later)
        assert requests.end_attempt(conn, "k-1", 1, status="failed", error="boom", at=later)
        assert not requests.end_attempt(conn, "k-1", 1, status="voiding", error="", at=later)
        requests.start_attempt(conn, "k-1", 2, later)
        requests.complete(conn, "k-1", ["e-1", "e-2"], later)
    with engine.connect() as conn:
        done = requests.get(conn, "k-1")
        assert done is not None
        assert (done.attempt, done.status, done.entry_ids) == (2, "completed", ("e-1", "e-2"))
        # k-2 is still reserving since T0: abandoned once the cutoff passes it.
        assert requests.abandoned(conn, T0) == []
        assert requests.abandoned(conn, T0 + timedelta(seconds=1)) == [
            requests.Abandoned("k-2", 1, 1)
        ]
        assert repo.unfinished_attempts(conn) == 1
    with engine.begin() as conn:
        assert requests.end_attempt(conn, "k-2", 1, status="voiding", error="", at=later)
    with engine.connect() as conn:
        # A rollback in progress is picked up whatever its age.
        assert requests.abandoned(conn, T0) == [requests.Abandoned("k-2", 1, 1)]


def _op(op_id: str, table_id: str, seq: int, kind: str) -> wallet_ops.OwedOp:
    return wallet_ops.OwedOp(
        op_id, table_id, f"e-{op_id}", seq, kind, f"tr-{op_id}", "from", "to", 100 * seq, kind
    )


def test_owed_wallet_calls_are_done_once(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.connect() as conn:
        assert wallet_ops.oldest_pending_at(conn) is None
    with engine.begin() as conn:
        wallet_ops.add(conn, _op("o-2", "t-1", 2, "move"), T0 + timedelta(seconds=2))
        wallet_ops.add(conn, _op("o-1", "t-1", 1, "post"), T0 + timedelta(seconds=1))
        wallet_ops.add(conn, _op("o-3", "t-1", 3, "void"), T0 + timedelta(seconds=3))
        wallet_ops.add(conn, _op("o-4", "t-2", 1, "post"), T0)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        wallet_ops.add(conn, _op("o-1", "t-1", 9, "post"), T0)
    with engine.connect() as conn:
        assert [o.op_id for o in wallet_ops.pending(conn, None)] == ["o-1", "o-2", "o-3", "o-4"]
        assert wallet_ops.pending(conn, "t-1")[1] == _op("o-2", "t-1", 2, "move")
        assert _naive(wallet_ops.oldest_pending_at(conn)) == _naive(T0)
        assert (wallet_ops.unpaid_count(conn, "t-1"), repo.pending_wallet_ops(conn)) == (2, 4)

    with engine.begin() as conn:
        assert wallet_ops.mark(conn, "o-1", done=False, error="unavailable", at=T0)
        assert wallet_ops.is_pending(conn, "o-1")
        assert wallet_ops.mark(conn, "o-1", done=True, error="", at=T0)
        assert not wallet_ops.mark(conn, "o-1", done=True, error="", at=T0)  # done once
        assert not wallet_ops.is_pending(conn, "o-1")
        assert not wallet_ops.is_pending(conn, "nope")
        assert wallet_ops.mark(conn, "o-4", done=True, error="", at=T0)
    with engine.connect() as conn:
        assert [o.op_id for o in wallet_ops.pending(conn, "t-1")] == ["o-2", "o-3"]
        assert wallet_ops.unpaid_count(conn, "t-1") == 1
        assert _naive(repo.oldest_pending_wallet_op(conn)) == _naive(T0 + timedelta(seconds=2))

    # Cancelling the table drops its pending post/move ops; voids still run.
    with engine.begin() as conn:
        assert wallet_ops.cancel_pending(conn, "t-1") == 1
        assert not wallet_ops.mark(conn, "o-2", done=True, error="", at=T0)  # stays cancelled
    with engine.connect() as conn:
        assert [o.op_id for o in wallet_ops.pending(conn, None)] == ["o-3"]
        assert wallet_ops.unpaid_count(conn, "t-1") == 1  # o-2 cancelled, not done
        assert repo.pending_wallet_ops(conn) == 1


def test_racing_joins_get_distinct_seats_and_one_entry_per_player(
    backend_engine: Engine,
) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        _open(conn, "t-1")

    def join(args: tuple[str, str, int]) -> bool:
        entry_id, player, seat = args
        try:
            with engine.begin() as conn:
                _seat(conn, entry_id, player, "t-1", seat)
        except IntegrityError:
            return False
        return True

    # Eight players race for seat 1; then ava races herself for seats 2 and 3.
    with ThreadPoolExecutor(4) as pool:
        seat_one = list(pool.map(join, [(f"e-{i}", f"p{i}", 1) for i in range(8)]))
        ava = list(pool.map(join, [(f"a-{s}", "ava", s) for s in (2, 3, 2, 3)]))
    assert seat_one.count(True) == 1
    assert ava.count(True) == 1
    with engine.connect() as conn:
        active = seating.active_entries(conn, "t-1")
    assert len(active) == 2
    assert sorted(e.seat for e in active)[0] == 1
    assert [e.player_id for e in active].count("ava") == 1


def test_my_tables_is_one_statement_with_the_players_progress(backend_engine: Engine) -> None:
    """WatchMyTables re-reads this for every watcher on every change and runs it without a
    transaction (``engine.reading``): it must be one statement, so one snapshot."""
    from electric_eventlog.engine import reading
    from electric_registration.store import progress
    from sqlalchemy import event

    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        for table_id, minute in (("t-1", 0), ("t-2", 1), ("t-3", 2)):
            _open(conn, table_id, minute=minute)
        _seat(conn, "e-1", "ava", "t-1", 1)
        _seat(conn, "e-2", "ava", "t-2", 2)
        _seat(conn, "e-3", "bo", "t-2", 1)
        _seat(conn, "e-4", "ava", "t-3", 1)
        progress.seat(conn, "t-1", 1, "ava", 480, T0)
        progress.seat(conn, "t-2", 2, "ava", 650, T0)
        progress.seat(conn, "t-2", 1, "bo", 370, T0)
    statements: list[str] = []

    def count(*args: object) -> None:
        if not str(args[2]).startswith("BEGIN"):  # SQLite's BEGIN DEFERRED (read_only)
            statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        with reading(engine) as conn:
            mine = repo.my_tables(conn, "ava", offset=0, limit=10)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 1, statements
    got = {row.table_id: row.progress for row in mine}
    assert got == {
        "t-1": progress.SeatProgress(1, 480, False, 0, 0),
        "t-2": progress.SeatProgress(2, 650, False, 0, 0),  # ava's, not bo's
        "t-3": None,  # not started: no progress row
    }

"""The lobby's pure rules (electric_domain.lobby): seating and filling, the N-entries rule,
the Register request lifecycle, withdrawal until the fill, and the wallet work a fill owes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from electric_domain import lobby

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _table(tid: str, players: int, minute: int, taken: set[int] | None = None) -> lobby.OpenTable:
    return lobby.OpenTable(
        tid, 3, players, T0 + timedelta(minutes=minute), taken or set(range(1, players + 1))
    )


def test_entry_goes_to_the_fullest_table_oldest_first() -> None:
    tables = [_table("a", 1, 0), _table("b", 2, 5), _table("c", 2, 1)]
    plan = lobby.plan_seating(tables, mine=set(), entry_ids=["e1"], seats_per_table=3)
    [p] = plan.placements
    # b and c both have 2 players; c is older. The entry takes seat 3 and fills c.
    assert (p.table, p.seat, p.players_registered, p.fills) == ("c", 3, 3, True)
    assert not plan.open_spare  # a and b are still open


def test_never_two_seats_for_one_player_at_a_table_and_new_tables_when_needed() -> None:
    tables = [_table("a", 1, 0, {2})]
    plan = lobby.plan_seating(tables, mine={"a"}, entry_ids=["e1", "e2"], seats_per_table=3)
    first, second = plan.placements
    assert first.table == lobby.NewTable(0) and first.seat == 1
    assert second.table == lobby.NewTable(1) and second.seat == 1
    assert not any(p.fills for p in plan.placements)


def test_lowest_free_seat_and_spare_table_after_the_last_open_one_fills() -> None:
    tables = [_table("a", 2, 0, {1, 3})]
    plan = lobby.plan_seating(tables, mine=set(), entry_ids=["e1"], seats_per_table=3)
    [p] = plan.placements
    assert (p.table, p.seat, p.fills) == ("a", 2, True)
    assert plan.open_spare, "the tier must keep an open table"
    assert lobby.first_free_seat(3, {1, 2}) == 3


def test_three_entries_of_one_player_use_three_tables() -> None:
    tables = [_table("a", 2, 0), _table("b", 1, 1)]
    plan = lobby.plan_seating(tables, mine=set(), entry_ids=["x", "y", "z"], seats_per_table=3)
    assert [p.table for p in plan.placements] == ["a", "b", lobby.NewTable(0)]
    assert [p.fills for p in plan.placements] == [True, False, False]


@pytest.mark.parametrize("n", [0, -1, lobby.MAX_ENTRIES + 1])
def test_entry_count_out_of_range_is_refused(n: int) -> None:
    with pytest.raises(lobby.BadEntryCount):
        lobby.check_entry_count(n)
    lobby.check_entry_count(1)
    lobby.check_entry_count(lobby.MAX_ENTRIES)


def _record(status: str, *, attempt: int = 1, age: int = 0) -> lobby.RequestRecord:
    return lobby.RequestRecord("t1", 2, attempt, status, ("e1", "e2"), T0 - timedelta(seconds=age))


def _begin(record: lobby.RequestRecord | None, *, tier: str = "t1", entries: int = 2) -> object:
    return lobby.begin(
        record,
        key="k",
        request_id="r",
        tier_id=tier,
        entries=entries,
        now=T0,
        stale_after=timedelta(seconds=120),
    )


def test_request_lifecycle() -> None:
    first = _begin(None)
    assert isinstance(first, lobby.StartAttempt) and first.attempt == 1 and first.first
    assert list(first.entry_ids) == lobby.entry_ids_for("k", 1, 2)
    assert _begin(_record("completed")) == lobby.AlreadyDone(("e1", "e2"))
    assert _begin(_record("reserving", age=5)) == lobby.StillInFlight(1)
    with pytest.raises(lobby.AttemptRollingBack):
        _begin(_record("reserving", age=500))
    with pytest.raises(lobby.AttemptRollingBack):
        _begin(_record("voiding"))
    retry = _begin(_record("failed", attempt=2))
    assert isinstance(retry, lobby.StartAttempt) and retry.attempt == 3 and not retry.first
    assert set(retry.entry_ids).isdisjoint(lobby.entry_ids_for("k", 2, 2))
    with pytest.raises(lobby.RequestReused):
        _begin(_record("completed"), entries=3)
    with pytest.raises(lobby.RequestReused):
        _begin(_record("completed"), tier="t2")


def test_withdrawal_only_own_entries_and_only_until_the_fill() -> None:
    lobby.check_may_withdraw(entry_id="e", entry_player="p", acting_player="p")
    lobby.check_may_withdraw(entry_id="e", entry_player="p", acting_player=None)
    with pytest.raises(lobby.NotYourEntry):
        lobby.check_may_withdraw(entry_id="e", entry_player="p", acting_player="q")
    lobby.check_still_registering(table_id="t", table_name="T", status="registering")
    for status in ("filled", "running", "finished"):
        with pytest.raises(lobby.TableAlreadyFilled):
            lobby.check_still_registering(table_id="t", table_name="T", status=status)


def test_a_fill_owes_every_post_then_rake_and_net_per_entry() -> None:
    ops = lobby.buy_in_settlement(
        [("e1", "buyin-e1"), ("e2", "buyin-e2")], buy_in_cents=100, rake_cents=7
    )
    assert [(o.seq, o.kind, o.transfer_id, o.amount_cents) for o in ops] == [
        (1, lobby.OpKind.POST, "buyin-e1", 0),
        (2, lobby.OpKind.POST, "buyin-e2", 0),
        (3, lobby.OpKind.MOVE, "rake-e1", 7),
        (4, lobby.OpKind.MOVE, "net-e1", 93),
        (5, lobby.OpKind.MOVE, "rake-e2", 7),
        (6, lobby.OpKind.MOVE, "net-e2", 93),
    ]
    assert ops[2].target is lobby.Account.RAKE and ops[3].target is lobby.Account.PRIZE_RESERVE
    # A rake-free tier owes no zero move.
    free = lobby.buy_in_settlement([("e1", "buyin-e1")], buy_in_cents=100, rake_cents=0)
    assert [o.transfer_id for o in free] == ["buyin-e1", "net-e1"]
    void = lobby.withdrawal("e9")
    assert (void.kind, void.transfer_id, void.op_id) == (
        lobby.OpKind.VOID,
        "buyin-e9",
        "void:buyin-e9",
    )

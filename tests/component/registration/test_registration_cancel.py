"""Security 3 of issue 11: a table whose buy-in cannot be posted is cancelled exactly once,
every buy-in is given back, watchers see CANCELLED; operators cancel stuck tables.

Real wallet and registration servers (reg_harness), SQLite databases.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from electric.registration.v1 import events_pb2, registration_pb2
from electric.wallet.v1 import wallet_pb2
from electric_clients.accounts import ESCROW, PRIZE_RESERVE, RAKE
from sqlalchemy import text

from tests.support.reg_harness import OPS, Stack, eventually, md

PLAYERS = ("c1", "c2", "c3")


async def _balances(stack: Stack, players: tuple[str, ...]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for p in players:
        b = await stack.balance(p)
        out[p] = (b.balance, b.cash, b.reserved)
    return out


async def _house(stack: Stack) -> dict[str, tuple[int, int]]:
    out = {}
    for account in (ESCROW, RAKE, PRIZE_RESERVE):
        a = await stack.account(account)
        out[account] = (a.posted, a.reserved)
    return out


def _cancelled_events(stack: Stack, table_id: str) -> list[events_pb2.TableCancelled]:
    return [
        e for e in stack.registration_events(table_id) if isinstance(e, events_pb2.TableCancelled)
    ]


def _pending_ops(stack: Stack, table_id: str) -> int:
    with stack.engine("registration").connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM registration_wallet_ops "
                    "WHERE table_id = :t AND status = 'pending'"
                ),
                {"t": table_id},
            ).scalar_one()
        )


async def _run_wallet_work(stack: Stack) -> None:
    """Let registration's background wallet work make more passes (one per second)."""
    await asyncio.sleep(2.5)


async def _void_as_operator(stack: Stack, transfer_id: str) -> None:
    await stack.wallet.VoidTransfer(
        wallet_pb2.VoidTransferRequest(transfer_id=transfer_id, reason="operator"),
        metadata=OPS,
    )


@pytest.mark.parametrize("voided_seat", [1, 2], ids=["first-buy-in-voided", "second-voided"])
async def test_unpostable_buy_in_cancels_the_table_once_and_restores_every_balance(
    stack: Stack, voided_seat: int
) -> None:
    for p in PLAYERS:
        await stack.deposit(p, 500)
    before = await _balances(stack, PLAYERS)
    house_before = await _house(stack)
    watch = stack.reg.WatchMyTables(registration_pb2.WatchMyTablesRequest(), metadata=md("c3"))
    await asyncio.wait_for(watch.read(), 5)
    first = await stack.register("c1")
    table_id = first.entries[0].table_id
    second = await stack.register("c2")
    assert second.entries[0].table_id == table_id
    voided = (first, second)[voided_seat - 1].entries[0]
    await _void_as_operator(stack, voided.wallet_transfer_id)
    # The third registration fills the table: the voided buy-in cannot be posted.
    third = await stack.register("c3")
    assert third.entries[0].table_id == table_id

    async def cancelled_snapshot() -> registration_pb2.MyTable | None:
        snap = await asyncio.wait_for(watch.read(), 5)
        mine = [t for t in snap.tables if t.table_id == table_id]
        if mine and mine[0].status == registration_pb2.TABLE_STATUS_CANCELLED:
            return mine[0]
        return None

    try:
        shown = await eventually(cancelled_snapshot)
    finally:
        watch.cancel()
    assert "could not be posted" in shown.cancel_reason
    assert shown.status_text == "Cancelled"
    assert [e.status for e in shown.my_entries] == [registration_pb2.ENTRY_STATUS_CANCELLED]

    async def restored() -> bool:
        return (
            await _balances(stack, PLAYERS) == before
            and await _house(stack) == house_before
            and _pending_ops(stack, table_id) == 0
        )

    await eventually(restored)
    await _run_wallet_work(stack)  # more passes change nothing
    [event] = _cancelled_events(stack, table_id)
    assert event.reason == events_pb2.TABLE_CANCEL_REASON_BUY_IN_FAILED
    assert event.previous_status == "filled"
    assert sorted(e.player_id for e in event.entries) == sorted(PLAYERS)
    assert voided.wallet_transfer_id in event.detail
    assert not any(
        type(e).__name__ == "TournamentStarted" for e in stack.registration_events(table_id)
    )
    assert await _balances(stack, PLAYERS) == before
    # A posted buy-in was refunded (not voided) when the failure came after it.
    refund = "refund-" + first.entries[0].entry_id
    if voided_seat == 2:
        t = await stack.transfer(refund)
        assert t.posted_amount == 100
    else:
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stack.transfer(refund)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    # Nobody can unregister from it; My Tables lists it as cancelled, not running.
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u", table_id=table_id),
            metadata=md("c2"),
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cancelled" in (err.value.details() or "")
    assert await stack.my_tables("c1") == []
    [listed] = await stack.my_tables("c1", include_finished=True)
    assert listed.status == registration_pb2.TABLE_STATUS_CANCELLED
    # The operator's CancelTable on it is a no-op.
    again = await stack.reg.CancelTable(
        registration_pb2.CancelTableRequest(table_id=table_id, reason="again"), metadata=OPS
    )
    assert (again.cancelled_now, again.status) == (False, registration_pb2.TABLE_STATUS_CANCELLED)
    assert len(_cancelled_events(stack, table_id)) == 1
    # The players can play on: the tier still has an open table.
    fresh = await stack.register("c1")
    assert fresh.entries[0].table_id != table_id


async def test_operator_cancels_a_registering_table_idempotently(stack: Stack) -> None:
    await stack.deposit("k1", 300)
    before = await _balances(stack, ("k1",))
    r = await stack.register("k1")
    table_id = r.entries[0].table_id
    assert (await stack.balance("k1")).reserved == 100
    for who in (md("k1"), md("aud", "auditor"), md("svc", "service")):
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await stack.reg.CancelTable(
                registration_pb2.CancelTableRequest(table_id=table_id), metadata=who
            )
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    done = await stack.reg.CancelTable(
        registration_pb2.CancelTableRequest(table_id=table_id, reason="maintenance"),
        metadata=OPS,
    )
    assert done.cancelled_now and done.reason == "maintenance"
    await eventually(lambda: _async(_balances(stack, ("k1",)), before))
    [event] = _cancelled_events(stack, table_id)
    assert event.reason == events_pb2.TABLE_CANCEL_REASON_OPERATOR
    assert (event.previous_status, event.cancelled_by) == ("registering", "ops")
    again = await stack.reg.CancelTable(
        registration_pb2.CancelTableRequest(table_id=table_id), metadata=OPS
    )
    assert not again.cancelled_now and again.reason == "maintenance"
    assert len(_cancelled_events(stack, table_id)) == 1
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stack.reg.CancelTable(
            registration_pb2.CancelTableRequest(table_id="no-such-table"), metadata=OPS
        )
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_started_table_cannot_be_cancelled(stack: Stack) -> None:
    for p in ("s1", "s2", "s3"):
        await stack.deposit(p, 300)
        r = await stack.register(p)
    table_id = r.entries[0].table_id
    await stack.tournament_started(table_id)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.reg.CancelTable(
            registration_pb2.CancelTableRequest(table_id=table_id), metadata=OPS
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _cancelled_events(stack, table_id) == []


async def _async(value: object, expected: object) -> bool:
    return await value == expected  # type: ignore[misc]

"""Registration end to end over real gRPC (SQLite): Register with N entries, Unregister before
and after the fill, the fill itself (multiplier reveal, buy-ins posted: rake and net), the
events it publishes, and the wallet's view of every step."""

from __future__ import annotations

import asyncio
import hashlib

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2
from electric.wallet.v1 import ledger_pb2
from electric_clients.errors import error_detail
from electric_domain.tournament import default_config, verify_multiplier
from electric_domain.tournament.prizes import place_amounts
from electric_eventlog import EventStore

from tests.support.reg_harness import Stack, eventually, md

BUY_IN, RAKE = 100, 7


def events_of(stack: Stack, table_id: str) -> list[object]:
    engine = stack.engine("registration")
    store = EventStore(engine, producer="registration")
    with engine.connect() as conn:
        return [store.decode(e) for e in store.read_stream(conn, f"registration-table-{table_id}")]


async def test_three_entries_unregister_one_then_refused_after_fill(stack: Stack) -> None:
    await stack.deposit("alice", 1_000)
    reg = await stack.register("alice", entries=3)
    entries = list(reg.entries)
    assert len(entries) == 3 and not reg.replayed
    assert len({e.table_id for e in entries}) == 3, "one player never sits twice at a table"
    assert all(e.status == registration_pb2.ENTRY_STATUS_RESERVED for e in entries)
    bal = await stack.balance("alice")
    assert (bal.cash, bal.reserved) == (700, 300)
    for e in entries:
        t = await stack.transfer(e.wallet_transfer_id)
        assert t.state == ledger_pb2.TRANSFER_STATE_PENDING
        assert t.spec.amount == BUY_IN and t.spec.credit_account_id == "house:tournament_escrow"
    mine = await stack.my_tables("alice")
    assert len(mine) == 3
    assert all(t.status == registration_pb2.TABLE_STATUS_REGISTERING for t in mine)
    assert all(t.status_text.startswith("Waiting ") for t in mine)
    assert all(t.min_prize_pool.cents == 200 and t.max_prize_pool.cents == 1_000_000 for t in mine)
    assert all(t.multiplier_seed_commitment and not t.multiplier_seed for t in mine)

    # Unregister the first entry before its table fills: the reservation is voided.
    gone = entries[0]
    out = await stack.reg.Unregister(
        registration_pb2.UnregisterRequest(request_id="u1", entry_id=gone.entry_id),
        metadata=md("alice"),
    )
    assert out.entry.status == registration_pb2.ENTRY_STATUS_UNREGISTERED
    voided = await eventually(
        lambda: _state_is(stack, gone.wallet_transfer_id, ledger_pb2.TRANSFER_STATE_VOIDED)
    )
    assert voided.posted_amount == 0
    bal = await stack.balance("alice")
    assert (bal.cash, bal.reserved) == (800, 200)
    assert {t.table_id for t in await stack.my_tables("alice")} == {e.table_id for e in entries[1:]}
    kinds = [type(e).__name__ for e in events_of(stack, gone.table_id)]
    assert kinds[-1] == "PlayerUnregistered"
    # Unregistering again is idempotent.
    again = await stack.reg.Unregister(
        registration_pb2.UnregisterRequest(request_id="u1", entry_id=gone.entry_id),
        metadata=md("alice"),
    )
    assert again.entry.status == registration_pb2.ENTRY_STATUS_UNREGISTERED

    # Bob and Carol fill the tables Alice still sits at (most-filled table first).
    for p in ("bob", "carol"):
        await stack.deposit(p, 500)
        r = await stack.register(p, entries=2)
        assert {e.table_id for e in r.entries} == {e.table_id for e in entries[1:]}
    kept = entries[1]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u2", entry_id=kept.entry_id),
            metadata=md("alice"),
        )
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "third player registered" in (info.value.details() or "")
    # By table id too (the bot runner's way): same refusal.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u3", table_id=kept.table_id),
            metadata=md("alice"),
        )
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    posted = await eventually(
        lambda: _state_is(stack, kept.wallet_transfer_id, ledger_pb2.TRANSFER_STATE_POSTED)
    )
    assert posted.posted_amount == BUY_IN
    for e in entries[1:]:  # both tables filled: each buy-in is posted (owed work, in any order)
        await eventually(
            lambda e=e: _state_is(stack, e.wallet_transfer_id, ledger_pb2.TRANSFER_STATE_POSTED)
        )
    bal = await stack.balance("alice")
    assert (bal.cash, bal.reserved) == (800, 0)
    # The voided entry's money never moved.
    assert (await stack.transfer(gone.wallet_transfer_id)).state == (
        ledger_pb2.TRANSFER_STATE_VOIDED
    )


async def _state_is(stack: Stack, transfer_id: str, state: int) -> object:
    t = await stack.transfer(transfer_id)
    return t if t.state == state else None


async def test_fill_posts_rake_and_net_and_starts_once(stack: Stack) -> None:
    players = ["p1", "p2", "p3"]
    for p in players:
        await stack.deposit(p, 500)
    first = await stack.register("p1")
    table_id = first.entries[0].table_id
    for p in players[1:]:
        r = await stack.register(p)
        assert r.entries[0].table_id == table_id

    async def started() -> list[object]:
        evs = events_of(stack, table_id)
        return [e for e in evs if isinstance(e, reg_events.TournamentStarted)]

    [ts] = await eventually(started)
    evs = events_of(stack, table_id)
    names = [type(e).__name__ for e in evs]
    assert names == [
        "TableOpened",
        "PlayerRegistered",
        "PlayerRegistered",
        "PlayerRegistered",
        "TableFilled",
        "TournamentStarted",
    ]
    opened, filled = evs[0], evs[4]
    assert isinstance(opened, reg_events.TableOpened)
    assert isinstance(filled, reg_events.TableFilled)
    assert isinstance(ts, reg_events.TournamentStarted)
    cfg = default_config()
    # Commitment published at open, seed revealed at fill: verifiable by anyone.
    assert hashlib.sha256(bytes.fromhex(filled.multiplier_seed)).hexdigest() == (
        opened.multiplier_seed_commitment
    )
    assert verify_multiplier(
        opened.multiplier_seed_commitment, filled.multiplier_seed, filled.multiplier, cfg.pay_table
    )
    m = filled.multiplier
    assert ts.multiplier == m and ts.prize_pool.cents == m * BUY_IN == filled.prize_pool.cents
    shares = cfg.pay_table.entry(m).shares
    assert [p.amount.cents for p in ts.payouts] == list(
        place_amounts(m * BUY_IN, shares, 3)[: len(shares)]
    )
    assert sum(p.amount.cents for p in ts.payouts) == ts.prize_pool.cents
    assert len(ts.levels) == cfg.levels_for(m)
    assert [lv.big_blind for lv in ts.levels] == [
        lv.big_blind for lv in cfg.blind_levels[: cfg.levels_for(m)]
    ]
    assert ts.starting_stack == 500 and ts.multiplier_seed == filled.multiplier_seed
    assert [s.player_id for s in ts.seats] == players
    assert ts.first_button_seat in (1, 2, 3)
    assert ts.buy_in.cents == BUY_IN and ts.rake.cents == RAKE
    # Money: 3 buy-ins posted; 7% to the house rake, the net to the prize reserve.
    for r_entry in [first.entries[0]]:
        t = await stack.transfer(r_entry.wallet_transfer_id)
        assert t.state == ledger_pb2.TRANSFER_STATE_POSTED
    assert (await stack.account("house:rake")).posted == 3 * RAKE
    assert (await stack.account("house:prize_reserve")).posted == 3 * (BUY_IN - RAKE)
    assert (await stack.account("house:tournament_escrow")).posted == 0
    for p in players:
        b = await stack.balance(p)
        assert (b.cash, b.reserved) == (400, 0)
    # My Tables after the fill: exact prize pool, payouts, running.
    [mt] = await stack.my_tables("p2")
    assert mt.status == registration_pb2.TABLE_STATUS_RUNNING
    assert mt.prize_pool.cents == m * BUY_IN == mt.min_prize_pool.cents == mt.max_prize_pool.cents
    assert mt.positions_paid == len(shares) and mt.multiplier == m
    assert mt.multiplier_seed == filled.multiplier_seed
    # The observed draw is counted for monitoring against the pay table.
    registry = stack.hosts["registration"].metrics.registry
    assert (
        registry.get_sample_value(
            "electric_registration_tables_filled_total",
            {"tier": "electric-100", "multiplier": str(m)},
        )
        == 1
    )
    assert registry.get_sample_value("electric_registration_wallet_ops_pending") == 0
    # A new open table replaced the filled one in the lobby.
    lobby = await stack.reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=md("p1"))
    tier = next(t for t in lobby.tiers if t.tier_id == "electric-100")
    assert tier.open_tables >= 1 and tier.players_waiting == 0


async def test_register_edge_cases(stack: Stack) -> None:
    await stack.deposit("dora", 250)
    for n in (0, 11, -1):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.register("dora", entries=n)
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        bad = errors_pb2.BadRequest()
        assert error_detail(info.value, bad) and bad.field_violations[0].field == "entries"
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.register("dora", tier="electric-999")
    assert info.value.code() is grpc.StatusCode.NOT_FOUND
    res = errors_pb2.ResourceInfo()
    assert error_detail(info.value, res) and res.resource_id == "electric-999"
    # 3 × $1 with $2.50: refused with details, nothing reserved.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.register("dora", entries=3, request_id="poor-1")
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    short = errors_pb2.InsufficientFunds()
    assert error_detail(info.value, short)
    assert (short.available.cents, short.required.cents) == (250, 300)
    b = await stack.balance("dora")
    assert (b.cash, b.reserved) == (250, 0)
    assert await stack.my_tables("dora") == []
    # A player without any wallet: refused the same way.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.register("nobody")
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    # Registering someone else.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Register(
            registration_pb2.RegisterRequest(
                request_id="x", tier_id="electric-100", entries=1, player_id="dora"
            ),
            metadata=md("mallory"),
        )
    assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    # Retried Register: same entries, one reservation each.
    r1 = await stack.register("dora", entries=2, request_id="req-42")
    r2 = await stack.register("dora", entries=2, request_id="req-42")
    assert [e.entry_id for e in r1.entries] == [e.entry_id for e in r2.entries]
    assert not r1.replayed and r2.replayed
    b = await stack.balance("dora")
    assert (b.cash, b.reserved) == (50, 200)
    # The same request id for something else.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.register("dora", entries=1, request_id="req-42")
    assert info.value.code() is grpc.StatusCode.ALREADY_EXISTS
    # The failed request id may be retried once the money is there (a new attempt).
    await stack.deposit("dora", 250)
    r3 = await stack.register("dora", entries=3, request_id="poor-1")
    assert len(r3.entries) == 3 and not r3.replayed
    # An unknown entry / someone else's entry.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u", entry_id="nope"),
            metadata=md("dora"),
        )
    assert info.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u", entry_id=r3.entries[0].entry_id),
            metadata=md("mallory"),
        )
    assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Register(
            registration_pb2.RegisterRequest(tier_id="electric-100", entries=1),
            metadata=md("dora"),
        )
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_concurrent_retries_of_one_request_reserve_once(stack: Stack) -> None:
    """A client retrying while its first call is still in flight (exactly enough money for
    one request): both answers carry the same entries, one reservation each."""
    await stack.deposit("fay", 200)
    calls = [stack.register("fay", entries=2, request_id="same") for _ in range(3)]
    results = await asyncio.gather(*calls)
    ids = {tuple(e.entry_id for e in r.entries) for r in results}
    assert len(ids) == 1 and len(next(iter(ids))) == 2
    b = await stack.balance("fay")
    assert (b.cash, b.reserved) == (0, 200)
    assert len(await stack.my_tables("fay")) == 2

"""THB rounds through the table service's CasinoTableService on a real gRPC server, with a
real wallet service in-process: bets reserved before they are placed, posted or voided at
settlement, VoidRound under concurrent retries, resumable rounds (AckResult)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2
from electric_clients.errors import error_detail
from electric_table.casino import repo
from electric_table.casino.thb.handlers import AUTO_VOID_REASON

from tests.support import wallet_kit
from tests.support.casino_setup import registration_event, until_seated
from tests.support.table_casino_kit import OPERATOR, PENDING, POSTED, VOIDED, md, thb_host
from tests.support.table_casino_kit import CasinoEnv as Env

ANTE = 500


@contextlib.asynccontextmanager
async def running(tmp_path: Path) -> AsyncIterator[Env]:
    async with (
        wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet,
        thb_host(tmp_path, wallet) as env,
    ):
        yield env


async def seat(env: Env, player: str, table_id: str, session: str = "s1") -> None:
    await registration_event(
        reg_casino.CasinoSeatTaken(
            table_id=table_id, game="thb", player_id=player, seat=1, session_id=session
        ),
        table_id,
    )
    await until_seated(env.handlers.engine, table_id, player)


TABLES = {"alice": "thb-1", "bob": "thb-2"}


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running(tmp_path) as e:
        await wallet_kit.deposit(e.wallet, "alice", 10_000)
        for player, table in TABLES.items():
            await seat(e, player, table)
        yield e


async def deal(env: Env, player: str = "alice", rid: str = "d1", ante: int = ANTE) -> Any:
    resp = await env.casino.Deal(
        casino_pb2.DealRequest(request_id=rid, table_id=TABLES[player], ante_cents=ante),
        metadata=md(player),
    )
    return resp.round


async def decide(env: Env, round_id: str, decision: int, rid: str) -> Any:
    resp = await env.casino.Decide(
        casino_pb2.DecideRequest(request_id=rid, round_id=round_id, decision=decision),
        metadata=md("alice"),
    )
    return resp.round


async def settled_transfers(env: Env, view: Any) -> None:
    """Every result's reservation ends posted (win/lose) or voided (push/refund)."""
    for r in view.results:
        t = await env.transfer(r.bet_id)
        want = POSTED if r.outcome in ("win", "lose") else VOIDED
        assert t.state == want, (r, t.state)


async def test_thb_round_end_to_end(env: Env) -> None:
    view = await deal(env)
    assert (view.status, view.phase, list(view.legal)) == ("open", "preflop", ["fold", "call_flop"])
    assert len(view.player_cards) == 2 and not view.dealer_cards
    ante = await env.transfer(f"{view.round_id}:ante")
    assert ante.state == PENDING and ante.spec.amount == ANTE
    assert (await wallet_kit.balance(env.wallet, "alice")).reserved == ANTE

    view = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_CALL_FLOP, "c1")
    assert view.phase == "turn" and len(view.board) == 3
    view = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_BET, "c2")
    # a retried decision answers as the first time and places nothing twice
    again = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_BET, "c2")
    assert again.version == view.version
    view = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_CHECK, "c3")
    assert view.status == "settled" and view.phase == "over" and len(view.dealer_cards) == 2
    assert {b.spot: b.amount_cents for b in view.bets} == {"ante": 500, "flop": 1000, "turn": 500}
    await settled_transfers(env, view)
    posted = sum(r.stake_cents for r in view.results if r.outcome in ("win", "lose"))
    bal = await wallet_kit.balance(env.wallet, "alice")
    assert (bal.balance, bal.reserved) == (10_000 - posted, 0)

    kinds = env.kinds(view.round_id)
    assert kinds[0] == "CasinoRoundStarted" and kinds.count("CasinoBetPlaced") == 3
    assert kinds[-2:] == ["CasinoRoundSettled", "CasinoDeckRevealed"]

    # resumable: the unseen result is unfinished until acknowledged
    listed = await env.casino.ListUnfinishedRounds(
        casino_pb2.ListUnfinishedRoundsRequest(), metadata=md("alice")
    )
    assert [r.round_id for r in listed.rounds] == [view.round_id]
    thb_ = {"game": "thb"}
    assert env.metric("electric_table_casino_rounds_started_total", **thb_) == 1
    assert env.metric("electric_table_casino_rounds_settled_total", **thb_) == 1
    assert env.metric("electric_table_casino_handle_cents_total", **thb_) == 2000
    assert env.metric("electric_table_casino_unfinished_rounds") == 1
    for _ in range(2):  # idempotent
        acked = await env.casino.AckResult(
            casino_pb2.AckResultRequest(round_id=view.round_id), metadata=md("alice")
        )
        assert acked.round.acknowledged
    listed = await env.casino.ListUnfinishedRounds(
        casino_pb2.ListUnfinishedRoundsRequest(), metadata=md("alice")
    )
    assert not listed.rounds
    assert env.kinds(view.round_id).count("CasinoResultAcknowledged") == 1
    assert env.metric("electric_table_casino_unfinished_rounds") == 0


async def test_fold_loses_the_ante_and_a_new_game_follows(env: Env) -> None:
    view = await deal(env)
    with pytest.raises(grpc.aio.AioRpcError) as busy:
        await deal(env, rid="d2")  # the open round comes first
    assert busy.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as wrong:
        await decide(env, view.round_id, casino_pb2.CASINO_DECISION_CHECK, "x1")
    assert wrong.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    view = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_FOLD, "f1")
    assert view.status == "settled" and [r.outcome for r in view.results] == ["lose"]
    assert (await env.transfer(f"{view.round_id}:ante")).state == POSTED
    nxt = await deal(env, rid="d3")
    assert nxt.round_id != view.round_id and nxt.game_number != view.game_number
    # the same Deal again is the same round, reserved once
    assert (await deal(env, rid="d3")).round_id == nxt.round_id
    assert (await wallet_kit.balance(env.wallet, "alice")).reserved == ANTE


async def test_insufficient_funds_changes_nothing(env: Env) -> None:
    await wallet_kit.deposit(env.wallet, "bob", 300)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await deal(env, player="bob", ante=500)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = errors_pb2.InsufficientFunds()
    assert error_detail(info.value, detail) and detail.required.cents == 500
    listed = await env.casino.ListUnfinishedRounds(
        casino_pb2.ListUnfinishedRoundsRequest(), metadata=md("bob")
    )
    assert not listed.rounds
    bal = await wallet_kit.balance(env.wallet, "bob")
    assert (bal.balance, bal.reserved) == (300, 0)
    # a refused flop bet leaves the round as it was (and no intent for the auto-void rule)
    view = await deal(env, player="bob", rid="b-ok", ante=200)
    with pytest.raises(grpc.aio.AioRpcError) as short:
        await env.casino.Decide(
            casino_pb2.DecideRequest(
                request_id="b-flop",
                round_id=view.round_id,
                decision=casino_pb2.CASINO_DECISION_CALL_FLOP,
            ),
            metadata=md("bob"),
        )
    assert short.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (await env.handlers.recover())["auto_voided"] == 0
    got = await env.casino.GetRound(
        casino_pb2.GetRoundRequest(round_id=view.round_id), metadata=md("bob")
    )
    assert got.round.status == "open" and got.round.version == view.version
    folded = await env.casino.Decide(
        casino_pb2.DecideRequest(
            request_id="b-fold", round_id=view.round_id, decision=casino_pb2.CASINO_DECISION_FOLD
        ),
        metadata=md("bob"),
    )
    assert folded.round.status == "settled"
    assert (await wallet_kit.balance(env.wallet, "bob")).balance == 100
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await deal(env, player="bob", rid="d9", ante=5)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_void_round_under_20_concurrent_retries_refunds_once(env: Env) -> None:
    view = await deal(env)
    view = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_CALL_FLOP, "c1")
    assert (await wallet_kit.balance(env.wallet, "alice")).reserved == 3 * ANTE
    with pytest.raises(grpc.aio.AioRpcError) as denied:
        await env.casino.VoidRound(
            casino_pb2.VoidRoundRequest(request_id="v", round_id=view.round_id, reason="x"),
            metadata=md("alice"),
        )
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED

    async def void(i: int) -> Any:
        return await env.casino.VoidRound(
            casino_pb2.VoidRoundRequest(
                request_id=f"void-{i % 3}", round_id=view.round_id, reason="dealer shoe fault"
            ),
            metadata=OPERATOR,
        )

    answers = await asyncio.gather(*(void(i) for i in range(20)))
    assert {a.round.status for a in answers} == {"voided"}
    assert answers[0].round.void_reason == "dealer shoe fault"
    assert {r.outcome for r in answers[0].round.results} == {"refund"}
    assert env.kinds(view.round_id).count("CasinoRoundVoided") == 1
    assert env.metric("electric_table_casino_rounds_voided_total", game="thb") == 1
    for spot in ("ante", "flop"):
        assert (await env.transfer(f"{view.round_id}:{spot}")).state == VOIDED
    bal = await wallet_kit.balance(env.wallet, "alice")
    assert (bal.balance, bal.reserved) == (10_000, 0)
    # a void of a settled round is refused
    done = await deal(env, rid="d2")
    await decide(env, done.round_id, casino_pb2.CASINO_DECISION_FOLD, "f2")
    with pytest.raises(grpc.aio.AioRpcError) as over:
        await env.casino.VoidRound(
            casino_pb2.VoidRoundRequest(request_id="v9", round_id=done.round_id, reason="x"),
            metadata=OPERATOR,
        )
    assert over.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_restart_resumes_open_rounds_and_auto_voids_an_orphan_bet(tmp_path: Path) -> None:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet:
        await wallet_kit.deposit(wallet, "alice", 10_000)
        await wallet_kit.deposit(wallet, "bob", 10_000)
        async with thb_host(tmp_path, wallet) as env:
            for player, table in TABLES.items():
                await seat(env, player, table)
            resumed = await deal(env, "bob", rid="b1")
            resumed = (
                await env.casino.Decide(
                    casino_pb2.DecideRequest(
                        request_id="b2",
                        round_id=resumed.round_id,
                        decision=casino_pb2.CASINO_DECISION_CALL_FLOP,
                    ),
                    metadata=md("bob"),
                )
            ).round
            broken = await deal(env)
            # the crash: alice's flop bet was reserved, its BetPlaced never appended
            orphan = repo.BetRow(
                f"{broken.round_id}:flop", broken.round_id, "alice", "flop", 1000, "", False
            )
            with env.handlers.engine.begin() as conn:
                repo.record_intent(conn, orphan)
            await env.handlers.wallet.reserve(
                orphan.bet_id, "alice", 1000, to_account="house:casino_bankroll"
            )
        async with thb_host(tmp_path, wallet) as env:  # the restart
            got = await env.casino.GetRound(
                casino_pb2.GetRoundRequest(round_id=broken.round_id), metadata=md("alice")
            )
            assert got.round.status == "voided" and got.round.void_reason == AUTO_VOID_REASON
            for spot in ("ante", "flop"):
                assert (await env.transfer(f"{broken.round_id}:{spot}")).state == VOIDED
            bal = await wallet_kit.balance(wallet, "alice")
            assert (bal.balance, bal.reserved) == (10_000, 0)
            # bob's round replayed from its stream and goes on to settle
            view = (
                await env.casino.GetRound(
                    casino_pb2.GetRoundRequest(round_id=resumed.round_id), metadata=md("bob")
                )
            ).round
            assert view == resumed
            for i in range(2):
                view = (
                    await env.casino.Decide(
                        casino_pb2.DecideRequest(
                            request_id=f"b-check-{i}",
                            round_id=view.round_id,
                            decision=casino_pb2.CASINO_DECISION_CHECK,
                        ),
                        metadata=md("bob"),
                    )
                ).round
            assert view.status == "settled"
            await settled_transfers(env, view)


async def test_only_a_seated_player_deals_and_a_released_seat_keeps_the_round(env: Env) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.casino.Deal(
            casino_pb2.DealRequest(request_id="x", table_id="thb-1", ante_cents=ANTE),
            metadata=md("bob"),
        )
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    view = await deal(env)
    await registration_event(
        reg_casino.CasinoSeatReleased(
            table_id="thb-1",
            player_id="alice",
            session_id="s1",
            reason=reg_casino.CASINO_SEAT_RELEASE_REASON_IDLE_EXPIRED,
            game="thb",
            seat=1,
        ),
        "thb-1",
    )
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        with env.handlers.engine.connect() as conn:
            if not repo.seated(conn, "thb-1", "alice"):
                break
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    # the unfinished round resumes and settles; a new Deal needs a seat again
    listed = await env.casino.ListUnfinishedRounds(
        casino_pb2.ListUnfinishedRoundsRequest(), metadata=md("alice")
    )
    assert [r.round_id for r in listed.rounds] == [view.round_id]
    done = await decide(env, view.round_id, casino_pb2.CASINO_DECISION_FOLD, "f1")
    assert done.status == "settled"
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await deal(env, rid="d2")
    assert again.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_a_retry_after_the_intent_was_voided_reserves_nothing(env: Env) -> None:
    """Chaos seed 11: a Deal failed after its intent (a PostgreSQL restart), the intent was
    auto-voided while the wallet did not have the transfer ("never reserved"), then the
    client retried the same request. The retry must not reserve the bet again: nothing
    would ever resolve that reservation (it was left pending for good)."""
    from electric_table.casino.thb.handlers import round_id_for
    from electric_table.store import tables as t
    from sqlalchemy import update

    round_id = round_id_for("alice", "d-retry")
    bet_id = f"{round_id}:ante"
    with env.handlers.engine.begin() as conn:  # what the auto-void left of the first attempt
        repo.record_intent(conn, repo.BetRow(bet_id, round_id, "alice", "ante", ANTE, "", False))
        conn.execute(
            update(t.casino_bets)
            .where(t.casino_bets.c.bet_id == bet_id)
            .values(owed_op=repo.VOID, op_done=True)
        )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await deal(env, rid="d-retry")
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await env.transfer(bet_id)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND  # nothing reserved
    assert (await wallet_kit.balance(env.wallet, "alice")).reserved == 0
    view = await deal(env, rid="d-new")  # a new request deals
    assert view.status == "open" and (await env.transfer(view.bets[0].bet_id)).state == PENDING

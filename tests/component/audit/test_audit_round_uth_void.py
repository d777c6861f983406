"""electric-audit round over a voided live UTH round: a real table host (SQLite) and wallet;
alice is seated when the round opens, bob takes his seat with his first bet; both bet, alice
plays 4x, then an operator voids the round (VoidRound). ``round ID`` replays it — the Void
included — and passes: the seats are the domain's (bob's joined with his bet), every
reservation (Ante, Blind, Trips, the Play bet) is voided exactly once and nothing is posted or
paid. A reservation whose void is deleted from a copy of the wallet database fails ``bets``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2 as A
from electric_audit.cli import main
from electric_audit.sources import read_store

from tests.support import wallet_kit
from tests.support.casino_setup import registration_event, reservations_closed, until_seated
from tests.support.table_casino_kit import OPERATOR, TABLE, betting, seat, table_host, windows

pytestmark = pytest.mark.timeout(180)

ANTE, TRIPS = A.CASINO_BET_ACTION_ANTE, A.CASINO_BET_ACTION_TRIPS


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


def _audit(
    capsys: pytest.CaptureFixture[str], rid: str, *urls: str
) -> tuple[int, dict[str, Any], list[str]]:
    stores = [a for url in urls for a in ("--store", url)]
    code = main(["round", rid, *stores, "--json"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    return (
        code,
        {x["check"]: x for x in lines if "check" in x},
        [f"{x['fact']} {x['text']}" for x in lines if "fact" in x],
    )


async def _voided_round(tmp_path: Path, wallet: wallet_kit.Env) -> tuple[str, str]:
    """Play and void one round; (round id, table store URL)."""
    for p in ("alice", "bob"):
        await wallet_kit.deposit(wallet, p, 10_000)
    async with table_host(tmp_path, wallet, windows(3000, 300, 10_000, pause=300)) as env:
        await seat(env, ["alice"])
        v = await env.wait("alice", lambda v: betting(v) and v.seated == 1)
        round_id = v.round_id
        # bob sits down (registration) after the round opened: his first bet seats him in it
        await registration_event(
            reg_casino.CasinoSeatTaken(
                table_id=TABLE, game="uth", player_id="bob", seat=2, session_id="s-bob"
            ),
            TABLE,
        )
        await until_seated(env.handlers.engine, TABLE, "bob")
        await env.bet("alice", ANTE, 500)
        await env.bet("alice", TRIPS, 200)
        assert (await env.bet("bob", ANTE, 1000)).round_id == round_id
        await env.wait("alice", lambda v: v.phase == "preflop")
        await env.decide("alice", round_id, A.CASINO_DECISION_PLAY_4X)
        await env.casino.VoidRound(
            A.VoidRoundRequest(request_id="void-1", round_id=round_id, reason="card reader fault"),
            metadata=OPERATOR,
        )
        wallet_url = f"sqlite:///{tmp_path}/wallet.db"
        for _ in range(1500):  # the table voids the reservations just after the round's end
            if reservations_closed(wallet_url):
                break
            await asyncio.sleep(0.02)
        url = env.handlers.engine.url.render_as_string(hide_password=False)
    return round_id, url


async def test_a_voided_uth_round_is_audited(
    tmp_path: Path, wallet: wallet_kit.Env, capsys: pytest.CaptureFixture[str]
) -> None:
    rid, table_url = await _voided_round(tmp_path, wallet)
    wallet_url = f"sqlite:///{tmp_path}/wallet.db"
    code, checks, facts = _audit(capsys, rid, table_url, wallet_url)
    assert code == 0, checks
    assert any(f.startswith("voided voided (card reader fault)") for f in facts), facts
    assert "seat seat 0 alice (seated at the open)" in facts
    assert "seat seat 1 bob (joined with their first bet)" in facts
    assert checks["domain"]["checked"] >= 10 and checks["seats"]["checked"] >= 8
    assert checks["settlement"]["checked"] == 1
    # alice: ante, blind, trips, play; bob: ante, blind — each reservation voided once
    assert checks["bets"]["checked"] == 6 and checks["bets"]["failed"] == 0
    wallet_events = read_store(wallet_url).events
    bets = {x.envelope.stream_id for x in wallet_events if rid in x.envelope.stream_id}
    assert len(bets) == 6
    kinds = [
        x.envelope.event_type.rsplit(".", 1)[-1]
        for x in wallet_events
        if x.envelope.stream_id in bets
    ]
    assert kinds.count("TransferVoided") == 6 and "TransferPosted" not in kinds  # nothing paid
    assert not any("cwin" in x.envelope.stream_id for x in wallet_events)

    # a reservation left standing (its void deleted from a copy of the wallet): `bets` fails
    copy = tmp_path / "wallet-copy.db"
    with (  # the backup API: the live wallet's file may still have its changes in its WAL
        contextlib.closing(sqlite3.connect(tmp_path / "wallet.db")) as src,
        contextlib.closing(sqlite3.connect(copy)) as dst,
    ):
        src.backup(dst)
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        gone = conn.execute(
            "DELETE FROM eventlog_events WHERE stream_id = ? AND event_type LIKE ?",
            (f"wallet-transfer-{rid}:0:play", "%TransferVoided"),
        ).rowcount
    assert gone == 1
    code, checks, _ = _audit(capsys, rid, table_url, f"sqlite:///{copy}")
    assert code == 1
    assert "posted 0, voided 0 times, owed one void" in checks["bets"]["first_failure"]
    assert f"bet {rid}:0:play (refund)" in checks["bets"]["first_failure"]

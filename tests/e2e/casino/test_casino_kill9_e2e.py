"""Issue 13: kill -9 of the table service mid-round, with casino bots playing over gRPC.

The four services run as separate processes on PostgreSQL and Kafka. THB bots play; once
rounds are under way the table service is killed with SIGKILL while bots have rounds open
(listed through the operator's ``ListUnfinishedRounds`` right before the kill), then
started again. The bots retry with the same request ids and play on. Afterwards, from the
topics alone: every round that was open at the kill either resumed and settled or was voided
and refunded — never both, each once — and nothing was lost: every stake placed is resolved,
every player's balance = deposits − bets + wins, the ledger sums to zero, the bankroll moved
by −Σ player net, every win was credited once.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest
from casino_e2e_facts import UTH_WINDOWS, check_money, platform_cluster, read_casino_facts
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import Targets

from tests.support.auth import ISSUER_KEY, bearer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

THB_BOTS = 10
ROUNDS = 300
UTH_BOTS = 6
UTH_ROUNDS = 8
#: THB rounds dealt before the kill (at least).
KILL_AFTER = 30


@pytest.fixture
def cluster(postgres_url: str, kafka_bootstrap: str, tmp_path: object) -> Iterator[object]:
    extra = {"ELECTRIC_LOG_LEVEL": "WARNING", **UTH_WINDOWS}
    with platform_cluster().run_cluster(
        postgres_url,
        kafka_bootstrap,
        tmp_path,  # type: ignore[arg-type]
        extra_env=extra,
    ) as c:
        yield c


async def _open_rounds(target: str, players: list[str]) -> set[str]:
    """Round ids the table lists as open for ``players`` (operator read)."""
    out: set[str] = set()
    async with grpc.aio.insecure_channel(target) as ch:
        stub = casino_pb2_grpc.CasinoTableServiceStub(ch)
        md = bearer("e2e-operator", "operator", 300)
        for player in players:
            got = await stub.ListUnfinishedRounds(
                casino_pb2.ListUnfinishedRoundsRequest(player_id=player), metadata=md, timeout=5
            )
            out |= {r.round_id for r in got.rounds if r.status == "open"}
    return out


async def _open_uth_round(target: str, player: str) -> set[str]:
    """The live UTH table's current round when it is open (the player's view)."""
    async with grpc.aio.insecure_channel(target) as ch:
        stub = casino_pb2_grpc.CasinoTableServiceStub(ch)
        got = await stub.GetCasinoTable(
            casino_pb2.GetCasinoTableRequest(table_id="uth-1"),
            metadata=bearer(player, "player", 300),
            timeout=5,
        )
    v = got.view
    deciding = v.phase in ("preflop", "flop", "river")
    return {v.round_id} if v.status == "open" and v.seats_in_play and deciding else set()


async def test_kill9_table_mid_round_resumes_or_voids_and_loses_nothing(
    cluster: object, kafka_bootstrap: str
) -> None:
    c = cluster
    t = c.target  # type: ignore[attr-defined]
    runner = CasinoRunner(
        CasinoRunnerConfig(
            targets=Targets(t("registration"), t("table"), t("wallet")),
            key=ISSUER_KEY,
            thb_bots=THB_BOTS,
            thb_rounds=ROUNDS,
            uth_bots=UTH_BOTS,
            uth_rounds=UTH_ROUNDS,
            stop_on_error=True,
            player_prefix=f"k9{uuid.uuid4().hex[:6]}",
        )
    )
    play = asyncio.create_task(runner.run())
    deadline = time.monotonic() + 180
    uth_open: set[str] = set()
    # The kill comes once KILL_AFTER THB rounds were dealt AND the live UTH round is in a
    # decision window, both looked at together: waiting for the THB rounds first let the
    # UTH bots use up their budget on a loaded machine (THB dealt slower), and then no UTH
    # round was ever open again.
    while time.monotonic() < deadline:
        assert not play.done(), runner.stats
        if runner.stats.claimed["thb"] >= KILL_AFTER and runner.assignments:
            uth_player = next(p for p, g, _ in runner.assignments if g == "uth")
            uth_open = await _open_uth_round(t("table"), uth_player)
            if uth_open:
                break
        await asyncio.sleep(0.05)
    players = [pid for pid, _, _ in runner.assignments]
    open_at_kill = await _open_rounds(t("table"), players) | uth_open
    table = c.procs["table"]  # type: ignore[attr-defined]
    table.popen.send_signal(signal.SIGKILL)
    table.popen.wait(10)
    retries_before = runner.stats.retries
    await asyncio.sleep(1.0)  # the bots see UNAVAILABLE and keep retrying meanwhile
    c.start("table")  # type: ignore[attr-defined]
    await asyncio.to_thread(c.wait_serving, 90.0)  # type: ignore[attr-defined]
    done, _ = await asyncio.wait({play}, timeout=300)
    if not done:
        runner.stop.set()
        await asyncio.wait({play}, timeout=30)
        pytest.fail(f"bots did not finish after the restart: {runner.stats}\n{table.log()}")
    stats = play.result()
    assert stats.errors == 0, stats.last_errors
    assert open_at_kill, "no round was open at the kill: it proves nothing"
    assert uth_open, "no live UTH round was open at the kill"
    assert stats.retries > retries_before, "no call saw the kill"

    deadline = time.monotonic() + 90
    while True:
        facts = await read_casino_facts(kafka_bootstrap, c.namespace)  # type: ignore[attr-defined]
        try:
            totals = check_money(facts, set(players))
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)
    resumed = open_at_kill & set(facts.settled)
    voided = open_at_kill & set(facts.voided)
    assert resumed | voided == open_at_kill and not resumed & voided
    for rid in voided:  # a voided round refunds every stake and pays nothing
        for p in facts.voided[rid][0].players:
            assert all(r.returned_cents == r.stake_cents for r in p.results)
        assert not [k for k in facts.credited if k[0] == rid]
    assert len(facts.rounds("thb")) >= ROUNDS
    print(
        f"\nkill -9 with {len(open_at_kill)} rounds open (UTH {sorted(uth_open)}): "
        f"{len(resumed)} resumed and settled, "
        f"{len(voided)} voided and refunded; {len(facts.rounds('thb'))} rounds in all, "
        f"{totals['wins']} wins credited once, bot retries {stats.retries}"
    )

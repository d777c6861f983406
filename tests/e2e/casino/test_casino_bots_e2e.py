"""Issue 13 end to end: the four services as SEPARATE processes on PostgreSQL and Kafka, casino
bots playing THB and live UTH over gRPC; then the money is checked from the topics alone
(read from offset 0, :mod:`casino_e2e_facts`).

Round counts come from the environment so CI runs a seeded shorter version and
``make e2e-casino`` the issue's numbers (5,000 THB rounds; 300 UTH rounds with 20+ players at
one live table):

* ``ELECTRIC_E2E_CASINO_THB_ROUNDS`` (CI default :data:`CI_THB_ROUNDS`),
* ``ELECTRIC_E2E_CASINO_UTH_ROUNDS`` (CI default :data:`CI_UTH_ROUNDS`),
* ``ELECTRIC_E2E_CASINO_UTH_PLAYERS`` (default 20),
* ``ELECTRIC_E2E_CASINO_UTH_BOTS`` (default: the players, a fifth more for the rounds some of
  them miss on a loaded machine, and the never-deciding bots),
* ``ELECTRIC_E2E_CASINO_UTH_GREEN_MS`` (the green light of the betting window; default the
  CI window of :data:`casino_e2e_facts.UTH_WINDOWS`),
* ``ELECTRIC_E2E_CASINO_BUDGET`` (seconds of play; default grows with the UTH rounds, which
  run on the table's clock: 6-15 s a counted round on a loaded 2-core machine; the
  full size took 36.7 min of play at load average 5-36).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest
from casino_e2e_facts import UTH_WINDOWS, check_money, platform_cluster, read_casino_facts
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import Targets

from tests.support.auth import ISSUER_KEY, bearer

CI_THB_ROUNDS = 400
CI_UTH_ROUNDS = 20
THB_ROUNDS = int(os.environ.get("ELECTRIC_E2E_CASINO_THB_ROUNDS", CI_THB_ROUNDS))
UTH_ROUNDS = int(os.environ.get("ELECTRIC_E2E_CASINO_UTH_ROUNDS", CI_UTH_ROUNDS))
UTH_PLAYERS = int(os.environ.get("ELECTRIC_E2E_CASINO_UTH_PLAYERS", 20))
THB_BOTS = 16
#: The never-deciding bots bet in one round out of this many.
NEVER_EVERY = 10
#: UTH bots: the players every round needs, a margin for a bot that misses a betting window
#: (a round counts only with UTH_PLAYERS in it), and the never-deciding ones (1 in 8).
UTH_BOTS = int(
    os.environ.get(
        "ELECTRIC_E2E_CASINO_UTH_BOTS",
        UTH_PLAYERS + UTH_PLAYERS // 5 + (UTH_PLAYERS + 6) // 7,
    )
)
#: Wall-clock budget of the play (a stuck run fails instead of hanging).
PLAY_BUDGET_SECONDS = float(
    os.environ.get("ELECTRIC_E2E_CASINO_BUDGET", max(1500, 300 + 15 * UTH_ROUNDS))
)
#: The table's live-window knobs, with the green light overridable for the long run.
WINDOWS = dict(UTH_WINDOWS)
if os.environ.get("ELECTRIC_E2E_CASINO_UTH_GREEN_MS"):
    WINDOWS["ELECTRIC_TABLE_UTH_GREEN_MS"] = os.environ["ELECTRIC_E2E_CASINO_UTH_GREEN_MS"]

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(int(PLAY_BUDGET_SECONDS) + 600)]


@pytest.fixture(scope="module")
def cluster(
    postgres_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    tmp = tmp_path_factory.mktemp("casino")
    extra = {"ELECTRIC_LOG_LEVEL": "WARNING", **WINDOWS}
    with platform_cluster().run_cluster(postgres_url, kafka_bootstrap, tmp, extra_env=extra) as c:
        yield c


def _targets(cluster: object) -> Targets:
    t = cluster.target  # type: ignore[attr-defined]
    return Targets(registration=t("registration"), table=t("table"), wallet=t("wallet"))


async def _settle(kafka_bootstrap: str, namespace: str, players: set[str], deadline: float) -> dict:
    """Read the topics until every win is credited and the money adds up (or the deadline)."""
    while True:
        facts = await read_casino_facts(kafka_bootstrap, namespace)
        try:
            return {"facts": facts, **check_money(facts, players)}
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(1.0)


async def test_casino_bots_play_and_the_money_adds_up(
    cluster: object, kafka_bootstrap: str
) -> None:
    runner = CasinoRunner(
        CasinoRunnerConfig(
            targets=_targets(cluster),
            key=ISSUER_KEY,
            thb_bots=THB_BOTS if THB_ROUNDS else 0,
            thb_rounds=THB_ROUNDS,
            uth_bots=UTH_BOTS if UTH_ROUNDS else 0,
            uth_rounds=UTH_ROUNDS,
            never_every=NEVER_EVERY,
            uth_min_players=UTH_PLAYERS,
            stop_on_error=True,
            player_prefix=f"e2e{uuid.uuid4().hex[:6]}",
        )
    )
    began = time.monotonic()
    play = asyncio.create_task(runner.run())
    done, _ = await asyncio.wait({play}, timeout=PLAY_BUDGET_SECONDS)
    if not done:
        runner.stop.set()
        await asyncio.wait({play}, timeout=30)
        pytest.fail(f"bots did not finish in {PLAY_BUDGET_SECONDS}s: {runner.stats}")
    stats = play.result()
    played = time.monotonic() - began
    assert stats.errors == 0, stats.last_errors
    players = {pid for pid, _, _ in runner.assignments}
    got = await _settle(
        kafka_bootstrap,
        cluster.namespace,  # type: ignore[attr-defined]
        players,
        time.monotonic() + 90,
    )
    facts = got["facts"]
    thb = facts.rounds("thb")
    assert len(thb) >= THB_ROUNDS
    assert stats.games["thb"].rounds + stats.games["thb"].voided == len(thb)
    assert sum(facts.deposits[p] for p in players) == sum(stats.deposits.values())
    # The wallet service agrees with the balances rebuilt from its topic.
    async with grpc.aio.insecure_channel(cluster.target("wallet")) as ch:  # type: ignore[attr-defined]
        wallet = wallet_pb2_grpc.WalletServiceStub(ch)
        for player in sorted(players):
            bal = (
                await wallet.GetBalance(
                    wallet_pb2.GetBalanceRequest(player_id=player),
                    metadata=bearer("e2e-auditor", "auditor", 300),
                    timeout=10,
                )
            ).balance
            assert (player, bal.balance + bal.reserved, bal.reserved) == (
                player,
                facts.player_posted(player),
                0,
            )
    uth = facts.rounds("uth")
    if UTH_ROUNDS:
        _check_uth(facts, runner, uth)
    print(
        f"\nUTH {len(uth)} rounds in {played:.1f}s, players per settled round "
        f"{_players_per_round(facts, uth)}, timeouts {stats.games['uth'].timeouts}, "
        f"acks refused {stats.ack_refused}"
    )
    print(
        f"\nTHB {len(thb)} rounds in {played:.1f}s ({len(thb) / played:.1f}/s) by {THB_BOTS} "
        f"bots; staked {got['staked']} returned {got['returned']} house {got['house']} "
        f"wins credited {got['wins']} voided {got['voided']} retries {stats.retries}"
    )


def _players_per_round(facts: object, rounds: set[str]) -> list[int]:
    settled = facts.settled  # type: ignore[attr-defined]
    return sorted(len(settled[r][0].players) for r in rounds if r in settled)


def _check_uth(facts: object, runner: CasinoRunner, rounds: set[str]) -> None:
    """At least UTH_ROUNDS live rounds with UTH_PLAYERS players; the never-deciding bots
    were auto-checked pre-flop and on the flop and auto-folded at the river."""
    counts = _players_per_round(facts, rounds)
    assert len([n for n in counts if n >= UTH_PLAYERS]) >= UTH_ROUNDS, counts
    never = {pid for pid, game, name in runner.assignments if game == "uth" and name == "never"}
    assert never
    decided: dict[tuple[str, str], list[tuple[str, str, bool]]] = {}
    for rid, player, street, decision, auto in facts.decisions:  # type: ignore[attr-defined]
        if rid in rounds:
            decided.setdefault((rid, player), []).append((street, decision, auto))
    theirs = [v for (_, p), v in decided.items() if p in never]
    assert theirs, "the never-deciding bots played no round"
    for decisions in theirs:
        assert decisions == [
            ("preflop", "check", True),
            ("flop", "check", True),
            ("river", "fold", True),
        ], decisions
    # Nobody else timed out on every street (the deciding bots answer in time).
    assert any(not auto for v in decided.values() for _, _, auto in v)

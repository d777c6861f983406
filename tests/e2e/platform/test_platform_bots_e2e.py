"""Issue 7 end to end: four services as SEPARATE processes on PostgreSQL and Kafka, bots as
gRPC clients playing real Electric Poker tournaments at several buy-ins.

After at least 20 tournaments finished, the money is checked against an INDEPENDENT
computation from the Kafka topics (read from offset zero):

* each bot's wallet (balance + reserved) = deposits − buy-ins + prizes, the prizes computed
  here from TournamentStarted (prize pool, multiplier) and TournamentFinished (places, ties);
* the ledger sums to zero over every account (operator/auditor reads and /metrics);
* rake = 7% of the buy-ins; the prize reserve moved by Σ net buy-ins − Σ prize pools;
* every prize is credited exactly once (one PrizeCredited per winner, the right amount).
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from audit_step import audit_run
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
from electric_eventlog.kafka import KafkaBus
from platform_cluster import Cluster, run_cluster
from prometheus_client.parser import text_string_to_metric_families

from tests.support.auth import ISSUER_KEY, bearer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TOURNAMENTS = 20
#: Wall-clock budget for the bots to get there.
PLAY_BUDGET_SECONDS = 420.0
DEPOSIT = 200_000
RAKE_BPS = 700
SYSTEM_ACCOUNTS = (
    "house:rake",
    "house:prize_reserve",
    "house:tournament_escrow",
    "house:casino_bankroll",
    "house:promotions",
    "operator:cash_in",
    "operator:cash_out",
    "operator:adjustments",
)
#: The pay table's positions paid (docs/design.md §5): 80/10/10 from 100x up, else winner takes all.
TOP_HEAVY_FROM = 100
TOP_HEAVY_SHARES = (80, 10, 10)


def _md(sub: str, role: str) -> tuple[tuple[str, str], ...]:
    return bearer(sub, role, 900)


@pytest.fixture(scope="module")
def cluster(
    postgres_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("platform")
    # Speed: no pause between hands (the table service's knob).
    extra = {"ELECTRIC_TABLE_HAND_PAUSE_MS": "0", "ELECTRIC_LOG_LEVEL": "INFO"}
    with run_cluster(postgres_url, kafka_bootstrap, tmp, extra_env=extra) as c:
        yield c


# --------------------------------------------------------------------------- the events


@dataclass
class Facts:
    """What the topics say about this run's players and tournaments."""

    started: dict[str, reg_events.TournamentStarted] = field(default_factory=dict)
    finished: dict[str, table_events.TournamentFinished] = field(default_factory=dict)
    #: (table id, hand number) -> button seat of that hand.
    buttons: dict[tuple[str, int], int] = field(default_factory=dict)
    credited: list[payout_events.PrizeCredited] = field(default_factory=list)
    registered: dict[str, reg_events.PlayerRegistered] = field(default_factory=dict)
    unregistered: set[str] = field(default_factory=set)
    filled: set[str] = field(default_factory=set)


async def _envelopes(bootstrap: str, topic: str, namespace: str) -> list[Envelope]:
    bus = KafkaBus(bootstrap, client_id=f"e2e-platform-{uuid.uuid4().hex[:6]}", namespace=namespace)
    out = []
    async for message in bus.read_topic(topic):
        env = Envelope()
        env.ParseFromString(message.value)
        out.append(env)
    return out


async def read_facts(bootstrap: str, players: set[str], namespace: str = "") -> Facts:
    """Fold the three topics (of the run's Kafka namespace) from offset zero, keeping this
    run's players' tournaments."""
    facts = Facts()
    for env in await _envelopes(bootstrap, "electric.registration.events", namespace):
        for cls in (
            reg_events.TournamentStarted,
            reg_events.PlayerRegistered,
            reg_events.PlayerUnregistered,
            reg_events.TableFilled,
        ):
            if env.event_type != cls.DESCRIPTOR.full_name:
                continue
            event = cls()
            env.payload.Unpack(event)
            if isinstance(event, reg_events.TournamentStarted):
                if {s.player_id for s in event.seats} <= players:
                    facts.started[event.tournament_id] = event
            elif isinstance(event, reg_events.PlayerRegistered):
                if event.player_id in players:
                    facts.registered[event.entry_id] = event
            elif isinstance(event, reg_events.PlayerUnregistered):
                facts.unregistered.add(event.entry_id)
            else:
                facts.filled.add(event.table_id)
    for env in await _envelopes(bootstrap, "electric.table.events", namespace):
        if env.event_type == table_events.TournamentFinished.DESCRIPTOR.full_name:
            fin = table_events.TournamentFinished()
            env.payload.Unpack(fin)
            if fin.tournament_id in facts.started:
                facts.finished[fin.tournament_id] = fin
        elif env.event_type == table_events.HandStarted.DESCRIPTOR.full_name:
            hs = table_events.HandStarted()
            env.payload.Unpack(hs)
            if hs.table_id in facts.started:
                facts.buttons[(hs.table_id, hs.hand_number)] = hs.button_seat
    for env in await _envelopes(bootstrap, "electric.payout.events", namespace):
        if env.event_type == payout_events.PrizeCredited.DESCRIPTOR.full_name:
            pc = payout_events.PrizeCredited()
            env.payload.Unpack(pc)
            if pc.tournament_id in facts.started:
                facts.credited.append(pc)
    return facts


# --------------------------------------------------------------------------- our own maths


def place_amounts(pool: int, multiplier: int, seats: int) -> list[int]:
    """Cents per place 1..seats: the pay table's shares, floored, remainder to 1st."""
    shares = TOP_HEAVY_SHARES if multiplier >= TOP_HEAVY_FROM else (1,)
    amounts = [pool * s // sum(shares) for s in shares]
    amounts[0] += pool - sum(amounts)
    return amounts + [0] * (seats - len(amounts))


def expected_prizes(facts: Facts, tournament_id: str) -> dict[str, int]:
    """Player -> prize cents of one finished tournament, computed from the events only."""
    started = facts.started[tournament_id]
    finished = facts.finished[tournament_id]
    seats = sorted(s.seat for s in started.seats)
    assert started.prize_pool.cents == started.multiplier * started.buy_in.cents
    amounts = place_amounts(started.prize_pool.cents, started.multiplier, len(seats))
    groups: dict[int, list[table_events.FinishingPlace]] = defaultdict(list)
    for place in finished.places:
        groups[place.place].append(place)
    prizes: dict[str, int] = {}
    for first, group in groups.items():
        k = len(group)
        assert all(g.tied_count == k for g in group), finished
        total = sum(amounts[first - 1 : first - 1 + k])
        each, rest = divmod(total, k)
        # Remainder cents one each, clockwise from the seat left of that hand's button.
        button = facts.buttons.get((finished.table_id, group[0].eliminated_in_hand), 0)
        size = max(seats)
        order = sorted(group, key=lambda g: (g.seat - button - 1) % size)
        for i, g in enumerate(order):
            prizes[g.player_id] = prizes.get(g.player_id, 0) + each + (1 if i < rest else 0)
    return {p: c for p, c in prizes.items() if c > 0}


# --------------------------------------------------------------------------- the test


async def _wait_credited(cluster: Cluster, tournaments: set[str], deadline: float) -> None:
    """Until payout reports every prize of ``tournaments`` CREDITED (public GetPayouts)."""
    pending = set(tournaments)
    async with grpc.aio.insecure_channel(cluster.target("payout")) as ch:
        stub = payout_pb2_grpc.PayoutServiceStub(ch)
        while pending and time.monotonic() < deadline:
            for tid in list(pending):
                try:
                    got = await stub.GetPayouts(
                        payout_pb2.GetPayoutsRequest(tournament_id=tid),
                        metadata=_md("e2e-auditor", "auditor"),
                        timeout=10,
                    )
                except grpc.aio.AioRpcError as err:
                    assert err.code() is grpc.StatusCode.NOT_FOUND, err
                    continue
                prizes = got.payout.prizes
                if prizes and all(p.status == payout_pb2.PRIZE_STATUS_CREDITED for p in prizes):
                    pending.discard(tid)
            if pending:
                await asyncio.sleep(0.5)
    assert not pending, f"prizes not credited for {len(pending)} tournaments\n{cluster.logs()}"


def _wallet_metrics_total(cluster: Cluster) -> int:
    port = cluster.procs["wallet"].metrics_port  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        if family.name in (
            "electric_wallet_account_posted_cents",
            "electric_wallet_player_funds_cents",
        ):
            total += sum(s.value for s in family.samples)
    return int(total)


async def test_bots_play_twenty_tournaments_and_the_money_adds_up(
    cluster: Cluster, kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix = f"e2e{uuid.uuid4().hex[:6]}"
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(
                registration=cluster.target("registration"),
                table=cluster.target("table"),
                wallet=cluster.target("wallet"),
            ),
            key=ISSUER_KEY,
            bots=30,  # six per tier: two tables of each buy-in play at once
            mix=(("random", 5), ("tag", 1)),  # loose bots end tournaments before Electric Mode
            until_finished=TOURNAMENTS,
            deposit_cents=DEPOSIT,
            seed=7,
            player_prefix=prefix,
        )
    )
    began = time.monotonic()
    play = asyncio.create_task(runner.run())
    done, _ = await asyncio.wait({play}, timeout=PLAY_BUDGET_SECONDS)
    if not done:
        runner.stop.set()
        await asyncio.wait({play}, timeout=30)
        pytest.fail(
            f"bots did not finish {TOURNAMENTS} tournaments in {PLAY_BUDGET_SECONDS}s: "
            f"finished {len(runner.stats.tables_finished)}, {runner.stats}\n{cluster.logs()}"
        )
    stats = play.result()
    played = time.monotonic() - began
    assert stats.errors == 0, stats.last_errors
    assert stats.unimplemented == 0
    players = {a.player_id for a in runner.assignments}
    assert len(stats.tables_finished) >= TOURNAMENTS

    await _wait_credited(cluster, stats.tables_finished, time.monotonic() + 60)
    facts = await read_facts(kafka_bootstrap, players, cluster.namespace)

    # At least 20 tournaments finished, across several buy-ins; none left running.
    assert set(facts.finished) >= stats.tables_finished
    assert len(facts.finished) >= TOURNAMENTS
    buy_ins = {facts.started[t].buy_in.cents for t in facts.finished}
    assert len(buy_ins) >= 3, buy_ins
    assert set(facts.started) == set(facts.finished), "a tournament was left running"
    print(
        f"\n{len(facts.finished)} tournaments in {played:.0f}s "
        f"({len(facts.finished) * 60 / played:.1f}/min), multipliers "
        f"{sorted(Counter(s.multiplier for s in facts.started.values()).items())}, "
        f"actions {stats.actions}, stale {stats.stale_commands}, "
        f"resubscribes {stats.resubscribes} {stats.notes[-3:]}"
    )

    # Prizes, computed here; PrizeCredited exactly once per winner with that amount.
    expected: dict[tuple[str, str], int] = {}
    for tid in facts.finished:
        for player, cents in expected_prizes(facts, tid).items():
            expected[(tid, player)] = cents
    credited = Counter((c.tournament_id, c.player_id) for c in facts.credited)
    assert all(n == 1 for n in credited.values()), [k for k, n in credited.items() if n > 1]
    assert {(c.tournament_id, c.player_id): c.amount.cents for c in facts.credited} == expected
    assert len({c.wallet_transfer_id for c in facts.credited}) == len(facts.credited)

    buy_in_paid: Counter[str] = Counter()
    rake_total = net_total = gross_total = 0
    for started in facts.started.values():
        assert started.rake.cents * 10_000 == started.buy_in.cents * RAKE_BPS
        for seat in started.seats:
            buy_in_paid[seat.player_id] += started.buy_in.cents
            gross_total += started.buy_in.cents
            rake_total += started.rake.cents
            net_total += started.buy_in.cents - started.rake.cents
    pools_total = sum(facts.started[t].prize_pool.cents for t in facts.finished)
    prizes_by_player: Counter[str] = Counter()
    for (_, player), cents in expected.items():
        prizes_by_player[player] += cents
    waiting = [
        r
        for r in facts.registered.values()
        if r.entry_id not in facts.unregistered and r.table_id not in facts.filled
    ]
    reserved_by_player: Counter[str] = Counter()
    for r in waiting:
        reserved_by_player[r.player_id] += r.buy_in.cents

    async with grpc.aio.insecure_channel(cluster.target("wallet")) as ch:
        wallet = wallet_pb2_grpc.WalletServiceStub(ch)
        auditor = _md("e2e-auditor", "auditor")
        ledger_sum = 0
        for player in sorted(players):
            bal = (
                await wallet.GetBalance(
                    wallet_pb2.GetBalanceRequest(player_id=player), metadata=auditor, timeout=10
                )
            ).balance
            want = stats.deposits.get(player, 0) - buy_in_paid[player] + prizes_by_player[player]
            assert (player, bal.balance + bal.reserved) == (player, want)
            assert bal.reserved == reserved_by_player[player]
            for suffix in ("cash", "bonus", "pending_bonus"):
                acct = await wallet.GetAccount(
                    wallet_pb2.GetAccountRequest(account_id=f"player:{player}:{suffix}"),
                    metadata=auditor,
                    timeout=10,
                )
                ledger_sum += acct.account.posted
        system = {}
        for account_id in SYSTEM_ACCOUNTS:
            got = await wallet.GetAccount(
                wallet_pb2.GetAccountRequest(account_id=account_id), metadata=auditor, timeout=10
            )
            system[account_id] = got.account
            ledger_sum += got.account.posted
    assert sum(stats.deposits.values()) == -system["operator:cash_in"].posted
    # Double entry: every account (the bots' and the house's) sums to zero ...
    assert ledger_sum == 0
    # ... and so does the wallet's own view of all accounts (/metrics: house + all players).
    assert _wallet_metrics_total(cluster) == 0
    # Rake = 7% of the buy-ins; the reserve got the net buy-ins and paid the prize pools.
    assert system["house:rake"].posted == rake_total
    assert rake_total * 10_000 == gross_total * RAKE_BPS
    assert system["house:prize_reserve"].posted == net_total - pools_total
    assert system["house:tournament_escrow"].posted == 0

    # The auditor (issue 14): verify over topics and stores, every hand exported and read back.
    hands = audit_run(cluster, kafka_bootstrap, tmp_path / "audit")
    assert hands >= len(facts.finished)

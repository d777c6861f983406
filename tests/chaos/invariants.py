"""After the faults: wait until the platform is quiet, then check every invariant of issue 18
from INDEPENDENT data (the four topics read from offset 0, the wallet's answers, the
stores through ``electric-audit verify``), never from what a service says it did.

The tournament maths is the platform e2e test's (``expected_prizes``: pay table, ties,
odd cents) and the casino maths is ``check_money`` of the casino e2e facts; both are loaded
from their files, not copied.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import sys
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import events_pb2 as wallet_events
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_eventlog.kafka import KafkaBus
from prometheus_client.parser import text_string_to_metric_families

from tests.support.auth import bearer

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ("registration", "table", "wallet", "payout")


def load(name: str, relative: str) -> ModuleType:
    """A test helper module by file (the e2e folders are not packages), once."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def e2e() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(casino_e2e_facts, audit_step, test_platform_bots_e2e), in import order."""
    casino = load("casino_e2e_facts", "tests/e2e/casino/casino_e2e_facts.py")
    casino.platform_cluster()  # registers `platform_cluster` for the platform test module
    audit = load("audit_step", "tests/e2e/platform/audit_step.py")
    platform = load("test_platform_bots_e2e", "tests/e2e/platform/test_platform_bots_e2e.py")
    return casino, audit, platform


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


# --------------------------------------------------------------------------- quiet


def scrape(port: int) -> dict[str, float]:
    """metric name -> sum of its samples (NaN when one sample is NaN: the store failed)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


QUIET = {
    "table": ("electric_table_live_tables",),
    "payout": ("electric_payout_prizes_uncredited", "electric_payout_results_unawarded"),
    "registration": (
        "electric_registration_wallet_ops_pending",
        "electric_registration_attempts_unfinished",
    ),
}


def loud(cluster: Any) -> list[str]:
    """What keeps the platform from being quiet (empty: quiet)."""
    out = []
    for name in (n for n in cluster.procs if n.split("-")[0] in TOPICS):
        service = name.split("-")[0]
        try:
            got = scrape(cluster.procs[name].metrics_port)
        except OSError as exc:
            out.append(f"{name} metrics: {exc}")
            continue
        for metric in (*QUIET.get(service, ()), "electric_outbox_unsent_events"):
            value = got.get(metric, math.nan)
            if value != 0:  # NaN too
                out.append(f"{metric}={value:g}")
    return out


async def wait_quiet(cluster: Any, budget: float, log: Callable[[str], None]) -> float:
    began = time.monotonic()
    last = ""
    while left := loud(cluster):
        if time.monotonic() - began > budget:
            raise TimeoutError(f"not quiet after {budget:.0f}s: {left}")
        if str(left) != last and time.monotonic() - began > 5:
            log(f"  draining: {', '.join(left)}")
            last = str(left)
        await asyncio.sleep(1.0)
    return time.monotonic() - began


# --------------------------------------------------------------------------- the topics


@dataclass
class Topic:
    name: str
    #: Every message in offset order: (raw value, envelope).
    messages: list[tuple[bytes, Envelope]]

    def events(self) -> list[Envelope]:
        """Each event once (first copy)."""
        seen: set[str] = set()
        out = []
        for _, env in self.messages:
            if env.event_id not in seen:
                seen.add(env.event_id)
                out.append(env)
        return out


async def read_topics(bootstrap: str, namespace: str) -> dict[str, Topic]:
    bus = KafkaBus(bootstrap, client_id=f"chaos-{uuid.uuid4().hex[:6]}", namespace=namespace)
    out = {}
    for name in TOPICS:
        messages = []
        async for message in bus.read_topic(f"electric.{name}.events"):
            env = Envelope()
            env.ParseFromString(message.value)
            messages.append((bytes(message.value), env))
        out[name] = Topic(name, messages)
    return out


def check_duplicates(topics: dict[str, Topic]) -> str:
    """Redelivery only: every copy of an event id is byte-identical, and no two different
    events claim one stream version (a real duplicate, e.g. a command applied twice)."""
    copies = 0
    for topic in topics.values():
        by_id: dict[str, set[bytes]] = defaultdict(set)
        versions: dict[tuple[str, int], set[str]] = defaultdict(set)
        for raw, env in topic.messages:
            by_id[env.event_id].add(raw)
            versions[(env.stream_id, env.stream_version)].add(env.event_id)
        differ = [i for i, raws in by_id.items() if len(raws) > 1]
        assert not differ, f"{topic.name}: copies of one event differ: {differ[:3]}"
        twice = [k for k, ids in versions.items() if len(ids) > 1]
        assert not twice, f"{topic.name}: two events at one stream version: {twice[:3]}"
        copies += len(topic.messages) - len(by_id)
    return f"{copies} redelivered copies, all identical"


def _unpack(env: Envelope, cls: Any) -> Any:
    if env.event_type != cls.DESCRIPTOR.full_name:
        return None
    event = cls()
    env.payload.Unpack(event)
    return event


def tournament_facts(platform: ModuleType, topics: dict[str, Topic]) -> tuple[Any, list[Any]]:
    """The platform e2e test's Facts, folded from the topics read here (every event once),
    plus every TableCancelled."""
    facts = platform.Facts()
    cancelled = []
    for env in topics["registration"].events():
        if e := _unpack(env, reg_events.TournamentStarted):
            facts.started[e.tournament_id] = e
        elif e := _unpack(env, reg_events.PlayerRegistered):
            facts.registered[e.entry_id] = e
        elif e := _unpack(env, reg_events.PlayerUnregistered):
            facts.unregistered.add(e.entry_id)
        elif e := _unpack(env, reg_events.TableFilled):
            facts.filled.add(e.table_id)
        elif e := _unpack(env, reg_events.TableCancelled):
            cancelled.append(e)
    for env in topics["table"].events():
        if e := _unpack(env, table_events.TournamentFinished):
            assert e.tournament_id not in facts.finished, f"finished twice: {e.tournament_id}"
            facts.finished[e.tournament_id] = e
        elif e := _unpack(env, table_events.HandStarted):
            facts.buttons[(e.table_id, e.hand_number)] = e.button_seat
    for env in topics["payout"].events():
        if e := _unpack(env, payout_events.PrizeCredited):
            facts.credited.append(e)
    return facts, cancelled


@dataclass
class Wallet:
    """The wallet topic folded: posted balances, deposits, transfers by id."""

    posted: Counter[str]
    deposits: Counter[str]
    posted_ids: Counter[str]
    pending_ids: set[str]
    voided_ids: set[str]
    refunds: Counter[str]

    @staticmethod
    def fold(topic: Topic) -> Wallet:
        w = Wallet(Counter(), Counter(), Counter(), set(), set(), Counter())
        for env in topic.events():
            if e := _unpack(env, wallet_events.TransferPosted):
                w.posted_ids[e.spec.transfer_id] += 1
                for leg in e.legs:
                    w.posted[leg.debit_account_id] -= leg.amount
                    w.posted[leg.credit_account_id] += leg.amount
                    player = (
                        leg.credit_account_id.split(":")[1] if ":" in leg.credit_account_id else ""
                    )
                    if leg.debit_account_id == "operator:cash_in":
                        w.deposits[player] += leg.amount
                    if e.spec.code == "refund" and leg.credit_account_id.startswith("player:"):
                        w.refunds[player] += leg.amount
            elif e := _unpack(env, wallet_events.TransferPending):
                w.pending_ids.add(e.spec.transfer_id)
            elif e := _unpack(env, wallet_events.TransferVoided):
                w.voided_ids.add(e.transfer_id)
        return w

    def player(self, player: str) -> int:
        return sum(v for a, v in self.posted.items() if a.startswith(f"player:{player}:"))

    def players(self) -> set[str]:
        return {a.split(":")[1] for a in self.posted if a.startswith("player:")}


def check_tournaments(platform: ModuleType, facts: Any, cancelled: list[Any], w: Wallet) -> str:
    started_tables = {s.table_id for s in facts.started.values()}
    cancelled_tables = {c.table_id for c in cancelled}
    assert not started_tables & cancelled_tables, "tables both started and cancelled"
    lost = facts.filled - started_tables - cancelled_tables
    assert not lost, f"filled tables neither started nor cancelled: {sorted(lost)[:5]}"
    running = set(facts.started) - set(facts.finished)
    assert not running, f"tournaments never finished: {sorted(running)[:5]}"
    for c in cancelled:
        for entry in c.entries:
            back = entry.wallet_transfer_id in w.voided_ids or w.refunds[entry.player_id] > 0
            assert back, f"cancelled entry {entry.entry_id} of {c.table_id} not given back"
    return f"{len(facts.finished)} finished, {len(cancelled)} cancelled with refunds"


def check_prizes(platform: ModuleType, facts: Any, w: Wallet) -> tuple[str, Counter[str]]:
    expected: dict[tuple[str, str], int] = {}
    for tid in facts.finished:
        for player, cents in platform.expected_prizes(facts, tid).items():
            expected[(tid, player)] = cents
    credited = Counter((c.tournament_id, c.player_id) for c in facts.credited)
    twice = [k for k, n in credited.items() if n > 1]
    assert not twice, f"prizes credited twice: {twice[:5]}"
    got = {(c.tournament_id, c.player_id): c.amount.cents for c in facts.credited}
    assert got == expected, f"prizes differ: {set(got.items()) ^ set(expected.items())}"
    for c in facts.credited:
        n = w.posted_ids[c.wallet_transfer_id]
        assert n == 1, f"prize transfer {c.wallet_transfer_id} posted {n} times"
    prizes: Counter[str] = Counter()
    for (_, player), cents in expected.items():
        prizes[player] += cents
    return f"{len(expected)} prizes, each credited and posted once", prizes


def check_tournament_balances(
    facts: Any, w: Wallet, players: set[str], prizes: Counter[str]
) -> str:
    """posted(player) = deposits − buy-ins of the started tournaments + prizes (a cancelled
    table's buy-in nets to zero: voided, or posted and refunded)."""
    buy_ins: Counter[str] = Counter()
    for s in facts.started.values():
        for seat in s.seats:
            buy_ins[seat.player_id] += s.buy_in.cents
    bad = [
        (p, w.player(p), w.deposits[p] - buy_ins[p] + prizes[p])
        for p in sorted(players)
        if w.player(p) != w.deposits[p] - buy_ins[p] + prizes[p]
    ]
    assert not bad, f"tournament balances ≠ deposits − buy-ins + prizes: {bad[:5]}"
    return f"{len(players)} players = deposits − buy-ins + prizes"


async def check_wallet_answers(cluster: Any, facts: Any, cancelled: list[Any], w: Wallet) -> str:
    """The wallet service's balances equal the topic's, reserved = waiting entries."""
    waiting: Counter[str] = Counter()
    closed = facts.filled | {c.table_id for c in cancelled}
    for r in facts.registered.values():
        if r.entry_id not in facts.unregistered and r.table_id not in closed:
            waiting[r.player_id] += r.buy_in.cents
    bad = []
    async with grpc.aio.insecure_channel(cluster.target("wallet")) as ch:
        stub = wallet_pb2_grpc.WalletServiceStub(ch)
        md = bearer("chaos-auditor", "auditor", 900)
        for player in sorted(w.players()):
            bal = (
                await stub.GetBalance(
                    wallet_pb2.GetBalanceRequest(player_id=player), metadata=md, timeout=15
                )
            ).balance
            if (bal.balance + bal.reserved, bal.reserved) != (w.player(player), waiting[player]):
                bad.append((player, bal.balance, bal.reserved, w.player(player), waiting[player]))
    assert not bad, f"wallet answers ≠ topic (player, bal, reserved, posted, waiting): {bad[:5]}"
    return f"{len(w.players())} wallets = topic; {sum(waiting.values())} cents reserved"


def check_ledger(platform: ModuleType, cluster: Any, w: Wallet) -> str:
    total = sum(w.posted.values())
    assert total == 0, f"the topic's ledger sums to {total}"
    metrics = platform._wallet_metrics_total(cluster)
    assert metrics == 0, f"the wallet's /metrics ledger sums to {metrics}"
    return f"Σ posted = 0 over {len(w.posted)} accounts (topic and /metrics)"


def audit_verify(audit: ModuleType, cluster: Any, bootstrap: str, budget: float) -> str:
    """``electric-audit verify`` over the four stores and this run's topics."""
    procs = cluster.procs
    stores = [arg for name in TOPICS for arg in ("--store", procs[name].db_url)]
    kafka = ["--kafka", bootstrap, "--namespace", cluster.namespace]
    keys = ["--checkpoint-keys", str(procs["table"].log_path.parent / "keys")]
    deadline = time.monotonic() + budget
    while True:
        code, results, err = audit._cli("verify", *stores, *kafka, *keys, "--json")
        failed = [r for r in results if r.get("failed")]
        if (code == 0 and not failed and results) or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert code == 0 and not failed and results, (code, failed[:3], err[-1500:])
    return ", ".join(f"{r['check']} {r['checked']}" for r in results)

"""An INDEPENDENT reading of a casino run: the table, payout and wallet topics from offset 0.

Nothing here asks a service; the facts are folded from the published events only (each
envelope once, by event id: the relays deliver at least once):

* table topic: every bet placed (``CasinoBetPlaced``), every round settled
  (``CasinoRoundSettled``: per player, per bet, stake / outcome / returned) or voided
  (``CasinoRoundVoided``), every round started;
* payout topic: every ``CasinoWinCredited`` (one per winning bet, keyed by round, player,
  bet kind);
* wallet topic: every posted leg (``TransferPosted``), so the ledger's posted balances, the
  deposits (``operator:cash_in`` → player) and the casino bankroll are rebuilt here.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import casino_events_pb2 as pay_cev
from electric.table.v1 import casino_events_pb2 as cev
from electric.wallet.v1 import events_pb2 as wallet_events
from electric_eventlog.kafka import KafkaBus

ROOT = Path(__file__).resolve().parents[3]
#: Short live-table windows for the tests (the table process's knobs, ms).
UTH_WINDOWS = {
    "ELECTRIC_TABLE_UTH_GREEN_MS": "1200",
    "ELECTRIC_TABLE_UTH_YELLOW_MS": "300",
    "ELECTRIC_TABLE_UTH_DECISION_MS": "1500",
    "ELECTRIC_TABLE_UTH_PAUSE_MS": "100",
}
BANKROLL = "house:casino_bankroll"
CASH_IN = "operator:cash_in"


def platform_cluster() -> ModuleType:
    """tests/e2e/platform/platform_cluster.py as a module (the 4-process cluster)."""
    name = "platform_cluster"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "tests/e2e/platform/platform_cluster.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def envelopes(bootstrap: str, topic: str, namespace: str) -> list[Envelope]:
    """Every envelope of ``topic`` from offset 0, each event id once."""
    bus = KafkaBus(bootstrap, client_id=f"e2e-casino-{uuid.uuid4().hex[:6]}", namespace=namespace)
    out, seen = [], set()
    async for message in bus.read_topic(topic):
        env = Envelope()
        env.ParseFromString(message.value)
        if env.event_id in seen:
            continue
        seen.add(env.event_id)
        out.append(env)
    return out


def _is(env: Envelope, cls: type) -> bool:
    return bool(env.event_type == cls.DESCRIPTOR.full_name)  # type: ignore[attr-defined]


@dataclass
class CasinoFacts:
    """What the topics say."""

    started: dict[str, cev.CasinoRoundStarted] = field(default_factory=dict)
    #: bet id -> the placement.
    bets: dict[str, cev.CasinoBetPlaced] = field(default_factory=dict)
    #: round id -> every CasinoRoundSettled published for it (one expected).
    settled: dict[str, list[cev.CasinoRoundSettled]] = field(
        default_factory=lambda: defaultdict(list)
    )
    voided: dict[str, list[cev.CasinoRoundVoided]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: (round, player, bet kind) -> credits.
    credited: dict[tuple[str, str, str], list[pay_cev.CasinoWinCredited]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: account id -> posted balance (credits − debits of posted legs).
    posted: Counter[str] = field(default_factory=Counter)
    #: player -> cents deposited (posted legs operator:cash_in → player's cash).
    deposits: Counter[str] = field(default_factory=Counter)
    #: round id -> game, for every round started or settled.
    game_of: dict[str, str] = field(default_factory=dict)
    #: Every decision: (round, player, street, decision, timed out).
    decisions: list[tuple[str, str, str, str, bool]] = field(default_factory=list)

    def rounds(self, game: str) -> set[str]:
        return {r for r, g in self.game_of.items() if g == game}

    def open_rounds(self) -> set[str]:
        """Rounds with a bet placed and neither settled nor voided (a live table's next
        round, opened as the last players left, has no bet and may wait for players)."""
        with_bets = {b.round_id for b in self.bets.values()}
        return (set(self.started) & with_bets) - set(self.settled) - set(self.voided)

    def results(self) -> list[tuple[str, str, str, cev.CasinoBetResult]]:
        """(round, game, player, result) of every bet of every settled or voided round."""
        out = []
        for rid, events in self.settled.items():
            for p in events[0].players:
                out += [(rid, events[0].game, p.player_id, r) for r in p.results]
        for rid, vevents in self.voided.items():
            for p in vevents[0].players:
                out += [(rid, vevents[0].game, p.player_id, r) for r in p.results]
        return out

    def player_net(self) -> Counter[str]:
        """player -> Σ returned − Σ staked over the settled and voided rounds."""
        net: Counter[str] = Counter()
        for _, _, player, r in self.results():
            net[player] += r.returned_cents - r.stake_cents
        return net

    def player_posted(self, player: str) -> int:
        return sum(v for a, v in self.posted.items() if a.startswith(f"player:{player}:"))


async def read_casino_facts(bootstrap: str, namespace: str) -> CasinoFacts:
    """Fold the table, payout and wallet topics of the run's namespace from offset 0."""
    facts = CasinoFacts()
    for env in await envelopes(bootstrap, "electric.table.events", namespace):
        if _is(env, cev.CasinoRoundStarted):
            started = cev.CasinoRoundStarted()
            env.payload.Unpack(started)
            facts.started[started.round_id] = started
            facts.game_of[started.round_id] = started.game
        elif _is(env, cev.CasinoBetPlaced):
            bet = cev.CasinoBetPlaced()
            env.payload.Unpack(bet)
            facts.bets[bet.bet_id] = bet
        elif _is(env, cev.CasinoDecisionMade):
            d = cev.CasinoDecisionMade()
            env.payload.Unpack(d)
            facts.decisions.append((d.round_id, d.player_id, d.street, d.decision, d.timed_out))
        elif _is(env, cev.CasinoRoundSettled):
            settled = cev.CasinoRoundSettled()
            env.payload.Unpack(settled)
            facts.settled[settled.round_id].append(settled)
            facts.game_of[settled.round_id] = settled.game
        elif _is(env, cev.CasinoRoundVoided):
            voided = cev.CasinoRoundVoided()
            env.payload.Unpack(voided)
            facts.voided[voided.round_id].append(voided)
            facts.game_of[voided.round_id] = voided.game
    for env in await envelopes(bootstrap, "electric.payout.events", namespace):
        if _is(env, pay_cev.CasinoWinCredited):
            win = pay_cev.CasinoWinCredited()
            env.payload.Unpack(win)
            facts.credited[(win.round_id, win.player_id, win.bet_kind)].append(win)
    for env in await envelopes(bootstrap, "electric.wallet.events", namespace):
        if _is(env, wallet_events.TransferPosted):
            posted = wallet_events.TransferPosted()
            env.payload.Unpack(posted)
            for leg in posted.legs:
                facts.posted[leg.debit_account_id] -= leg.amount
                facts.posted[leg.credit_account_id] += leg.amount
                if leg.debit_account_id == CASH_IN and leg.credit_account_id.startswith("player:"):
                    facts.deposits[leg.credit_account_id.split(":")[1]] += leg.amount
    return facts


def check_money(facts: CasinoFacts, players: set[str]) -> dict[str, int]:
    """The issue's checks over the facts; returns a few totals for the report.

    Every round settled or voided, never both, each once; every player's posted balance =
    deposits − bets + wins; the ledger sums to zero; the bankroll moved by −Σ player net;
    every winning bet credited exactly once with stake + win, and nothing else credited.
    """
    both = set(facts.settled) & set(facts.voided)
    assert not both, f"rounds both settled and voided: {sorted(both)[:5]}"
    twice = [r for r, e in [*facts.settled.items(), *facts.voided.items()] if len(e) > 1]
    assert not twice, f"rounds decided twice: {twice[:5]}"
    assert not facts.open_rounds(), f"rounds left open: {sorted(facts.open_rounds())[:5]}"
    # Every placed bet is resolved by its round's settlement or void, with its stake.
    resolved: Counter[str] = Counter()
    for _rid, _, player, r in facts.results():
        resolved[player] += r.stake_cents
    placed: Counter[str] = Counter()
    for bet in facts.bets.values():
        placed[bet.player_id] += bet.amount_cents
    assert placed == resolved, "stakes placed differ from stakes resolved"
    net = facts.player_net()
    for player in sorted(players):
        want = facts.deposits[player] + net[player]
        assert (player, facts.player_posted(player)) == (player, want)
    assert sum(facts.posted.values()) == 0, "the ledger does not sum to zero"
    assert facts.posted[BANKROLL] == -sum(net.values()), "bankroll ≠ −Σ player net"
    wins = {
        (rid, player, r.spot): r.returned_cents
        for rid, _, player, r in facts.results()
        if r.outcome == "win" and rid in facts.settled
    }
    counts = {k: len(v) for k, v in facts.credited.items()}
    assert all(n == 1 for n in counts.values()), [k for k, n in counts.items() if n > 1][:5]
    assert {k: v[0].amount.cents for k, v in facts.credited.items()} == wins
    staked = sum(r.stake_cents for *_, r in facts.results())
    returned = sum(r.returned_cents for *_, r in facts.results())
    return {
        "wins": len(wins),
        "staked": staked,
        "returned": returned,
        "house": staked - returned,
        "voided": len(facts.voided),
    }

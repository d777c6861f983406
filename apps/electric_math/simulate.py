"""Play N complete tournaments in virtual time:
``python -m electric_math.simulate -n N [--seed S] [--bots random,tag,random]``.

Everything is derived from ``--seed``: tournament ``i`` uses ``SHA-256(seed || i)`` for its
multiplier seed, its deck seeds and the bots' RNG, so a run is reproducible. Virtual time:
a bot thinks 0.5–4 s (RandomBot sometimes 8–20 s, which runs into the time bank), hands are
dealt ``--between-hands-ms`` (default 3 s) after the previous one ends.

Prints the multiplier histogram against the configured weights with a chi-square p-value
(scipy when installed — a dev dependency — else the Wilson–Hilferty approximation), hands
per tournament, the share of tournaments reaching Electric Mode per multiplier, tournament
duration, and prize totals against buy-ins and rake.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import importlib
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from electric_domain.cards import UNKNOWN_CARD
from electric_domain.tournament.aggregate import Tournament
from electric_domain.tournament.bots import (
    BOTS,
    Bot,
    BotContext,
    Decide,
    GoSitOut,
    RandomBot,
    TimeOut,
)
from electric_domain.tournament.config import TournamentConfig, default_config, load_config
from electric_domain.tournament.engine_adapter import AdaptedHand
from electric_domain.tournament.events import (
    Act,
    Command,
    DealHand,
    Event,
    SatOut,
    SelectPreAction,
    SitIn,
    SitOut,
    Tick,
)
from tqdm import tqdm


def _sub(seed: bytes, label: bytes) -> bytes:
    return hmac.new(seed, label, hashlib.sha256).digest()


def tournament_seed(master: int, index: int) -> bytes:
    return hashlib.sha256(
        master.to_bytes(16, "big", signed=True) + index.to_bytes(8, "big")
    ).digest()


def make_bots(names: Sequence[str]) -> list[Bot]:
    bots: list[Bot] = []
    for n in names:
        cls = BOTS[n]
        bots.append(cls())
    return bots


@dataclass(slots=True)
class Played:
    """Outcome of one simulated tournament."""

    tournament: Tournament
    multiplier: int
    hands: int
    electric: bool
    duration_ms: int
    prizes: tuple[int, ...]
    pool: int


def play(
    cfg: TournamentConfig,
    seed: bytes,
    bots: Sequence[Bot],
    *,
    buy_in_cents: int = 100,
    between_hands_ms: int = 3000,
    max_hands: int = 10_000,
    observe: Callable[[Tournament], None] | None = None,
) -> Played:
    """Play one tournament to the end with the given bots (one per seat); ``observe`` is
    called after every command (property tests check invariants there)."""
    rng = random.Random(seed)
    t = Tournament.start(
        cfg,
        tournament_id=seed.hex()[:16],
        players=tuple(f"{b.name}-{i}" for i, b in enumerate(bots)),
        buy_in_cents=buy_in_cents,
        multiplier_seed=_sub(seed, b"multiplier"),
        at=0,
    )
    st = t.state
    now = 0
    if observe is not None:
        handle = t.handle

        def observed(cmd: Command) -> list[Event]:
            out = handle(cmd)
            observe(t)
            return out

        t.handle = observed  # type: ignore[method-assign]
    plan: tuple[int, int, Decide] | None = None
    while not st.finished:
        if t.awaiting_deal():
            if st.hand_no >= max_hands:
                raise RuntimeError(f"tournament did not finish in {max_hands} hands")
            for i, s in enumerate(st.seats):
                if s.sitting_out and not s.eliminated and bots[i].wants_sit_in(st.hand_no):
                    t.handle(SitIn(i, now))
            if st.hand_no:
                now += between_hands_ms
            t.handle(DealHand(now, _sub(seed, b"deck" + st.hand_no.to_bytes(4, "big"))))
            continue
        turn = st.turn
        assert turn is not None, "hand in progress without a turn"
        seat = turn.seat
        hand: AdaptedHand = st.hand
        hs = hand.state
        assert hs is not None
        # other bots may pre-select a pre-turn action
        for i, b in enumerate(bots):
            if i != seat and isinstance(b, RandomBot) and st.seats[i].preaction is None:
                offered = t.pre_actions_available(i)
                choice = b.pre_action(offered, rng) if offered else None
                if choice is not None:
                    t.handle(SelectPreAction(i, choice, now))
        key = st.turn_serial
        if plan is None or plan[0] != key:
            p = hand.index[seat]
            ctx = BotContext(
                seat=seat,
                hole=tuple(c for c in hs.hole[p] if c != UNKNOWN_CARD),
                board=hs.board,
                pot=hs.pot_total,
                big_blind=st.hand_blinds[1],
                players_in_hand=sum(1 for f in hs.folded if not f),
                hand_no=st.hand_no,
                legal=t.port.legal(hand),
            )
            d = bots[seat].decide(ctx, rng)
            if isinstance(d, TimeOut):
                now = max(now, turn.deadline)
                t.handle(Tick(now))
                continue
            if isinstance(d, GoSitOut):
                t.handle(SitOut(seat, now))
                continue
            if isinstance(bots[seat], RandomBot) and rng.random() < 0.03:
                d = Decide(d.move, d.amount, rng.randint(8000, 20000))
            plan = (key, now + d.think_ms, d)
        _, act_at, d = plan
        if act_at >= turn.deadline:  # the deadline itself is too late
            now = max(now, turn.deadline)
            t.handle(Tick(now))
            continue
        now = max(now, act_at)
        t.handle(Act(seat, d.move, now, d.amount))
        plan = None
    res = t.result()
    assert res is not None
    return Played(
        t,
        st.multiplier,
        st.hand_no,
        st.electric_mode,
        st.now,
        res.prizes_cents,
        res.prize_pool_cents,
    )


@dataclass(slots=True)
class Stats:
    n: int = 0
    mult: Counter[int] = field(default_factory=Counter)
    electric: Counter[int] = field(default_factory=Counter)
    hands: list[int] = field(default_factory=list)
    durations: list[int] = field(default_factory=list)
    prizes: int = 0
    sat_out_by_timeouts: int = 0

    def merge(self, o: Stats) -> None:
        self.n += o.n
        self.mult.update(o.mult)
        self.electric.update(o.electric)
        self.hands.extend(o.hands)
        self.durations.extend(o.durations)
        self.prizes += o.prizes
        self.sat_out_by_timeouts += o.sat_out_by_timeouts


def run_range(
    args: tuple[str | None, int, int, int, tuple[str, ...], int, int],
) -> Stats:
    config_path, master, start, stop, bot_names, buy_in, between = args
    cfg = load_config(config_path) if config_path else default_config()
    stats = Stats()
    for i in range(start, stop):
        seed = tournament_seed(master, i)
        p = play(cfg, seed, make_bots(bot_names), buy_in_cents=buy_in, between_hands_ms=between)
        stats.n += 1
        stats.mult[p.multiplier] += 1
        if p.electric:
            stats.electric[p.multiplier] += 1
        stats.hands.append(p.hands)
        stats.durations.append(p.duration_ms)
        stats.prizes += sum(p.prizes)
        stats.sat_out_by_timeouts += sum(
            1 for e in p.tournament.history if isinstance(e, SatOut) and e.reason == "timeouts"
        )
    return stats


def chi_square(observed: Sequence[int], expected: Sequence[float]) -> tuple[float, int, float, str]:
    """Statistic, degrees of freedom, p-value and method; bins with expected < 5 are pooled
    into their neighbour (from the rare end)."""
    obs, exp = list(observed), list(expected)
    while len(exp) > 2 and exp[-1] < 5:
        e_last, o_last = exp.pop(), obs.pop()
        exp[-1] += e_last
        obs[-1] += o_last
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    df = len(exp) - 1
    try:
        stats = importlib.import_module("scipy.stats")  # dev dependency, imported lazily

        return stat, df, float(stats.chi2.sf(stat, df)), "scipy"
    except ImportError:  # Wilson–Hilferty normal approximation
        z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
        return stat, df, 0.5 * math.erfc(z / math.sqrt(2)), "wilson-hilferty"


def _pct(xs: list[int], q: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def report(cfg: TournamentConfig, stats: Stats, buy_in: int, seconds: float, jobs: int) -> str:
    out: list[str] = []
    w = out.append
    pt = cfg.pay_table
    w(
        f"{stats.n:,} tournaments in {seconds:.1f} s wall ({stats.n / seconds:,.0f}/s, "
        f"{jobs} process(es)); {sum(stats.hands):,} hands ({sum(stats.hands) / seconds:,.0f}/s)"
    )
    w("")
    w(f"{'mult':>7} {'observed':>9} {'expected':>11} {'obs %':>8} {'cfg %':>8} {'electric %':>10}")
    for e in pt.entries:
        o = stats.mult[e.multiplier]
        ex = stats.n * e.weight / pt.weight_total
        el = f"{100 * stats.electric[e.multiplier] / o:.1f}" if o else "-"
        w(
            f"{e.multiplier:>6}x {o:>9,} {ex:>11,.1f} {100 * o / stats.n:>7.4f}% "
            f"{100 * e.weight / pt.weight_total:>7.4f}% {el:>10}"
        )
    stat, df, p, how = chi_square(
        [stats.mult[e.multiplier] for e in pt.entries],
        [stats.n * e.weight / pt.weight_total for e in pt.entries],
    )
    w(f"chi-square = {stat:.3f}, df = {df}, p-value = {p:.4f} ({how}; rare bins pooled)")
    w(f"Electric Mode reached: {100 * sum(stats.electric.values()) / stats.n:.1f}% overall")
    w("")
    hs = stats.hands
    w(
        f"hands per tournament: mean {sum(hs) / len(hs):.2f}, p50 {_pct(hs, 0.5)}, "
        f"p99 {_pct(hs, 0.99)}, max {max(hs)}"
    )
    ds = stats.durations
    w(
        f"duration (virtual): mean {sum(ds) / len(ds) / 60000:.2f} min, p50 "
        f"{_pct(ds, 0.5) / 60000:.2f}, p99 {_pct(ds, 0.99) / 60000:.2f}, "
        f"max {max(ds) / 60000:.2f} min"
    )
    w(f"players sat out after consecutive timeouts: {stats.sat_out_by_timeouts}")
    w("")
    tier = cfg.tier(buy_in)
    gross = stats.n * cfg.seats * buy_in
    rake = stats.n * cfg.seats * tier.rake_cents
    net = gross - rake
    w(f"buy-in tier {buy_in} cents: gross buy-ins {gross:,} c, rake {rake:,} c, net {net:,} c")
    w(
        f"prizes paid {stats.prizes:,} c = {100 * stats.prizes / net:.2f}% of net buy-ins "
        f"(expected 100%), {100 * stats.prizes / gross:.2f}% of gross (expected "
        f"{100 * float(pt.expected_multiplier()) / cfg.seats:.2f}%)"
    )
    w(f"prize reserve change {net - stats.prizes:+,} c")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m electric_math.simulate")
    ap.add_argument("-n", type=int, default=1000, help="tournaments to play")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", default=None)
    ap.add_argument("--bots", default="random,tag,random", help=f"one per seat: {sorted(BOTS)}")
    ap.add_argument("--buy-in", type=int, default=100, help="buy-in tier in cents")
    ap.add_argument("--between-hands-ms", type=int, default=3000)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--progress", action="store_true", help="partial reports on stderr")
    ap.add_argument("--no-bar", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    cfg = load_config(args.config) if args.config else default_config()
    names = tuple(args.bots.split(","))
    if len(names) != cfg.seats or any(n not in BOTS for n in names):
        print(f"error: --bots needs {cfg.seats} of {sorted(BOTS)}", file=sys.stderr)
        return 2
    cfg.tier(args.buy_in)
    t0 = time.perf_counter()
    jobs = max(1, args.jobs)
    chunks = max(jobs * 4, -(-args.n // 1000))
    bounds = [args.n * k // chunks for k in range(chunks + 1)]
    work = [
        (args.config, args.seed, bounds[k], bounds[k + 1], names, args.buy_in,
         args.between_hands_ms)
        for k in range(chunks)
        if bounds[k + 1] > bounds[k]
    ]  # fmt: skip
    total = Stats()
    bar = tqdm(total=args.n, unit="tournament", file=sys.stderr, disable=args.no_bar)
    if jobs == 1:
        for wk in work:
            total.merge(run_range(wk))
            bar.update(wk[3] - wk[2])
    else:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            for part in pool.imap_unordered(run_range, work):
                total.merge(part)
                bar.update(part.n)
                if args.progress:
                    el = time.perf_counter() - t0
                    print(f"... {total.n:,} done in {el:.0f} s", file=sys.stderr, flush=True)
                    print(report(cfg, total, args.buy_in, el, jobs), file=sys.stderr, flush=True)
    bar.close()
    seconds = time.perf_counter() - t0
    print(report(cfg, total, args.buy_in, seconds, jobs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Played", "Stats", "chi_square", "main", "play", "tournament_seed"]

"""Math sheet of a pay table: ``python -m electric_math.mathsheet [config.yaml]``.

Prints, per multiplier, its hit frequency and contribution to E[multiplier]; the exact
E[multiplier]; the RTP of the prize pool against net and gross buy-ins; the standard
deviation of the prize pool per tournament (in buy-ins); and how far the prize reserve can
swing, by a seeded Monte Carlo of many runs of 1,000,000 tournaments each.

The reserve receives ``seats × net buy-in`` per tournament and pays the prize pool
(``multiplier × buy-in``). The simulation draws each run in blocks of ``--block`` tournaments
(multinomial counts per block, exact for the block totals); the maximum drawdown is measured
at block ends, which can miss an intra-block dip of the order of the block's small-multiplier
noise (about ``sqrt(block)`` buy-ins) — negligible beside the swings reported. It needs numpy
(a dev dependency, present with scipy); without it the analytic figures are still printed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from fractions import Fraction

from electric_domain.tournament.config import ConfigError, TournamentConfig, load_config


@dataclass(frozen=True, slots=True)
class ReserveSwing:
    """Distribution of the maximum drawdown of the prize reserve (in buy-ins)."""

    runs: int
    tournaments_per_run: int
    block: int
    p50: float
    p99: float
    p999: float
    worst: float
    final_p01: float
    final_p99: float
    seconds: float


def moments(cfg: TournamentConfig) -> tuple[Fraction, Fraction, Fraction]:
    """E[m], Var[m] (exact) and the target seats × (1 − rake)."""
    pt = cfg.pay_table
    e = pt.expected_multiplier()
    return e, pt.second_moment() - e * e, cfg.seats * (1 - cfg.rake)


def simulate_reserve(
    cfg: TournamentConfig,
    *,
    runs: int = 10_000,
    tournaments: int = 1_000_000,
    block: int = 1000,
    seed: int = 20261129,
) -> ReserveSwing:
    """Monte Carlo of the reserve's maximum drawdown over ``tournaments`` per run."""
    import numpy as np  # dev dependency, imported lazily

    t0 = time.perf_counter()
    pt = cfg.pay_table
    probs = np.array([e.weight for e in pt.entries], dtype=np.float64) / pt.weight_total
    # reserve change per tournament, in units of buy-in / denominator, kept integer:
    _, _, target = moments(cfg)
    den = target.denominator
    delta = np.array([target.numerator - e.multiplier * den for e in pt.entries], dtype=np.int64)
    rng = np.random.default_rng(seed)
    blocks = tournaments // block
    drawdowns = np.empty(runs, dtype=np.float64)
    finals = np.empty(runs, dtype=np.float64)
    chunk = max(1, 2_000_000 // blocks)
    done = 0
    while done < runs:
        n = min(chunk, runs - done)
        counts = rng.multinomial(block, probs, size=(n, blocks))
        steps = counts.astype(np.int64) @ delta
        path = np.cumsum(steps, axis=1)
        peak = np.maximum.accumulate(np.maximum(path, 0), axis=1)
        drawdowns[done : done + n] = (peak - path).max(axis=1) / den
        finals[done : done + n] = path[:, -1] / den
        done += n
    q = np.quantile(drawdowns, [0.5, 0.99, 0.999])
    f = np.quantile(finals, [0.01, 0.99])
    return ReserveSwing(
        runs,
        blocks * block,
        block,
        float(q[0]),
        float(q[1]),
        float(q[2]),
        float(drawdowns.max()),
        float(f[0]),
        float(f[1]),
        time.perf_counter() - t0,
    )


def render(cfg: TournamentConfig, swing: ReserveSwing | None) -> str:
    pt = cfg.pay_table
    e, var, target = moments(cfg)
    sd = math.sqrt(var)
    lines: list[str] = []
    w = lines.append
    w(f"Electric Poker math sheet — config {cfg.version}")
    w(f"seats {cfg.seats}, rake {cfg.rake_bps / 100:.2f}% of the gross buy-in")
    w("")
    w(
        f"{'mult':>7} {'weight':>8} {'prob':>10} {'1 in':>11} {'levels':>6} {'clock':>6} "
        f"{'shares':>10} {'E contrib':>10} {'% of E':>7}"
    )
    for en in pt.entries:
        p = Fraction(en.weight, pt.weight_total)
        c = en.multiplier * p
        w(
            f"{en.multiplier:>6}x {en.weight:>8} {float(p) * 100:>9.4f}% "
            f"{float(1 / p):>11,.1f} {en.levels:>6} "
            f"{en.levels * cfg.level_duration_ms // 60000:>4}m "
            f"{'/'.join(str(s) for s in en.shares):>10} {float(c):>10.6f} "
            f"{float(c / e) * 100:>6.2f}%"
        )
    w(f"{'total':>7} {sum(x.weight for x in pt.entries):>8} (weight_total {pt.weight_total})")
    w("")
    w(f"E[multiplier]            = {float(e):.6f}  (exact {e})")
    w(f"target seats×(1−rake)    = {float(target):.6f}  (exact {target})")
    w(f"RTP vs net buy-ins       = {float(e / target) * 100:.4f}%")
    w(f"RTP vs gross buy-ins     = {float(e / cfg.seats) * 100:.4f}%")
    w(f"house edge (rake)        = {float(cfg.rake) * 100:.4f}% of gross")
    w(f"SD of prize pool         = {sd:.4f} buy-ins per tournament (variance {float(var):.4f})")
    w(f"SD over 1,000,000 tourn. = {sd * 1000:,.0f} buy-ins (zero expected drift)")
    w("")
    w("per buy-in tier (cents):")
    w(
        f"{'buy-in':>8} {'rake':>6} {'net×seats':>10} {'E[pool]':>10} "
        f"{'min pool':>9} {'max pool':>11}"
    )
    for t in cfg.buy_ins:
        w(
            f"{t.buy_in_cents:>8} {t.rake_cents:>6} {t.net_cents * cfg.seats:>10} "
            f"{float(e * t.buy_in_cents):>10.2f} {pt.entries[0].multiplier * t.buy_in_cents:>9} "
            f"{pt.entries[-1].multiplier * t.buy_in_cents:>11,}"
        )
    w("")
    if swing is None:
        w("prize reserve swing: skipped (numpy not available or --runs 0)")
    else:
        w(
            f"prize reserve swing (Monte Carlo, {swing.runs:,} runs × "
            f"{swing.tournaments_per_run:,} tournaments, block {swing.block}, "
            f"{swing.seconds:.1f} s):"
        )
        w(f"  max drawdown p50    = {swing.p50:,.0f} buy-ins")
        w(f"  max drawdown p99    = {swing.p99:,.0f} buy-ins")
        w(f"  max drawdown p99.9  = {swing.p999:,.0f} buy-ins")
        w(f"  max drawdown worst  = {swing.worst:,.0f} buy-ins")
        w(f"  final balance p1..p99 = {swing.final_p01:,.0f} .. {swing.final_p99:,.0f} buy-ins")
        for t in cfg.buy_ins:
            w(
                f"  ${t.buy_in_cents / 100:>5.2f} tier: p99.9 drawdown "
                f"${swing.p999 * t.buy_in_cents / 100:,.0f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m electric_math.mathsheet")
    ap.add_argument("config", nargs="?", help="YAML config (default: packaged electric-v1)")
    ap.add_argument("--runs", type=int, default=10_000, help="Monte Carlo runs (0 to skip)")
    ap.add_argument("--tournaments", type=int, default=1_000_000)
    ap.add_argument("--block", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    swing: ReserveSwing | None = None
    if args.runs > 0:
        try:
            swing = simulate_reserve(
                cfg,
                runs=args.runs,
                tournaments=args.tournaments,
                block=args.block,
                seed=args.seed,
            )
        except ImportError:
            swing = None
    print(render(cfg, swing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

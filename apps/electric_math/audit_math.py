"""``electric-audit math {electric,thb,uth} [--json] [--recompute]``.

``electric`` prints the Electric Poker pay-table math sheet (exact E[multiplier], variance,
RTP, and the prize-reserve swing by Monte Carlo); ``thb`` and ``uth`` print the exact figures
of the house-banked games from the stored enumeration (``apps/electric_math/data``), or
recompute them from scratch with ``--recompute`` (the full enumeration, minutes). Heavy
modules are imported only when needed, so the rest of ``electric-audit`` stays light.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
ORDER = {
    "uth": ("ev_per_ante", "ev_per_ante_decimal", "rtp_ante", "avg_stake", "rtp_total", "sd",
            "p_play_4x", "p_play_3x", "p_play_2x", "p_play_1x", "p_fold", "trips_rtp"),
    "thb": ("ev_per_ante", "ev_per_ante_decimal", "rtp_ante", "avg_stake", "rtp_total", "sd",
            "p_call_flop", "p_bet_turn", "p_bet_river"),
}  # fmt: skip


class StaleFigures(Exception):
    """The stored enumeration was made for another version of the casino config."""


def add_parser(sub: Any) -> None:
    """Register the ``math`` subcommand on an argparse sub-parser set."""
    p = sub.add_parser("math", help="exact game math: electric pay table, THB, UTH")
    p.add_argument("game", choices=("electric", "thb", "uth"))
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--recompute", action="store_true", help="thb/uth: run the enumeration")
    p.add_argument("--runs", type=int, default=1000, help="electric: Monte Carlo runs")


def electric_json(runs: int) -> dict[str, Any]:
    from electric_domain.tournament.config import load_config

    from electric_math import mathsheet

    cfg = load_config()
    e, var, target = mathsheet.moments(cfg)
    out: dict[str, Any] = {
        "config_version": cfg.version,
        "e_multiplier": f"{e.numerator}/{e.denominator}",
        "e_multiplier_decimal": f"{float(e):.7f}",
        "variance": f"{var.numerator}/{var.denominator}",
        "sd": f"{float(var) ** 0.5:.7f}",
        "rtp_net": f"{float(e / target):.7f}",
        "rtp_gross": f"{float(e / cfg.seats):.7f}",
    }
    if runs > 0:
        s = mathsheet.simulate_reserve(cfg, runs=runs)
        out["reserve_max_drawdown_p99_buy_ins"] = round(s.p99, 1)
        out["reserve_max_drawdown_p999_buy_ins"] = round(s.p999, 1)
    return out


def game_doc(game: str, recompute: bool) -> dict[str, Any]:
    if recompute:
        from electric_domain.casino.common.config import load_config

        from electric_math.run import compute

        return compute(load_config(), {game})[game]
    from electric_domain.casino.common.config import load_config

    doc: dict[str, Any] = json.loads((DATA / f"{game}.json").read_text("utf-8"))
    current = load_config().version
    if doc["config_version"] != current:
        # The stored figures belong to one pay-table version; printing them for another would
        # certify math that was never computed.
        raise StaleFigures(
            f"stored {game} figures are for config v{doc['config_version']}, the config is "
            f"v{current}: regenerate with `{doc['command']}` or pass --recompute"
        )
    return doc


def run(args: argparse.Namespace) -> int:
    if args.game == "electric":
        if args.json:
            print(json.dumps(electric_json(args.runs), indent=1))
            return 0
        from electric_math import mathsheet

        return mathsheet.main(["--runs", str(args.runs)])
    try:
        doc = game_doc(args.game, args.recompute)
    except StaleFigures as stale:
        print(f"error: {stale}", file=sys.stderr)
        return 2
    figures = doc["figures"]
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    title = {"thb": "Texas Hold'em Bonus (seed 001)", "uth": "Ultimate Texas Hold'em (seed 004)"}
    print(f"{title[args.game]} — exact enumeration, optimal play, config v{doc['config_version']}")
    for key in ORDER[args.game]:
        exact = figures["exact"].get(key, "")
        print(f"  {key:<20} {figures[key]:<14} {exact if key != 'ev_per_ante' else ''}")
    print(f"  (regenerate: {doc['command']})")
    return 0

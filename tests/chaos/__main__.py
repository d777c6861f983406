"""``python -m tests.chaos --seed S --tournaments N --rounds M --faults K --duration T``
(``make chaos``). Exit code 0 when every invariant held; otherwise 1 and the seed to replay.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.chaos.faults import ALL_KINDS, KINDS, instances, schedule
from tests.chaos.run import ChaosConfig, run, table


def seconds(text: str) -> float:
    """``900``, ``900s``, ``15m`` or ``1h`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tournaments", type=int, default=20, help="at least this many finish")
    p.add_argument("--rounds", type=int, default=100, help="casino rounds (THB + UTH)")
    p.add_argument("--faults", type=int, default=30)
    p.add_argument("--duration", type=seconds, default=900.0, help="load bound: 900, 15m, 1h")
    p.add_argument(
        "--kinds",
        default=None,
        help=f"fault kinds, comma-separated, of {', '.join(ALL_KINDS)} (default: the first "
        f"{len(KINDS)}, and with --replicated all)",
    )
    p.add_argument(
        "--replicated",
        action="store_true",
        help="a 3-broker Kafka cluster and PostgreSQL with failover (issue 28)",
    )
    p.add_argument("--gap", type=seconds, default=6.0, help="mean seconds between faults")
    p.add_argument("--tournament-bots", type=int, default=24)
    p.add_argument("--thb-bots", type=int, default=6)
    p.add_argument("--uth-bots", type=int, default=4)
    p.add_argument(
        "--table-instances", type=int, default=2, help="table-service processes (scale-out)"
    )
    p.add_argument("--log-level", default="WARNING", help="the services' log level (INFO: more)")
    p.add_argument("--out", type=Path, default=ChaosConfig.out, help="run directories here")
    p.add_argument("--plan", action="store_true", help="print the fault schedule and exit")
    a = p.parse_args(argv)
    default = ALL_KINDS if a.replicated else KINDS
    kinds = tuple(k for k in a.kinds.split(",") if k) if a.kinds else default
    if a.plan:
        for f in schedule(a.seed, a.faults, a.duration, kinds, a.gap, instances(a.table_instances)):
            print(f)
        return 0
    cfg = ChaosConfig(
        seed=a.seed,
        tournaments=a.tournaments,
        rounds=a.rounds,
        faults=a.faults,
        duration=a.duration,
        kinds=kinds,
        gap=a.gap,
        tournament_bots=a.tournament_bots,
        thb_bots=a.thb_bots,
        uth_bots=a.uth_bots,
        table_instances=a.table_instances,
        replicated=a.replicated,
        log_level=a.log_level,
        out=a.out,
    )
    report = run(cfg, log=lambda line: print(line, flush=True))
    print()
    print(table(report))
    print(f"\nreport: {report.run_dir}/report.json")
    if report.passed:
        print(f"chaos seed {a.seed}: every invariant held")
        return 0
    print(f"chaos seed {a.seed}: FAILED (replay the schedule with --seed {a.seed})")
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m electric_math.run [--games thb,uth] [--out DIR]``: the full enumeration.

Regenerates ``apps/electric_math/data/{thb,uth}.json`` (per-class strategy tables and the
figures). About ten minutes on two cores; a progress bar shows the boards done.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from electric_domain.casino.common.config import CasinoConfig, load_config
from tqdm import tqdm

from electric_math import enumeration, solve
from electric_math.figures import thb_figures, uth_figures

DATA_DIR = Path(__file__).parent / "data"
BITS_FILE = "strategy_bits.npz"  # packed per-flop / per-turn decisions, for the simulator
COMMAND = "python -m electric_math.run  (make math)"


def compute(
    cfg: CasinoConfig, games: set[str], *, progress: bool = True
) -> dict[str, dict[str, Any]]:
    """Run the pass and solve; returns ``{game: document}``."""
    t0 = time.monotonic()
    with tqdm(total=2598960, unit="board", disable=not progress, smoothing=0.05) as bar:
        acc = enumeration.run_pass(
            solve.blind_half_units(cfg),
            cfg.thb.ante_pays_from,
            do_uth="uth" in games,
            do_thb="thb" in games,
            progress=bar.update,
        )
    docs: dict[str, dict[str, Any]] = {}
    meta = {"config_version": cfg.version, "command": COMMAND}
    bits = {
        "uth_flop": np.zeros((169, 22100), np.bool_),
        "thb_turn": np.zeros((169, 22100), np.uint8),
        "thb_river": np.zeros((169, 270725), np.uint8),
    }
    if "uth" in games:
        rows = solve.uth_classes(acc["fa"], acc["pa"], acc["tr"], bits["uth_flop"])
        docs["uth"] = {
            "game": "uth",
            **meta,
            "figures": uth_figures(rows, solve.trips_units(cfg)),
            "classes": rows,
        }
    if "thb" in games:
        rows = solve.thb_classes(acc["sq"], bits["thb_turn"], bits["thb_river"])
        docs["thb"] = {"game": "thb", **meta, "figures": thb_figures(rows), "classes": rows}
    for doc in docs.values():
        doc["seconds"] = round(time.monotonic() - t0, 1)
    docs["_bits"] = {name: np.packbits(b.astype(np.bool_), axis=1) for name, b in bits.items()}
    return docs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m electric_math.run", description=__doc__)
    ap.add_argument("--games", default="thb,uth")
    ap.add_argument("--out", type=Path, default=DATA_DIR)
    ap.add_argument("--config", type=Path, default=None)
    args = ap.parse_args(argv)
    games = set(args.games.split(","))
    docs = compute(load_config(args.config), games)
    args.out.mkdir(parents=True, exist_ok=True)
    bits = docs.pop("_bits")
    if games == {"thb", "uth"}:
        np.savez_compressed(args.out / BITS_FILE, **bits)
    for game, doc in docs.items():
        path = args.out / f"{game}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"{game}: {json.dumps(doc['figures']['exact'])}  -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

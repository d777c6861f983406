"""The soak run's samples as CSV, JSON and a PNG (one panel per quantity)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.soak.bounds import columns

PANELS = (
    ("rss_mb", "RSS (MiB)"),
    ("fds", "open file descriptors"),
    ("db_mb", "database size (MiB)"),
    ("lag", "Kafka consumer lag (messages)"),
    ("series", "metric series"),
    ("applied_rows", "de-dup records (rows)"),
)


def write_csv(rows: Sequence[Mapping[str, float]], path: Path) -> None:
    names = ["t", "phase", *sorted({k for r in rows for k in r} - {"t", "phase"})]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in names})


def write_json(summary: Mapping[str, Any], rows: Sequence[Mapping[str, float]], path: Path) -> None:
    path.write_text(json.dumps({**summary, "samples": list(rows)}, indent=1))


def _short(col: str, namespace: str) -> str:
    name = col.split(".", 1)[1]
    return name[len(namespace) + 1 :] if namespace and name.startswith(namespace) else name


def plot(rows: Sequence[Mapping[str, float]], path: Path, title: str, namespace: str = "") -> None:
    """Seven panels (the six of :data:`PANELS` and the held tables) over minutes."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 2, figsize=(13, 13), sharex=True)
    flat = list(axes.flat)
    load_end = max((r["t"] for r in rows if r.get("phase", 1) == 1), default=0.0) / 60
    for ax, (prefix, label) in zip(flat, PANELS, strict=False):
        for col in columns(rows, prefix):
            pts = [(r["t"] / 60, r[col]) for r in rows if col in r]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=_short(col, namespace))
        ax.set_title(label, fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
    ax = flat[len(PANELS)]
    for col, label in (("tables_in_memory", "tables in memory"), ("live_tables", "live tables")):
        pts = [(r["t"] / 60, r[col]) for r in rows if col in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    ax.set_title("table service: tables held", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax = flat[len(PANELS) + 1]
    for col in columns(rows, "events"):
        pts = [(r["t"] / 60, r[col]) for r in rows if col in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=_short(col, namespace))
    ax.set_title("events stored", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    for ax in flat:
        ax.axvline(load_end, color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("minutes (dotted: load stops)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)

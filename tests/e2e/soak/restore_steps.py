"""Steps of the backup/restore test (issue 18 item 4), as an operator runs them
(docs/chaos.md, "Backup and restore"): ``deploy/backup.sh`` for dumps, a fresh cluster and
restores; ``electric_eventlog.reimport`` for the events after the dump; every service's
projection rebuild; ``electric-audit verify`` as a separate process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("registration", "table", "wallet", "payout")


def backup_sh(*args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        ["bash", str(ROOT / "deploy/backup.sh"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-4000:])
    return proc.stdout


def verify(
    stores: Sequence[str], kafka: str, namespace: str, keys: Path
) -> tuple[int, list[dict[str, Any]], str]:
    """``electric-audit verify --json`` over the stores and the run's topics."""
    args = [a for url in stores for a in ("--store", url)]
    proc = subprocess.run(
        [sys.executable, "-m", "electric_audit.cli", "verify", *args, "--kafka", kafka,
         "--namespace", namespace, "--checkpoint-keys", str(keys), "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    results = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    return proc.returncode, results, proc.stderr[-3000:]


def verify_until_clean(
    stores: Sequence[str], kafka: str, namespace: str, keys: Path, budget: float = 120
) -> list[dict[str, Any]]:
    """Verify until 0 failures (the relays publish the last events a moment after they are
    stored) or the budget is spent; returns the last results."""
    deadline = time.monotonic() + budget
    while True:
        code, results, err = verify(stores, kafka, namespace, keys)
        failed = [r for r in results if r.get("failed")]
        if (code == 0 and results and not failed) or time.monotonic() > deadline:
            assert code == 0 and results and not failed, (code, failed, err)
            return results
        time.sleep(3)


def topic_events(kafka: str, namespace: str) -> dict[str, list[Any]]:
    """Every envelope of each service's topic (first copy of each event)."""
    from electric_eventlog.reimport import topic_envelopes
    from electric_eventlog.topics import topic_for

    async def read() -> dict[str, list[Any]]:
        return {s: await topic_envelopes(kafka, topic_for(s), namespace) for s in SERVICES}

    return asyncio.run(read())


def reimport_all(urls: dict[str, str], envelopes: dict[str, list[Any]]) -> dict[str, int]:
    """Append to each restored store the events of its topic it lacks; count per service."""
    from electric_eventlog import create_engine
    from electric_eventlog.reimport import reimport

    added = {}
    for service, url in urls.items():
        engine = create_engine(url)
        try:
            added[service] = reimport(engine, service, envelopes[service])
        finally:
            engine.dispose()
    return added


def rebuild(service: str, url: str) -> tuple[list[str], list[str]]:
    """``service``'s projections rebuilt from its events by its own
    ``electric_<service>.store.projections`` (the table's: ``electric_table.projections``;
    the wallet's ledger, registration's lobby, the table service's tables and rounds,
    payout's prizes and wins): the differences
    between tables and events before the rebuild, and after it."""
    import importlib

    from electric_eventlog import EventStore, create_engine

    # The table service's projector sits above its store (it folds the casino's records
    # too, and its store imports nothing above it: issue 25's layer contracts).
    name = "projections" if service == "table" else "store.projections"
    module = importlib.import_module(f"electric_{service}.{name}")
    engine = create_engine(url)
    try:
        events = EventStore(engine, producer=service)
        before: list[str] = module.rebuild_and_compare(engine, events)
        module.rebuild_projections(engine, events)
        return before, module.rebuild_and_compare(engine, events)
    finally:
        engine.dispose()


def irreparable(service: str, differences: Sequence[str]) -> list[str]:
    """The differences a rebuild cannot repair because the state was never in an event,
    each needing an operator action before traffic resumes (docs/chaos.md, section 5):
    registration's tables whose secret multiplier seed or prepared start was only in a lost
    row (cancel them), the table service's open casino rounds whose deck seed was only in a
    lost row (void them)."""
    if service == "registration":
        from electric_registration.store.projections import NEEDS_CANCEL

        return [d for d in differences if d.endswith(NEEDS_CANCEL)]
    if service == "table":
        from electric_table.projections import NOT_REBUILDABLE

        return [d for d in differences if NOT_REBUILDABLE in d]
    return []

"""The auditor's step of the four-process end-to-end test (issue 14): ``electric-audit`` as a
separate process over this run's Kafka topics and the four PostgreSQL stores.

* ``verify`` over the topics and the stores (with the services' checkpoint keys): 0 failures
  (retried for a while: the outbox relays publish the last events a moment after they are
  stored);
* ``export --validate`` of every hand from the topics: pokerkit replays every PHH hand to
  the recorded stacks and reads every PokerStars-style hand; both files are read back here
  too with pokerkit alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from electric_audit.validate import ante_parser
from pokerkit.notation import HandHistory

SERVICES = ("registration", "table", "wallet", "payout")


def _cli(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "electric_audit.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    return proc.returncode, lines, proc.stderr[-3000:]


def audit_run(cluster: Any, kafka_bootstrap: str, out: Path, budget: float = 90.0) -> int:
    """Run the auditor's checks; returns the number of hands exported and validated
    (every hand of the run: the topics hold only this run's namespace)."""
    procs = cluster.procs
    stores = [arg for name in SERVICES for arg in ("--store", procs[name].db_url)]
    kafka = ["--kafka", kafka_bootstrap, "--namespace", cluster.namespace]
    keys = ["--checkpoint-keys", str(procs["table"].log_path.parent / "keys")]
    deadline = time.monotonic() + budget
    while True:
        code, results, err = _cli("verify", *stores, *kafka, *keys, "--json")
        failed = [r for r in results if r.get("failed")]
        if (code == 0 and not failed) or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert code == 0 and not failed and results, (code, failed, err)
    checked = {r["check"]: r["checked"] for r in results}
    assert checked["store-topic"] > 0 and checked["decks"] > 0, checked

    code, lines, err = _cli("export", *kafka, "--out", str(out), "--validate", "--json")
    report = {k: v for line in lines for k, v in line.items()}
    assert code == 0, (report, err)
    hands = int(report["exported"])
    assert hands > 0 and hands == report["validated_phh"] == report["validated_pokerstars"]
    assert report["failed"] == 0 and report["validation_failed"] == 0, report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phh = list(HandHistory.loads_all((out / "hands.phhs").read_text(encoding="utf-8")))
        assert len(phh) == hands
        for hh in phh:
            assert list(list(hh)[-1].stacks) == list(hh.finishing_stacks), hh.user_defined_fields
        text = (out / "hands.txt").read_text(encoding="utf-8")
        assert len(list(ante_parser()(text, error_status=True))) == hands
    return hands

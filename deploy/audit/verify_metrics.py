"""Runs ``electric-audit verify`` and writes its result as Prometheus metrics (a text file).

    python deploy/audit/verify_metrics.py [--out DIR] -- --kafka 127.0.0.1:9092 [--store URL ...]

Everything after ``--`` goes to ``electric-audit verify`` (sources: ``--store``, ``--kafka``,
``--namespace``; ``--json`` is added). The result is written atomically to
``DIR/electric_audit_verify.prom`` (default ``var/observability/textfile``, which
deploy/observability.sh serves to Prometheus with ``textfile_exporter.py``):

- ``electric_audit_verify_last_run_timestamp_seconds``: when the last run ended;
- ``electric_audit_verify_success``: 1 when every check passed, 0 when a check failed or the
  run could not read its sources (exit status 2);
- ``electric_audit_verify_exit_code``: 0 pass, 1 a check failed, 2 usage/connection error;
- ``electric_audit_verify_last_success_timestamp_seconds``: the last run that passed (kept
  from the previous file across failed runs; absent until one passed);
- ``electric_audit_verify_duration_seconds``;
- ``electric_audit_verify_check_failures{check}``: failed items per check of the last run
  (``electric_audit_verify_check_checked{check}``: items checked).

Alerts ``AuditVerifyFailed`` and ``AuditVerifyStale`` read them. Schedule it (cron or a
systemd timer), e.g. hourly: ``17 * * * * cd /srv/electric && .venv/bin/python
deploy/audit/verify_metrics.py -- --kafka 127.0.0.1:9092``. Exits with verify's status.

``--every SECONDS`` runs it again and again, SECONDS apart (end of one run to the start of the
next), until SIGTERM (or ``--runs N`` runs): docker-compose's ``audit`` service, which has no
cron, uses it. Exits with the last run's status.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FILE_NAME = "electric_audit_verify.prom"
_LAST_SUCCESS = re.compile(r"^electric_audit_verify_last_success_timestamp_seconds (\S+)$", re.M)


def previous_success(path: Path) -> float | None:
    """The last-success time recorded in the previous file, if any."""
    try:
        match = _LAST_SUCCESS.search(path.read_text("utf-8"))
    except OSError:
        return None
    return float(match.group(1)) if match else None


def parse_checks(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines of ``verify --json`` that describe a check."""
    checks = []
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("check"), str):
            checks.append(record)
    return checks


def render(
    *, code: int, ended: float, duration: float, checks: list[dict[str, Any]], last_ok: float | None
) -> str:
    """The text file for one run."""

    def gauge(name: str, doc: str, samples: list[tuple[str, float]]) -> list[str]:
        lines = [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
        lines += [f"{name}{labels} {value:.15g}" for labels, value in samples]
        return lines

    ok = code == 0
    if ok:
        last_ok = ended
    out: list[str] = []
    out += gauge(
        "electric_audit_verify_last_run_timestamp_seconds",
        "End of the last verify run.",
        [("", ended)],
    )
    out += gauge(
        "electric_audit_verify_success",
        "1 if the last verify passed every check.",
        [("", 1.0 if ok else 0.0)],
    )
    out += gauge(
        "electric_audit_verify_exit_code",
        "Exit status of the last verify run.",
        [("", float(code))],
    )
    out += gauge(
        "electric_audit_verify_duration_seconds",
        "Duration of the last verify run.",
        [("", duration)],
    )
    if last_ok is not None:
        out += gauge(
            "electric_audit_verify_last_success_timestamp_seconds",
            "End of the last verify run that passed.",
            [("", last_ok)],
        )
    fails = [(f'{{check="{c["check"]}"}}', float(c.get("failed") or 0)) for c in checks]
    checked = [(f'{{check="{c["check"]}"}}', float(c.get("checked") or 0)) for c in checks]
    out += gauge(
        "electric_audit_verify_check_failures", "Failed items per check (last run).", fails
    )
    out += gauge(
        "electric_audit_verify_check_checked", "Items checked per check (last run).", checked
    )
    return "\n".join(out) + "\n"


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".verify-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)  # a scrape sees the old file or the new one, never half


def run_once(args: argparse.Namespace, verify_args: list[str]) -> int:
    """One ``electric-audit verify`` run, its result written to ``args.out``."""
    command = [args.python, "-m", "electric_audit.cli", "verify", "--json", *verify_args]
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    duration = time.monotonic() - start
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    sys.stdout.flush()
    path = args.out / FILE_NAME
    text = render(
        code=proc.returncode,
        ended=time.time(),
        duration=duration,
        checks=parse_checks(proc.stdout),
        last_ok=previous_success(path),
    )
    write_atomically(path, text)
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    verify_args = args_in[args_in.index("--") + 1 :] if "--" in args_in else []
    own = args_in[: args_in.index("--")] if "--" in args_in else args_in
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "observability" / "textfile")
    parser.add_argument("--python", default=sys.executable, help="interpreter with electric_audit")
    parser.add_argument(
        "--every", type=float, default=0.0, help="repeat, SECONDS between runs (0: run once)"
    )
    parser.add_argument("--runs", type=int, default=0, help="with --every: stop after N runs")
    args = parser.parse_args(own)
    if args.every < 0 or args.runs < 0:
        parser.error("--every and --runs must not be negative")
    stop = threading.Event()
    if args.every:  # a container's stop (SIGTERM) ends the loop between runs
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runs = 0
    while True:
        code = run_once(args, verify_args)
        runs += 1
        if not args.every or runs == args.runs or stop.wait(args.every):
            return code


if __name__ == "__main__":
    sys.exit(main())

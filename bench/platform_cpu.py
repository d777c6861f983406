"""CPU per Act by process (issue 26 item 6): what each process of the platform spent in the
bots' timed window, divided by the Acts timed in it.

The load process takes a snapshot of every process's CPU time (user + system, all threads:
``/proc/<pid>/stat``) when the window opens and when it closes. Processes are named by the
bench (the services: ``name=pid``) or found by what they run: every ``postgres`` process
(the server and its backends) and every JVM running ``kafka.Kafka``. A PostgreSQL backend
that ends inside the window takes its CPU with it, so that figure is a floor (the services
keep pooled connections). The bots are the load process itself. Linux only (``/proc``);
elsewhere the rows are left out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # The command name (field 2) may hold spaces: the fields after it start past its ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _matching(comm: str = "", cmdline: str = "") -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if comm and (entry / "comm").read_text().strip() != comm:
                continue
            if cmdline and cmdline not in (entry / "cmdline").read_bytes().decode(errors="replace"):
                continue
        except OSError:
            continue
        out.append(int(entry.name))
    return out


def snapshot(named: Mapping[str, int], *, infra: bool) -> dict[str, float]:
    """CPU seconds so far per process group: each of ``named``, ``bots`` (this process)
    and, with ``infra``, ``postgres`` and ``kafka``."""
    if not Path("/proc/self/stat").exists():
        return {}
    got = {name: _cpu_seconds(pid) for name, pid in named.items()}
    times = os.times()
    got["bots"] = times.user + times.system
    if infra:
        got["postgres"] = sum(_cpu_seconds(p) for p in _matching(comm="postgres"))
        got["kafka"] = sum(_cpu_seconds(p) for p in _matching(cmdline="kafka.Kafka"))
    return got


def per_act_ms(
    before: Mapping[str, float], after: Mapping[str, float], acts: int
) -> dict[str, float]:
    """CPU milliseconds per Act by group, and ``platform``: their sum."""
    if acts <= 0 or not before:
        return {}
    out = {k: (after.get(k, 0.0) - v) * 1000 / acts for k, v in before.items()}
    out["platform"] = sum(out.values())
    return out


def parse_named(text: str) -> dict[str, int]:
    """``name=pid,name=pid`` → {name: pid}."""
    out = {}
    for part in filter(None, text.split(",")):
        name, _, pid = part.partition("=")
        out[name] = int(pid)
    return out

"""What the operations test runs through Prometheus: every panel query of every dashboard and
every rule expression, with Grafana's variables replaced as Grafana would."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
DASHBOARDS = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
RULE_FILES = (
    ROOT / "deploy" / "prometheus" / "alerts.yml",
    ROOT / "deploy" / "prometheus" / "infra-alerts.yml",
)
#: Grafana's variables: every service selected; a rate window of several scrape intervals
#: (the test scrapes every 5 s, the Kafka JMX agent every 30 s).
VARIABLES = {"$service": "registration|table|wallet|payout", "$__rate_interval": "2m"}


@dataclass(frozen=True)
class Panel:
    dashboard: str
    title: str
    exprs: tuple[str, ...]


def substitute(expr: str) -> str:
    for name, value in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


def panels() -> list[Panel]:
    """Every non-row panel with its queries, dashboard by dashboard."""
    out: list[Panel] = []

    def walk(name: str, items: list[dict[str, Any]]) -> Iterator[Panel]:
        for p in items:
            exprs = tuple(substitute(t["expr"]) for t in p.get("targets", []) if t.get("expr"))
            if p.get("type") != "row":
                yield Panel(name, str(p["title"]), exprs)
            yield from walk(name, p.get("panels", []))

    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        out.extend(walk(path.stem, dashboard["panels"]))
    return out


def rules() -> list[tuple[str, str]]:
    """(name, expression) of every alerting and recording rule."""
    out = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                out.append((str(rule.get("alert") or rule["record"]), str(rule["expr"])))
    return out


def has_data(result: list[dict[str, Any]]) -> bool:
    """At least one sample that is a number (NaN = a 0/0 ratio: no data to show), in an
    instant (``value``) or a range (``values``) result."""
    samples = [v for r in result for v in (r["values"] if "values" in r else [r["value"]])]
    return any(not math.isnan(float(v[1])) for v in samples)

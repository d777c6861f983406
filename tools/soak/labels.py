"""Metrics series must not grow with the number of tables (issue 18, "Bounded resources").

A label whose values are table, tournament, round, player or request ids makes one series
per id: the scrape and Prometheus grow with every tournament. After a run, every label value
of every service's ``/metrics`` is checked against the ids the run used (players, tables,
UTH rounds) and against the shape of a generated id (a UUID or 32 hex digits); and each
label name may take at most :data:`MAX_VALUES` values (gRPC methods and codes, tiers,
topics, histogram buckets are all small fixed sets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tools.soak.probe import scrape

ID_SHAPE = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
MAX_VALUES = 60


def label_problems(
    samples_by_service: Mapping[str, Iterable[tuple[str, dict[str, str], float]]],
    ids: Iterable[str],
) -> list[str]:
    """Every label value that names an id of the run or looks like one, and every label
    with more than :data:`MAX_VALUES` values (empty: bounded)."""
    wanted = {i for i in ids if len(i) >= 6}
    bad: list[str] = []
    for service, samples in samples_by_service.items():
        values: dict[tuple[str, str], set[str]] = {}
        for metric, labels, _ in samples:
            for name, value in labels.items():
                values.setdefault((metric, name), set()).add(value)
                if ID_SHAPE.search(value) or any(i in value for i in wanted):
                    bad.append(f"{service}: {metric}{{{name}={value!r}}} names an id")
        for (metric, name), vals in values.items():
            if len(vals) > MAX_VALUES:
                bad.append(f"{service}: {metric} label {name} has {len(vals)} values")
    return sorted(set(bad))


def scrape_all(ports: Mapping[str, int]) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """Every service's ``/metrics`` samples."""
    return {name: scrape(port) for name, port in ports.items()}

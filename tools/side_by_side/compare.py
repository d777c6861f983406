"""Normalise two trees' results and find the first difference.

What is normalised, and why (docs/testing.md, "Side by side"):

* ids made by ``uuid4`` (event ids, and the causation ids and UTH round ids that repeat
  them) and any other 32-hex or UUID-shaped token (THB round ids, bet ids): replaced by
  ``id#<n>``, numbered in order of first appearance on each side. Both trees run with the
  same seeded ``uuid4`` (``determinism.py``), so they match anyway when both ask for ids in
  the same order; the ordinals keep a change in how many ids a tree draws (not a behaviour)
  from showing as a difference everywhere after it.
* an envelope's ``hash`` and ``prev_hash`` are left out: they hash the raw event id. Each
  side's chains are still checked (``electric-audit verify``'s ``chains`` check, compared),
  and the raw Kafka message bytes are compared too and counted (``bytes identical``).
* the path of each side's store in the audit's output: replaced by ``<store>``.

Nothing else: times are the virtual clock's on both sides, so ``occurred_at``, deadlines and
``server_time`` are compared as they are.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"
)


@dataclass
class Normaliser:
    """One side's id ordinals (module doc)."""

    paths: tuple[str, ...] = ()
    ids: dict[str, str] = field(default_factory=dict)

    def _id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"id#{len(self.ids) + 1}")

    def text(self, s: str) -> str:
        for path in self.paths:
            s = s.replace(path, "<store>")
        return _ID.sub(self._id, s)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.walk(v) for k, v in value.items()}
        return value

    def published(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for r in records:
            envelope = {k: v for k, v in r["envelope"].items() if k not in ("hash", "prev_hash")}
            out.append(
                self.walk(
                    {
                        "topic": r["topic"],
                        "key": r["key"],
                        "envelope": envelope,
                        "payload": r["payload"],
                    }
                )
            )
        return out


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """Where ``old`` and ``new`` first differ (a path into them), or None."""
    if type(old) is not type(new):
        return f"{path or '.'}: old {_short(old)} / new {_short(new)}"
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                side = "old" if key in old else "new"
                return f"{path}.{key}: only {side} has it"
            found = first_difference(old[key], new[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(old, list):
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(old) != len(new):
            return f"{path}: old has {len(old)} items, new {len(new)}"
        return None
    if old != new:
        return f"{path or '.'}: old {_short(old)} / new {_short(new)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def item_diff(old: list[Any], new: list[Any], *, lines: int = 40) -> str:
    """A unified diff of the first item that differs (the whole item, as JSON)."""
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a != b:
            diff = difflib.unified_diff(
                json.dumps(a, indent=1, sort_keys=True).splitlines(),
                json.dumps(b, indent=1, sort_keys=True).splitlines(),
                f"old[{i}]",
                f"new[{i}]",
                lineterm="",
                n=2,
            )
            return "\n".join(list(diff)[:lines])
    return ""


@dataclass
class Part:
    """One compared part of a scenario: its two sides and the first difference."""

    name: str
    old: list[Any]
    new: list[Any]

    @property
    def identical(self) -> bool:
        return self.old == self.new

    def report(self) -> str:
        where = first_difference(self.old, self.new, self.name)
        return f"first difference at {where}\n{item_diff(self.old, self.new)}"


def audit_lines(reports: list[dict[str, Any]]) -> list[Any]:
    """Each audit command's exit status and lines (JSON lines parsed)."""
    out: list[Any] = []
    for r in reports:
        out.append({"argv": r["argv"], "status": r["status"]})
        for line in r["lines"]:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(line)
    return out


def audit_checks(reports: list[dict[str, Any]]) -> int:
    """How many checks the audit reported (its ``check`` lines)."""
    return sum(1 for x in audit_lines(reports) if isinstance(x, dict) and "check" in x)

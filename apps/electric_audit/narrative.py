"""What the story commands (``tournament ID``, ``round ID``) share: the checked narrative
they build and the way they print money."""

from __future__ import annotations

from dataclasses import dataclass, field

from electric_audit.checks import CheckResult


def money(cents: int) -> str:
    """``$12.05`` for 1205 cents (integer arithmetic: never a float near money)."""
    return f"${cents // 100}.{cents % 100:02d}"


@dataclass
class Narrative:
    """Facts told in order, then the checks run over them. The subject's id is a field of
    each subclass; facts and results are keyword-only so that id stays the first argument."""

    facts: list[tuple[str, str]] = field(default_factory=list, kw_only=True)
    results: list[CheckResult] = field(default_factory=list, kw_only=True)

    @property
    def found(self) -> bool:
        return bool(self.facts)

    @property
    def ok(self) -> bool:
        return self.found and all(r.ok for r in self.results)

    def say(self, topic: str, text: str) -> None:
        self.facts.append((topic, text))

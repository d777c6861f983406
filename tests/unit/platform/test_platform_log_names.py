"""Every log call in libs/ and services/ names a constant event (issue 15 item 5: no free text
in ``event``, details in fields), and every such name is in the log schema, docs/logging.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}
NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")


def _is_logger(node: ast.expr) -> bool:
    """``log``, ``_log``, ``logger``, ``self.log``, ``host.log``, ``self._log`` …"""
    if isinstance(node, ast.Name):
        return "log" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "log" in node.attr.lower()
    return False


def log_calls() -> list[tuple[str, int, ast.expr | None]]:
    """``(file, line, first argument)`` of every log call under libs/ and services/."""
    out = []
    for base in ("libs", "services"):
        for path in sorted((ROOT / base).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                func = node.func if isinstance(node, ast.Call) else None
                if not isinstance(func, ast.Attribute) or func.attr not in LEVELS:
                    continue
                if not _is_logger(func.value):
                    continue
                assert isinstance(node, ast.Call)
                first = node.args[0] if node.args else None
                out.append((str(path.relative_to(ROOT)), node.lineno, first))
    return out


def test_every_log_event_is_a_constant_name_and_documented() -> None:
    calls = log_calls()
    assert len(calls) > 40
    bad = []
    names = set()
    for file, line, first in calls:
        # ``"a.b" if x else "a.c"`` names two constants; anything else must be one literal.
        options = [first.body, first.orelse] if isinstance(first, ast.IfExp) else [first]
        values = [o.value for o in options if isinstance(o, ast.Constant)]
        if len(values) == len(options) and all(
            isinstance(v, str) and NAME.match(v) for v in values
        ):
            names.update(str(v) for v in values)
            continue
        bad.append(f"{file}:{line}: {ast.unparse(first) if first is not None else '(none)'}")
    assert not bad, "log events must be constant dotted names:\n" + "\n".join(bad)
    schema = (ROOT / "docs/logging.md").read_text()
    missing = sorted(n for n in names if f"`{n}`" not in schema)
    assert not missing, f"log events missing from docs/logging.md: {missing}"

"""Each service stores its events through one module (issue 25, "one mapper per service").

An event-store append is recognised by its shape: ``<x>.append(...)`` with more than one
argument, or ``append_in_new_tx`` (a list's ``append`` takes exactly one), where ``<x>`` is not
the service's own appender module (``codec.append(...)`` is the sanctioned way in). The test
reads the services' source, so a new module that appends on its own fails it, whatever it
is called.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SERVICES = Path(__file__).resolve().parents[3] / "services"

#: Names under which a module imports its service's appender (its calls are the way in).
APPENDER_MODULES = {"codec", "journal"}

#: The one module per service that calls the event store's append.
APPENDER = {
    "payout": "electric_payout/codec.py",
    "registration": "electric_registration/codec.py",
    "table": "electric_table/journal.py",
    "wallet": "electric_wallet/codec.py",
}


def _appends(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id in APPENDER_MODULES:
            continue
        name, arity = node.func.attr, len(node.args) + len(node.keywords)
        if (name == "append" and arity > 1) or name == "append_in_new_tx":
            lines.append(node.lineno)
    return lines


def appending_modules(service: str) -> dict[str, list[int]]:
    root = SERVICES / service
    found = {}
    for path in sorted(root.glob("electric_*/**/*.py")):
        if "migrations" in path.parts:
            continue
        lines = _appends(ast.parse(path.read_text(), str(path)))
        if lines:
            found[str(path.relative_to(root))] = lines
    return found


@pytest.mark.parametrize("service", sorted(APPENDER))
def test_one_module_of_each_service_appends_to_the_event_store(service: str) -> None:
    assert list(appending_modules(service)) == [APPENDER[service]]


def test_the_shape_rule_tells_a_store_append_from_a_list_append() -> None:
    source = (
        "xs.append(1)\n"
        "store.append(conn, 's', 0, [m])\n"
        "self.store.append_in_new_tx(e, 's')\n"
        "codec.append(store, conn, facts, correlation_id='c')\n"
    )
    assert _appends(ast.parse(source)) == [2, 3]

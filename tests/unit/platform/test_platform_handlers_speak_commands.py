"""Handlers raise typed errors; the edge maps them to statuses (issue 25, item 4).

The import contract "Handlers speak commands" keeps grpc out of the handler modules; this
test closes the other door: a handler module must not import one of the platform's
transport errors (``ServiceError`` and its subclasses such as ``FailedPrecondition``), which
carry a gRPC status. It reads the modules' source, so a new import of one fails it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import electric_platform
import electric_platform.errors
import pytest
from electric_platform import ServiceError

SERVICES = Path(__file__).resolve().parents[3] / "services"

#: The handler layer of each service: where commands are decided and stored.
HANDLER_MODULES = [
    "registration/electric_registration/handlers.py",
    "wallet/electric_wallet/handlers.py",
    "payout/electric_payout/handlers.py",
    "table/electric_table/tournament/handlers.py",
    "table/electric_table/casino/thb/handlers.py",
    "table/electric_table/casino/uth/tables.py",
    "table/electric_table/casino/uth/batch.py",
    "table/electric_table/casino/uth/live.py",
]

PLATFORM = {
    "electric_platform": electric_platform,
    "electric_platform.errors": electric_platform.errors,
}


def _transport_errors(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in PLATFORM:
            module = PLATFORM[node.module]
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, type) and issubclass(value, ServiceError):
                    found.append(alias.name)
    return found


@pytest.mark.parametrize("path", HANDLER_MODULES)
def test_a_handler_module_imports_no_transport_error(path: str) -> None:
    assert _transport_errors((SERVICES / path).read_text()) == []


def test_the_check_sees_a_transport_error() -> None:
    assert _transport_errors("from electric_platform import FailedPrecondition, paging\n") == [
        "FailedPrecondition"
    ]

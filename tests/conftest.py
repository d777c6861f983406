"""Shared fixtures: real PostgreSQL and Kafka (see tests/support/infra.py for how they are found).

Area-specific fixtures belong in ``tests/<area>/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.infra import Infrastructure, fresh_database

#: Shared fixtures of tests/support: ``backend`` / ``backend_engine`` (SQLite and PostgreSQL).
pytest_plugins = ["tests.support.backends"]


@pytest.fixture(scope="session")
def _infrastructure() -> Iterator[Infrastructure]:
    infra = Infrastructure()
    try:
        yield infra
    finally:
        infra.close()


@pytest.fixture(scope="session")
def postgres_url(_infrastructure: Infrastructure) -> str:
    """SQLAlchemy URL (``postgresql+psycopg://...``) of a PostgreSQL server's ``electric`` db."""
    return _infrastructure.postgres_url()


@pytest.fixture
def fresh_pg_url(postgres_url: str) -> Iterator[str]:
    """SQLAlchemy URL of a new, empty database on that server, dropped after the test."""
    with fresh_database(postgres_url) as url:
        yield url


@pytest.fixture(scope="session")
def kafka_bootstrap(_infrastructure: Infrastructure) -> str:
    """Kafka bootstrap servers, e.g. ``127.0.0.1:9092``."""
    return _infrastructure.kafka_bootstrap()


#: Collection order by area, the end-to-end tests first. ``make test`` runs the files in
#: parallel (pytest-xdist, ``--dist loadfile``; docs/testing.md): every file is one unit of
#: work (its module fixtures are set up once), except that all of tests/e2e is ONE unit, run
#: by one worker from the start, one test at a time: each of those starts the four services
#: and bots as processes, and two at once on two cores slow each other past their time
#: bounds. The other workers share the rest meanwhile, in collection order.
_AREA_ORDER = ("e2e", "integration", "component", "property", "conformance", "unit")
SERIAL_AREA = "tests/e2e"


def _area(path: str) -> str:
    """``tests/<area>`` of a test file path relative to the root (``""`` elsewhere)."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 and parts[0] == "tests" else ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {f"tests/{area}": i for i, area in enumerate(_AREA_ORDER)}

    def order(item: pytest.Item) -> int:
        path = Path(item.path).relative_to(config.rootpath).as_posix()
        return rank.get(_area(path), len(rank))

    items.sort(key=order)  # stable: each file keeps its own order


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with tests/e2e as one unit (comment above). (xdist's own
    ``loadgroup`` cannot express it on this pytest: it renames node ids through an attribute
    pytest 9 no longer reads.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndSerialE2e(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SERIAL_AREA if _area(path) == SERIAL_AREA else path

    return FilesAndSerialE2e(config, log)

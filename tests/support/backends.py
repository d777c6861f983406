"""One database backend fixture for every store test: SQLite and PostgreSQL.

``backend`` is parametrised: each test that asks for it (or for ``backend_engine``) runs
once on a fresh SQLite file (the embedded default) and once on a fresh PostgreSQL database
(the production store; that case carries the ``integration`` marker, so ``make unit``
leaves it out and ``make integration`` runs it). A store test is written once::

    def test_balance_survives_a_restart(backend_engine: Engine) -> None:
        migrate_my_service(backend_engine)
        ...

and a class of reusable cases (like ``electric_eventlog.testing.RecorderCases``) binds to it
with an autouse fixture that sets ``self.engine = backend_engine``.

Registered for the whole test tree by ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from electric_eventlog import create_engine
from sqlalchemy import Engine

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class Backend:
    """A fresh, empty database for one test."""

    name: str
    url: str

    @property
    def concurrent_writers(self) -> bool:
        """True when transactions really run side by side (PostgreSQL); SQLite serialises
        writers on one file lock."""
        return self.name == POSTGRESQL


@pytest.fixture(
    params=[
        pytest.param(SQLITE, id=SQLITE),
        pytest.param(POSTGRESQL, id=POSTGRESQL, marks=pytest.mark.integration),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A fresh database on each backend in turn (module doc)."""
    if request.param == SQLITE:
        return Backend(SQLITE, f"sqlite:///{tmp_path / 'store.db'}")
    # The root conftest's fresh_pg_url: a new database on the test server, dropped after.
    return Backend(POSTGRESQL, str(request.getfixturevalue("fresh_pg_url")))


@pytest.fixture
def backend_engine(backend: Backend) -> Iterator[Engine]:
    """An engine on :func:`backend`'s database (the platform's ``create_engine`` settings)."""
    engine = create_engine(backend.url)
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(SQLITE, id=SQLITE),
        pytest.param(POSTGRESQL, id=POSTGRESQL, marks=pytest.mark.integration),
    ],
)
def module_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    """One fresh database on each backend in turn, shared by a whole module: a property
    test's many examples run on it (one migration, not one per example)."""
    from tests.support.infra import fresh_database

    with contextlib.ExitStack() as stack:
        if request.param == SQLITE:
            url = f"sqlite:///{tmp_path_factory.mktemp('module') / 'store.db'}"
        else:
            server = str(request.getfixturevalue("postgres_url"))
            url = stack.enter_context(fresh_database(server, prefix="module"))
        engine = create_engine(url)
        stack.callback(engine.dispose)
        yield engine

"""Shared fixtures: real PostgreSQL and Kafka (see tests/support/infra.py for how they are found).

Area-specific fixtures belong in ``tests/<area>/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

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

"""Event-log integration fixtures: a migrated engine on a fresh PostgreSQL database; unique
Kafka topic names, deleted after the test."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from electric_eventlog import create_engine, migrate
from sqlalchemy import Engine

from tests.support.kafka_topics import delete_topics


@pytest.fixture
def kafka_service_name(kafka_bootstrap: str) -> Iterator[str]:
    """A unique producer-service name; its `electric.<name>.events*` topics go at teardown."""
    name = f"evtest{uuid.uuid4().hex[:10]}"
    yield name
    asyncio.run(delete_topics(kafka_bootstrap, f"electric.{name}."))


@pytest.fixture
def pg_engine(fresh_pg_url: str) -> Iterator[Engine]:
    """An engine on a fresh database with the event log's tables; disposed after the test."""
    engine = create_engine(fresh_pg_url)
    migrate(engine)
    yield engine
    engine.dispose()

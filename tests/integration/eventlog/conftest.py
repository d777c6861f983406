"""Event-log integration fixtures: a migrated engine on a fresh PostgreSQL database; unique
Kafka topic names, deleted after the test."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from electric_eventlog import create_engine, migrate
from sqlalchemy import Engine


async def _delete_topics(bootstrap: str, prefix: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        doomed = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


@pytest.fixture
def kafka_service_name(kafka_bootstrap: str) -> Iterator[str]:
    """A unique producer-service name; its `electric.<name>.events*` topics go at teardown."""
    name = f"evtest{uuid.uuid4().hex[:10]}"
    yield name
    asyncio.run(_delete_topics(kafka_bootstrap, f"electric.{name}."))


@pytest.fixture
def pg_engine(fresh_pg_url: str) -> Iterator[Engine]:
    """An engine on a fresh database with the event log's tables; disposed after the test."""
    engine = create_engine(fresh_pg_url)
    migrate(engine)
    yield engine
    engine.dispose()

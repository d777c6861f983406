"""Test topics on the shared Kafka broker: a unique namespace per test, its topics deleted
after it (the broker outlives every run, so nothing a test creates may stay)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator

from aiokafka.admin import AIOKafkaAdminClient


async def delete_topics(bootstrap: str, prefix: str) -> None:
    """Delete every topic whose name starts with ``prefix``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        doomed = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


@contextlib.contextmanager
def topic_namespace(bootstrap: str, stem: str) -> Iterator[str]:
    """A fresh topic namespace ``<stem><8 hex>``; its topics are deleted on exit."""
    name = f"{stem}{uuid.uuid4().hex[:8]}"
    yield name
    asyncio.run(delete_topics(bootstrap, name))

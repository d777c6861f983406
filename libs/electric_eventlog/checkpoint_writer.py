"""The checkpoint writer: a service's periodic (and final) signed checkpoints of its store.

:class:`CheckpointWriter` follows the store's global log (stream id, version, hash and
position of each event: no payloads), keeps the chain heads in memory
(:class:`~electric_eventlog.checkpoint.Heads`), and every ``interval`` seconds — and once
more at shutdown, after the final outbox drain — signs a checkpoint of the heads at the last
position it read and publishes it:

* on the bus, topic ``electric.checkpoints`` (Kafka in production; the in-process bus in
  embedded mode), key = producer;
* optionally also as one JSON line per record in a file (embedded mode: the auditor reads
  the file, since an in-process bus dies with the process).

Nothing is written when the store did not move since the last checkpoint. A failed publish
is retried at the next tick with the same sequence number (sequences of one writer are
1, 2, 3, ... without gaps, so an auditor notices a missing checkpoint). The writer never
writes to the database: the anchor lives outside it (docs/audit.md, "Trust model").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Engine, select

from . import schema
from .bus import EventBus
from .checkpoint import (
    CHECKPOINT_TOPIC,
    MAX_LEAVES_PER_PART,
    Checkpoint,
    Heads,
    build_checkpoints,
    checkpoint_message,
    to_json,
)
from .engine import read_only

log = logging.getLogger(__name__)


def _now_micros() -> int:
    return time.time_ns() // 1_000


class CheckpointWriter:
    """Signs and publishes checkpoints of one store (module doc)."""

    def __init__(
        self,
        engine: Engine,
        bus: EventBus,
        *,
        producer: str,
        kid: str,
        private_key: Ed25519PrivateKey,
        interval: float = 60.0,
        topic: str = CHECKPOINT_TOPIC,
        instance_id: str = "",
        file: Path | str | None = None,
        batch_size: int = 5000,
        max_leaves: int = MAX_LEAVES_PER_PART,
        clock: Callable[[], int] = _now_micros,
    ) -> None:
        if interval <= 0:
            raise ValueError("the checkpoint interval must be positive")
        self.engine = engine
        self.bus = bus
        self.producer = producer
        self.kid = kid
        self._private_key = private_key
        self.interval = interval
        self.topic = topic
        self.instance_id = instance_id or uuid.uuid4().hex
        self.file = Path(file) if file is not None else None
        self.batch_size = batch_size
        self.max_leaves = max_leaves
        self._clock = clock
        self._heads = Heads()
        self._lock = asyncio.Lock()
        #: Sequence number of the next checkpoint; position of the last one written.
        self.sequence = 1
        self.last_position: int | None = None
        #: Every record this writer published (tests, diagnostics).
        self.written: list[Checkpoint] = []

    def _scan(self) -> None:
        """Read the events after the last position seen and update the heads."""
        events = schema.events
        columns = (
            events.c.global_position,
            events.c.stream_id,
            events.c.stream_version,
            events.c.hash,
        )
        with read_only(self.engine.connect()) as conn, conn.begin():
            while True:
                rows = conn.execute(
                    select(*columns)
                    .where(events.c.global_position > self._heads.position)
                    .order_by(events.c.global_position)
                    .limit(self.batch_size)
                ).all()
                for position, stream_id, version, hash_ in rows:
                    self._heads.apply(stream_id, version, hash_, position)
                if len(rows) < self.batch_size:
                    return

    async def write_once(self) -> list[Checkpoint]:
        """Sign and publish a checkpoint of the store as it is now; the records written
        (none when the store has not moved since the last checkpoint)."""
        async with self._lock:
            await asyncio.to_thread(self._scan)
            if self.last_position == self._heads.position:
                return []
            records = build_checkpoints(
                self._heads,
                producer=self.producer,
                instance_id=self.instance_id,
                sequence=self.sequence,
                since_position=self.last_position or 0,
                created_at_micros=self._clock(),
                kid=self.kid,
                private_key=self._private_key,
                max_leaves=self.max_leaves,
            )
            await self.bus.publish([checkpoint_message(r, self.topic) for r in records])
            if self.file is not None:
                await asyncio.to_thread(self._append_file, records)
            self.sequence += 1
            self.last_position = self._heads.position
            self.written.extend(records)
            log.info(
                "checkpoint.written",
                extra={
                    "producer": self.producer,
                    "sequence": records[0].sequence,
                    "position": records[0].global_position,
                    "streams": records[0].stream_count,
                    "root": records[0].merkle_root,
                },
            )
            return records

    def _append_file(self, records: list[Checkpoint]) -> None:
        assert self.file is not None
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with self.file.open("ab") as out:
            for record in records:
                out.write(to_json(record) + b"\n")

    async def run(self, stop: asyncio.Event) -> None:
        """Write a checkpoint now and then every ``interval`` seconds until ``stop`` is set.

        A failed write (bus or database briefly away) is logged and retried at the next tick.
        """
        while not stop.is_set():
            try:
                await self.write_once()
            except Exception:
                log.exception("checkpoint.failed", extra={"producer": self.producer})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval)

    async def close(self) -> None:
        """The final checkpoint (at shutdown, after the last events were committed)."""
        await self.write_once()

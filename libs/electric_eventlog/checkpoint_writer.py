"""The checkpoint writer: a service's periodic (and final) signed checkpoints of its store.

:class:`CheckpointWriter` follows the store's global log (stream id, version, hash and
position of each event: no payloads) and every ``interval`` seconds — and once more at
shutdown, after the final outbox drain — signs a checkpoint of the heads at the last position
it read and publishes it:

* on the bus, topic ``electric.checkpoints`` (Kafka in production; the in-process bus in
  embedded mode), key = producer;
* optionally also as one JSON line per record in a file (embedded mode: the auditor reads
  the file, since an in-process bus dies with the process).

Memory stays bounded whatever the number of streams: only the heads that changed since the
last checkpoint (its delta leaves) are kept; the Merkle root of every head is computed at
each checkpoint by streaming the heads at its position from the store in stream-id byte
order through :class:`~electric_eventlog.checkpoint.TreeHasher` (O(log n) memory; one read
of the store's events up to that position per checkpoint). Keeping every head in memory
grew a service with a stream per transfer (the wallet) by ~420 bytes per stream
(docs/chaos.md, "The wallet's memory under sustained load"). Only the last ``keep_written``
records stay in :attr:`CheckpointWriter.written`.

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
from sqlalchemy import Engine, exists, select

from . import schema
from .bus import EventBus
from .checkpoint import (
    CHECKPOINT_TOPIC,
    MAX_LEAVES_PER_PART,
    Checkpoint,
    Leaf,
    TreeHasher,
    checkpoint_message,
    sign_checkpoint,
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
        keep_written: int = 4,
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
        self.keep_written = keep_written
        #: Heads of the streams changed since the last checkpoint; last position read.
        self._changed: dict[str, Leaf] = {}
        self._position = 0
        self._lock = asyncio.Lock()
        #: Sequence number of the next checkpoint; position of the last one written.
        self.sequence = 1
        self.last_position: int | None = None
        #: For the metrics (electric_platform.checkpointing): when the last checkpoint was
        #: signed (its ``created_at``, seconds), when the writer last finished a pass (read
        #: the store, signed what was new; the start until the first pass) and passes failed.
        self.last_written_at: float | None = None
        self.last_pass_at = clock() / 1e6
        self.failures = 0
        #: The last ``keep_written`` records this writer published (tests, diagnostics).
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
                    .where(events.c.global_position > self._position)
                    .order_by(events.c.global_position)
                    .limit(self.batch_size)
                ).all()
                for position, stream_id, version, hash_ in rows:
                    self._changed[stream_id] = Leaf(stream_id, version, hash_)
                    self._position = max(self._position, position)
                if len(rows) < self.batch_size:
                    return

    def _root_at(self, position: int) -> tuple[str, int]:
        """(Merkle root, stream count) of the heads at ``position``, streamed from the store
        in stream-id byte order (``COLLATE "C"`` on PostgreSQL; SQLite compares bytes)."""
        events = schema.events
        later = events.alias("later")
        stream = events.c.stream_id
        order = stream.collate("C") if self.engine.dialect.name == "postgresql" else stream
        query = (
            select(stream, events.c.stream_version, events.c.hash)
            .where(events.c.global_position <= position)
            .where(
                ~exists().where(
                    later.c.stream_id == stream,
                    later.c.stream_version > events.c.stream_version,
                    later.c.global_position <= position,
                )
            )
            .order_by(order)
        )
        tree = TreeHasher()
        with read_only(self.engine.connect()) as conn, conn.begin():
            rows = conn.execution_options(stream_results=True, yield_per=self.batch_size)
            for stream_id, version, hash_ in rows.execute(query):
                tree.add(Leaf(stream_id, version, hash_))
        return tree.root(), tree.count

    async def write_once(self) -> list[Checkpoint]:
        """Sign and publish a checkpoint of the store as it is now; the records written
        (none when the store has not moved since the last checkpoint)."""
        async with self._lock:
            await asyncio.to_thread(self._scan)
            position = self._position
            if self.last_position == position:
                self.last_pass_at = self._clock() / 1e6
                return []
            root, count = await asyncio.to_thread(self._root_at, position)
            records = sign_checkpoint(
                sorted(self._changed.values(), key=lambda leaf: leaf.stream_id.encode()),
                root=root,
                stream_count=count,
                global_position=position,
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
            self.last_position = position
            self._changed.clear()
            self.last_written_at = records[0].created_at_micros / 1e6
            self.last_pass_at = self._clock() / 1e6
            self.written.extend(records)
            if len(self.written) > self.keep_written:
                del self.written[: len(self.written) - self.keep_written]
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
                self.failures += 1
                log.exception("checkpoint.failed", extra={"producer": self.producer})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval)

    async def close(self) -> None:
        """The final checkpoint (at shutdown, after the last events were committed)."""
        await self.write_once()

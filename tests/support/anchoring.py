"""Helpers of the tamper suite (issue 14): an anchored store, and the tampering a database
administrator could do — edit rows in place, or rewrite them with every hash recomputed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import ANY, EventStore, InProcessBus, create_engine, migrate, schema
from electric_eventlog.checkpoint import Checkpoint
from electric_eventlog.checkpoint_writer import CheckpointWriter
from electric_eventlog.codec import envelope_from_row
from electric_eventlog.hashing import compute_hash
from electric_eventlog.testing import event
from electric_platform.checkpointing import ensure_checkpoint_key
from sqlalchemy import delete, insert, select, update

STREAMS = ("s0", "s1", "s2")
ROUNDS = 4


@dataclass
class Anchored:
    """A store of ``STREAMS`` x ``ROUNDS`` events, a checkpoint after each round."""

    url: str
    checkpoints: Path
    keys: Path
    bus: InProcessBus
    envelopes: list[Envelope] = field(default_factory=list)
    records: list[Checkpoint] = field(default_factory=list)

    def at(self, stream: str, version: int) -> Envelope:
        """The original envelope of ``stream`` at ``version``."""
        return next(
            e for e in self.envelopes if e.stream_id == stream and e.stream_version == version
        )


def build_anchored(url: str, tmp_path: Path, *, producer: str = "table") -> Anchored:
    """Append round after round (one event per stream each), a signed checkpoint after each
    round: checkpoints at positions 3, 6, 9, 12, each listing every stream's new head."""
    engine = create_engine(url)
    migrate(engine)
    store = EventStore(engine, producer=producer)
    keys = tmp_path / "keys"
    key = ensure_checkpoint_key(keys, producer)
    bus = InProcessBus()
    file = tmp_path / "checkpoints" / f"{producer}.jsonl"
    writer = CheckpointWriter(
        engine, bus, producer=producer, kid=key.kid, private_key=key.private, file=file
    )
    anchored = Anchored(url, file, keys, bus)

    async def scenario() -> None:
        for r in range(ROUNDS):
            for stream in STREAMS:
                anchored.envelopes += store.append_in_new_tx(stream, ANY, [event(f"{stream}-{r}")])
            await writer.write_once()

    asyncio.run(scenario())
    anchored.records = list(writer.written)
    engine.dispose()
    return anchored


def rows(url: str) -> list[dict[str, Any]]:
    """Every event row in global-position order."""
    engine = create_engine(url)
    with engine.connect() as conn:
        found = [
            dict(r)
            for r in conn.execute(
                select(schema.events).order_by(schema.events.c.global_position)
            ).mappings()
        ]
    engine.dispose()
    return found


def execute(url: str, *statements: Any) -> None:
    """Run ``statements`` in one transaction (the administrator's ad-hoc SQL)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(statement)
    engine.dispose()


def update_row(url: str, position: int, **values: Any) -> None:
    """Change columns of the event at ``position`` in place (no hash recomputed)."""
    events = schema.events
    execute(url, update(events).where(events.c.global_position == position).values(**values))


def rewrite(
    url: str, mutate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]], *, renumber: bool
) -> None:
    """Rewrite the whole event table as an administrator covering his tracks would: apply
    ``mutate`` to the rows, renumber stream versions (and global positions when
    ``renumber``) without gaps, and recompute every ``prev_hash`` and ``hash``."""
    new_rows = mutate(rows(url))
    versions: dict[str, int] = {}
    tips: dict[str, str] = {}
    for index, row in enumerate(new_rows, start=1):
        stream = row["stream_id"]
        versions[stream] = versions.get(stream, 0) + 1
        row["stream_version"] = versions[stream]
        if renumber:
            row["global_position"] = index
        row["prev_hash"] = tips.get(stream, "")
        row["hash"] = compute_hash(envelope_from_row(row))
        tips[stream] = row["hash"]
    execute(
        url,
        delete(schema.outbox),
        delete(schema.events),
        *(insert(schema.events).values(**row) for row in new_rows),
    )


def position_of(url: str, stream: str, version: int) -> int:
    """The global position of ``stream`` at ``version`` now."""
    return int(
        next(
            r["global_position"]
            for r in rows(url)
            if r["stream_id"] == stream and r["stream_version"] == version
        )
    )

"""Replay: rebuild an aggregate or a projection from the store or from a topic's offset zero."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Connection

from .bus import EventBus, decode_envelope
from .model import Snapshot
from .store import EventStore

State = TypeVar("State")


def fold_stream(
    conn: Connection,
    store: EventStore,
    stream_id: str,
    initial: State,
    apply: Callable[[State, Envelope], State],
    *,
    from_snapshot: Callable[[Snapshot], State] | None = None,
) -> tuple[State, int]:
    """Fold ``stream_id`` into a state; returns ``(state, version)`` for the next append.

    With ``from_snapshot``, starts from the latest snapshot and folds only the events after
    it. ``version`` is what to pass as ``expected_version`` when appending the command's
    events.
    """
    state, version = initial, 0
    if from_snapshot is not None:
        snapshot = store.load_snapshot(conn, stream_id)
        if snapshot is not None:
            state, version = from_snapshot(snapshot), snapshot.stream_version
    for envelope in store.read_stream(conn, stream_id, from_version=version + 1):
        state = apply(state, envelope)
        version = envelope.stream_version
    return state, version


def replay_store(
    conn: Connection,
    store: EventStore,
    handler: Callable[[Envelope], None],
    *,
    after: int = 0,
    batch_size: int = 1000,
) -> int:
    """Feed every event after ``after`` to ``handler`` in commit order; returns the last
    position handled (``after`` when there was nothing)."""
    last = after
    for envelope in store.iter_all(conn, after=after, batch_size=batch_size):
        handler(envelope)
        last = envelope.global_position
    return last


async def replay_topic(
    bus: EventBus,
    topic: str,
    handler: Callable[[Envelope], Awaitable[None] | None],
) -> int:
    """Feed every envelope of ``topic`` from offset zero to its current end to ``handler``.

    Order is per partition, i.e. per stream; duplicates the relay may have published are
    passed on too (deduplicate by event id or stream version). Returns the message count.
    """
    count = 0
    async for message in bus.read_topic(topic):
        result = handler(decode_envelope(message))
        if inspect.isawaitable(result):
            await result
        count += 1
    return count

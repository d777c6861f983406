"""The tamper suite of issue 14, topic side, on SQLite and PostgreSQL stores: the store's
events relayed to the (in-process) bus as the services do, checkpoints read from the
checkpoints topic. A topic that differs from its store is located, and the signed
checkpoints tell which of the two was changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_audit.checks import CheckResult, run_checks
from electric_audit.checks_checkpoints import (
    Anchors,
    anchors_from_messages,
    load_keys,
    run_checkpoint_checks,
)
from electric_audit.sources import Source, located_from_messages, read_store, store_name
from electric_eventlog import OutboxRelay, ReceivedMessage, create_engine
from electric_eventlog.checkpoint import CHECKPOINT_TOPIC
from electric_eventlog.hashing import compute_hash

from tests.support.anchoring import Anchored, build_anchored
from tests.support.backends import Backend

TOPIC = "electric.table.events"


@pytest.fixture
def relayed(backend: Backend, tmp_path: Path) -> tuple[Anchored, list[Any], list[Any]]:
    """An anchored store, its events relayed to the bus; (store, event and checkpoint
    messages)."""
    anchored = build_anchored(backend.url, tmp_path)
    engine = create_engine(anchored.url)

    async def relay() -> tuple[list[Any], list[Any]]:
        await OutboxRelay(engine, anchored.bus, topic=TOPIC).drain()
        events = [m async for m in anchored.bus.read_topic(TOPIC)]
        checkpoints = [m async for m in anchored.bus.read_topic(CHECKPOINT_TOPIC)]
        return events, checkpoints

    events, checkpoints = asyncio.run(relay())
    engine.dispose()
    return anchored, events, checkpoints


def _run(anchored: Anchored, events: list[Any], checkpoints: list[Any]) -> dict[str, CheckResult]:
    sources: list[Source] = [read_store(anchored.url), located_from_messages(TOPIC, events)]
    records, bad = anchors_from_messages(checkpoints)
    anchors = Anchors(records, bad, load_keys([str(anchored.keys)]), expected=True)
    return {r.name: r for r in run_checks(sources) + run_checkpoint_checks(sources, anchors)}


def _forge(messages: list[Any], stream: str, version: int, *, rehash: bool) -> list[Any]:
    """The topic with one event's payload changed (and the stream's hashes recomputed)."""
    out: list[Any] = []
    tip = ""
    for m in messages:
        envelope = Envelope.FromString(m.value)
        if envelope.stream_id == stream and envelope.stream_version >= version:
            if envelope.stream_version == version:
                envelope.payload.value = envelope.payload.value + b"\x00"
            if rehash:
                envelope.prev_hash = tip or envelope.prev_hash
                envelope.hash = compute_hash(envelope)
                tip = envelope.hash
            m = ReceivedMessage(
                m.topic, m.partition, m.offset, m.key, envelope.SerializeToString(), m.headers
            )
        out.append(m)
    return out


def test_store_topic_and_checkpoints_agree(
    relayed: tuple[Anchored, list[Any], list[Any]],
) -> None:
    anchored, events, checkpoints = relayed
    result = _run(anchored, events, checkpoints)
    assert all(r.ok for r in result.values()), result
    assert result["store-topic"].checked == 12
    assert result["checkpoints"].checked == 4
    assert result["anchor-store"].checked == 4 and result["anchor-topic"].checked == 4


def test_a_topic_rewritten_with_hashes_recomputed_is_located_and_blamed(
    relayed: tuple[Anchored, list[Any], list[Any]],
) -> None:
    anchored, events, checkpoints = relayed
    target = anchored.at("s1", 2)
    forged = _forge(events, "s1", 2, rehash=True)
    result = _run(anchored, forged, checkpoints)
    offset = next(
        m.offset for m in events if Envelope.FromString(m.value).event_id == target.event_id
    )
    store = f"store:{store_name(anchored.url)}"
    assert str(result["store-topic"].first_failure).startswith(
        f"{store} stream s1 version 2 position {target.global_position}: differs from the "
        f"same event on topic:{TOPIC} stream s1 version 2 partition 0 offset {offset}"
    )
    assert result["chains"].ok  # the topic's chain was recomputed: consistent in itself
    # The checkpoints say which side was changed: the topic, not the store.
    assert result["anchor-store"].ok
    assert str(result["anchor-topic"].first_failure).startswith(
        f"topic:{TOPIC} stream s1 version 2 partition 0 offset {offset}: hash "
    )
    assert "the first rewritten event is version 2" in str(result["anchor-topic"].first_failure)


def test_a_topic_missing_an_event_is_located(
    relayed: tuple[Anchored, list[Any], list[Any]],
) -> None:
    anchored, events, checkpoints = relayed
    target = anchored.at("s2", 4)  # the last event: no chain gap shows on the topic
    kept = [m for m in events if Envelope.FromString(m.value).event_id != target.event_id]
    result = _run(anchored, kept, checkpoints)
    assert result["chains"].ok
    assert str(result["store-topic"].first_failure).startswith(
        f"store:{store_name(anchored.url)} stream s2 version 4 position 12: not on topic"
    )
    assert result["anchor-store"].ok
    assert str(result["anchor-topic"].first_failure).startswith(
        f"topic:{TOPIC} position 11: ends at position 11, before checkpoint table #4"
    )


def test_a_forged_checkpoint_on_the_topic_is_refused(
    relayed: tuple[Anchored, list[Any], list[Any]],
) -> None:
    anchored, events, checkpoints = relayed
    second = checkpoints[1]
    forged = ReceivedMessage(
        second.topic,
        second.partition,
        second.offset,
        second.key,
        second.value.replace(b'"stream_count":3', b'"stream_count":2'),
        second.headers,
    )
    assert forged.value != second.value
    result = _run(anchored, events, [checkpoints[0], forged, *checkpoints[2:]])
    assert result["checkpoints"].failed == 2  # the record, and then the gap it leaves
    assert str(result["checkpoints"].first_failure).startswith(
        f"topic:{CHECKPOINT_TOPIC} partition 0 offset 1 (checkpoint table #2 part 1/1 at "
        "position 6): signature does not verify"
    )

"""``electric-audit events``: decoded events, filtered and merged across sources.

Merge order (documented in docs/audit.md): events from every source are sorted by
``occurred_at`` (microseconds, UTC), then by the order of the source on the command line,
then by the order within the source (global position for a store, read order for a topic,
which is per-partition, i.e. per-stream, order). Within one store this is exactly commit
order for events of the same instant; across services, ``occurred_at`` is the only shared
clock, and an effect is always stamped at or after its cause. The same event seen in
several sources (a store and its topic; a topic re-delivery) is printed once: the first
source given wins.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from electric_eventlog.hashing import occurred_at_micros
from electric_eventlog.registry import default_registry
from google.protobuf import any_pb2
from google.protobuf.json_format import MessageToDict

from electric_audit.sources import Located, Source


def payload_dict(located: Located) -> dict[str, Any]:
    """The payload as protobuf JSON (field names as in the .proto); unknown types as base64."""
    message = default_registry().unpack(located.envelope.payload)
    if isinstance(message, any_pb2.Any):
        return {"@type": message.type_url, "value_base64": base64.b64encode(message.value).decode()}
    return MessageToDict(message, preserving_proto_field_name=True)


def occurred_at(located: Located) -> datetime:
    micros = occurred_at_micros(located.envelope)
    return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)


def merged(sources: Sequence[Source]) -> list[Located]:
    """Every event once, in the documented causal order."""
    seen: set[str] = set()
    keyed: list[tuple[int, int, int, Located]] = []
    for rank, source in enumerate(sources):
        for located in source.events:
            event_id = located.envelope.event_id
            if event_id in seen:
                continue
            seen.add(event_id)
            keyed.append((occurred_at_micros(located.envelope), rank, located.order, located))
    keyed.sort(key=lambda item: item[:3])
    return [item[3] for item in keyed]


def _values(node: Any, key: str) -> Iterator[str]:
    """Every value of a field called ``key`` anywhere in a decoded payload."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, str | int):
                yield str(v)
            else:
                yield from _values(v, key)
    elif isinstance(node, list):
        for item in node:
            yield from _values(item, key)


@dataclass(frozen=True)
class EventFilter:
    """What ``events`` keeps; every given criterion must hold."""

    stream: str | None = None
    event_type: str | None = None
    tournament: str | None = None
    table: str | None = None
    player: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def keeps(self, located: Located, payload: dict[str, Any]) -> bool:
        e = located.envelope
        if self.stream is not None and e.stream_id != self.stream:
            return False
        if self.event_type is not None and not (
            e.event_type == self.event_type or e.event_type.endswith("." + self.event_type)
        ):
            return False
        moment = occurred_at(located)
        if self.since is not None and moment < self.since:
            return False
        if self.until is not None and moment > self.until:
            return False
        for key, wanted in (
            ("tournament_id", self.tournament),
            ("table_id", self.table),
            ("player_id", self.player),
        ):
            if wanted is None:
                continue
            if wanted not in e.stream_id and wanted not in set(_values(payload, key)):
                return False
        return True


def event_record(located: Located, payload: dict[str, Any]) -> dict[str, Any]:
    """One event as a JSON-able record (the ``--json`` line)."""
    e = located.envelope
    return {
        "source": located.source,
        "where": located.where,
        "stream_id": e.stream_id,
        "stream_version": e.stream_version,
        "global_position": e.global_position,
        "event_id": e.event_id,
        "event_type": e.event_type,
        "occurred_at": occurred_at(located).isoformat(),
        "correlation_id": e.correlation_id,
        "causation_id": e.causation_id,
        "producer": e.producer,
        "payload": payload,
    }


def event_text(record: dict[str, Any]) -> str:
    """One event as a line of human text."""
    payload = json.dumps(record["payload"], separators=(",", ":"), sort_keys=True)
    return (
        f"{record['occurred_at']}  {record['source']}  {record['stream_id']} "
        f"v{record['stream_version']} @{record['global_position']}  "
        f"{record['event_type'].rsplit('.', 1)[-1]}  {payload}"
    )


def select_events(sources: Sequence[Source], keep: EventFilter) -> Iterable[dict[str, Any]]:
    """The records of the kept events, merged across ``sources``."""
    for located in merged(sources):
        payload = payload_dict(located)
        if keep.keeps(located, payload):
            yield event_record(located, payload)

"""Re-import a producer's events from its topic into its store (after a restore).

A store restored from a backup has its events up to the dump; the producer's topic holds
every event the outbox relay published, also after the dump (the topics keep every message:
``RETENTION_CONFIG``). :func:`reimport` appends to the store each event of the topic that it
does not hold, **as it was stored**: same event id, stream version, global position,
timestamps and hashes (the topic carries the stored envelope, byte for byte), and records
its outbox row as already sent (it is on the topic). So after a re-import the store is again
the prefix of the topic it was, ``electric-audit verify`` finds them equal, and the hash
chains continue.

Checked before anything is written (nothing is written when a check fails):

* each imported event continues its stream: version = the stream's last + 1 and
  ``prev_hash`` = that event's ``hash``;
* its global position is free and the positions stay gap-free (1..N);
* it was produced by this store's producer.

What a topic cannot give back: events committed after the dump and never relayed (their
outbox rows were unsent when the database was lost). See docs/chaos.md, "Backup and restore".

    python -m electric_eventlog.reimport --store URL --producer wallet \\
        --kafka 127.0.0.1:9092 [--namespace NS]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable, Sequence

from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Engine, func, insert, select, update

from . import schema
from .bus import decode_envelope
from .codec import row_from_envelope
from .store import utc_now
from .topics import topic_for


class ReimportError(Exception):
    """The topic's events do not continue the store: nothing was written."""


async def topic_envelopes(bootstrap: str, topic: str, namespace: str = "") -> list[Envelope]:
    """Every envelope on ``topic`` (offset zero to the end at call time), first copy of each
    event id only (a relay re-send leaves a later copy)."""
    from .kafka import KafkaBus

    bus = KafkaBus(bootstrap, client_id="electric-reimport", namespace=namespace)
    seen: set[str] = set()
    out: list[Envelope] = []
    async for message in bus.read_topic(topic):
        envelope = decode_envelope(message)
        if envelope.event_id not in seen:
            seen.add(envelope.event_id)
            out.append(envelope)
    return out


def reimport(engine: Engine, producer: str, envelopes: Iterable[Envelope]) -> int:
    """Append the events of ``envelopes`` missing from the store (one transaction, under the
    position lock); returns how many. Raises :class:`ReimportError` when they do not
    continue the store."""
    topic = topic_for(producer)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # serialise with appends, as they do
            conn.exec_driver_sql("SELECT last_position FROM eventlog_head WHERE id = 1 FOR UPDATE")
        known = set(conn.execute(select(schema.events.c.event_id)).scalars())
        unique = {e.event_id: e for e in envelopes if e.event_id not in known}  # re-sends once
        missing = sorted(unique.values(), key=lambda e: e.global_position)
        if not missing:
            return 0
        head = conn.execute(
            select(schema.head.c.last_position).where(schema.head.c.id == 1)
        ).scalar_one()
        count = conn.execute(select(func.count()).select_from(schema.events)).scalar_one()
        if count != head:
            raise ReimportError(f"the store has {count} events but head {head}: not gap-free")
        # The tip of every stream the import touches: (version, hash).
        streams = {e.stream_id for e in missing}
        tips: dict[str, tuple[int, str]] = {}
        for stream_id in streams:
            row = conn.execute(
                select(schema.events.c.stream_version, schema.events.c.hash)
                .where(schema.events.c.stream_id == stream_id)
                .order_by(schema.events.c.stream_version.desc())
                .limit(1)
            ).first()
            tips[stream_id] = (int(row[0]), str(row[1])) if row else (0, "")
        for expected, e in enumerate(missing, start=head + 1):
            if e.producer != producer:
                raise ReimportError(f"event {e.event_id} was produced by {e.producer!r}")
            if e.global_position != expected:
                raise ReimportError(
                    f"event {e.event_id} has position {e.global_position}, expected {expected}"
                    " (an event is missing from the topic: never relayed?)"
                )
            version, last_hash = tips[e.stream_id]
            if e.stream_version != version + 1 or (version and e.prev_hash != last_hash):
                raise ReimportError(
                    f"event {e.event_id} ({e.stream_id} v{e.stream_version}) does not continue "
                    f"its stream at v{version}"
                )
            tips[e.stream_id] = (e.stream_version, e.hash)
        now = utc_now()
        conn.execute(insert(schema.events), [row_from_envelope(e, now) for e in missing])
        conn.execute(
            insert(schema.outbox),
            [
                {"global_position": e.global_position, "topic": topic, "created_at": now,
                 "sent_at": now}
                for e in missing
            ],
        )  # fmt: skip
        conn.execute(
            update(schema.head)
            .where(schema.head.c.id == 1)
            .values(last_position=missing[-1].global_position)
        )
    return len(missing)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m electric_eventlog.reimport",
        description="Append a producer's events that are on its topic but not in its store.",
    )
    parser.add_argument("--store", required=True, help="the producer's database URL")
    parser.add_argument("--producer", required=True, help="service name, e.g. wallet")
    parser.add_argument("--kafka", required=True, metavar="HOST:PORT")
    parser.add_argument("--namespace", default="", help="ELECTRIC_KAFKA_NAMESPACE of the run")
    args = parser.parse_args(argv)
    from .engine import create_engine

    envelopes = asyncio.run(topic_envelopes(args.kafka, topic_for(args.producer), args.namespace))
    engine = create_engine(args.store)
    try:
        added = reimport(engine, args.producer, envelopes)
    except ReimportError as exc:
        print(f"reimport {args.producer}: refused: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(f"reimport {args.producer}: {len(envelopes)} events on the topic, {added} appended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

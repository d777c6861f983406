"""When the table's ``TournamentFinished`` events reached Kafka (``python -m bench platform``).

Splits the PostgreSQL/Kafka set-up's TournamentFinished -> PrizeAwarded lag into the table
service's outbox relay (event committed -> record on the topic: the record's producer
timestamp) and payout's consumer (record on the topic -> PrizeAwarded committed).
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition
from electric_eventlog.kafka import topic_partitions

TOPIC = "electric.table.events"


async def _published(bootstrap: str, namespace: str) -> dict[str, float]:
    from electric.eventlog.v1.envelope_pb2 import Envelope
    from electric.table.v1 import events_pb2 as table_events

    wanted = table_events.TournamentFinished.DESCRIPTOR.full_name.encode()
    physical = f"{namespace}.{TOPIC}" if namespace else TOPIC
    tps = [TopicPartition(physical, p) for p in await topic_partitions(bootstrap, physical)]
    out: dict[str, float] = {}
    if not tps:
        return out
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        remaining = {tp for tp in tps if ends[tp] > 0}
        while remaining:
            batches = await consumer.getmany(*remaining, timeout_ms=500)
            for tp, records in batches.items():
                for record in records:
                    if dict(record.headers or ()).get("event-type") != wanted:
                        continue
                    env = Envelope.FromString(record.value or b"")
                    fin = table_events.TournamentFinished()
                    env.payload.Unpack(fin)
                    out.setdefault(fin.tournament_id or fin.table_id, record.timestamp / 1000)
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await consumer.stop()
    return out


def published_finishes(bootstrap: str, namespace: str) -> dict[str, float]:
    """Tournament id -> producer timestamp (s) of its TournamentFinished record on Kafka."""
    return asyncio.run(_published(bootstrap, namespace))

"""When the table's ``TournamentFinished`` events reached Kafka (``python -m bench platform``).

Splits the PostgreSQL/Kafka set-up's TournamentFinished -> PrizeAwarded lag into the table
service's outbox relay (event committed -> record on the topic: the record's producer
timestamp) and payout's consumer (record on the topic -> PrizeAwarded committed).
"""

from __future__ import annotations

import asyncio

from electric_eventlog.kafka import KafkaBus

TOPIC = "electric.table.events"


async def _published(bootstrap: str, namespace: str) -> dict[str, float]:
    from electric.eventlog.v1.envelope_pb2 import Envelope
    from electric.table.v1 import events_pb2 as table_events

    wanted = table_events.TournamentFinished.DESCRIPTOR.full_name.encode()
    bus = KafkaBus(bootstrap, client_id="bench-platform", namespace=namespace)
    out: dict[str, float] = {}
    async for message in bus.read_topic(TOPIC):
        if message.header("event-type") != wanted or message.timestamp_ms is None:
            continue
        env = Envelope.FromString(message.value)
        fin = table_events.TournamentFinished()
        env.payload.Unpack(fin)
        out.setdefault(fin.tournament_id or fin.table_id, message.timestamp_ms / 1000)
    return out


def published_finishes(bootstrap: str, namespace: str) -> dict[str, float]:
    """Tournament id -> producer timestamp (s) of its TournamentFinished record on Kafka."""
    return asyncio.run(_published(bootstrap, namespace))

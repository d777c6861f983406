"""Topic names and partition counts (pure data; topic creation lives in ``kafka_admin``)."""

from __future__ import annotations

#: Partitions per producer service's topic. Keys are stream ids, so a stream always lands in
#: one partition; more partitions = more consumer parallelism (table service scale-out
#: follows partition assignment, hence the most). Partitions can be added later but that
#: moves keys, so size for the future.
PARTITIONS: dict[str, int] = {"registration": 6, "table": 12, "wallet": 6, "payout": 3}
DEFAULT_PARTITIONS = 6
#: Dead-letter topics see little traffic and are read by people: one partition keeps order.
DLQ_PARTITIONS = 1
#: Topics are the audit log: never delete by time or size.
RETENTION_CONFIG: dict[str, str] = {"retention.ms": "-1", "retention.bytes": "-1"}


def topic_for(service: str) -> str:
    """The event topic of a producer service: ``electric.<service>.events``."""
    return f"electric.{service}.events"


def namespaced(namespace: str, name: str) -> str:
    """The Kafka name of a topic or consumer group in ``namespace``: ``<namespace>.<name>``
    (``name`` unchanged when the namespace is empty, the default). Lets several clusters
    share one broker without sharing topics or consumer groups (``ELECTRIC_KAFKA_NAMESPACE``).
    """
    return f"{namespace}.{name}" if namespace else name


def dlq_topic_for(topic: str) -> str:
    """The dead-letter topic of ``topic``: ``<topic>.dlq``."""
    return f"{topic}.dlq"


def partitions_for(topic: str) -> int:
    """Partition count for ``topic`` (a service topic, its DLQ, or anything else)."""
    if topic.endswith(".dlq"):
        return DLQ_PARTITIONS
    parts = topic.split(".")
    if len(parts) == 3 and parts[0] == "electric" and parts[2] == "events":
        return PARTITIONS.get(parts[1], DEFAULT_PARTITIONS)
    return DEFAULT_PARTITIONS

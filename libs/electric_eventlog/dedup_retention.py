"""How long a consumer must remember an applied event: as long as a copy can come back.

A copy of an event can be delivered again while it is on its topic (a group re-reading
uncommitted offsets, a group reset or expired offsets re-reading from the start) and when
the outbox relay re-sends a row it had not marked sent (docs/event-store.md, "Bounded
de-duplication records"). So the safe retention of a de-duplication record follows the
**topic's** retention:

* a topic that keeps messages forever (``retention.ms=-1``, our default: the topics are the
  audit log) or only by size (``retention.bytes``: an old message survives as long as the
  traffic is low) can redeliver any event at any time: keep every record (``None``);
* a topic that deletes by time keeps a message at most ``retention.ms`` + ``segment.ms``
  (a segment is deleted whole once its newest message is older than ``retention.ms``; the
  active segment rolls after ``segment.ms``) + the broker's deletion check interval after
  its timestamp. A record is applied after its message was published, so once it is older
  than that sum (+ :data:`RELAY_MARGIN` for a re-send of the same row by a relay that was
  down) no copy can be delivered any more and the record may go.

:func:`retention_for` is that rule over the topics a worker consumes (the longest wins);
:func:`topic_dedup_retention` reads the topics' configuration from the broker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

#: A relay re-sends a row only while it is unsent; an outage longer than this (the
#: ``OutboxBacklog`` alert fires after minutes) voids the bound: set ``relay_margin``.
RELAY_MARGIN = timedelta(days=1)
#: The broker's ``log.retention.check.interval.ms`` default (5 minutes), when not reported.
CHECK_INTERVAL_MS = 300_000
#: Kafka's default ``segment.ms`` (7 days), when a topic does not report one.
SEGMENT_MS = 7 * 24 * 3600 * 1000


def retention_for(
    configs: Sequence[Mapping[str, str]],
    *,
    relay_margin: timedelta = RELAY_MARGIN,
    check_interval_ms: int = CHECK_INTERVAL_MS,
) -> timedelta | None:
    """The de-dup retention that is safe for topics with these configurations (``None``:
    keep every record; also for no topic, an unknown configuration or an unparsable value)."""
    if not configs:
        return None
    longest = 0
    for config in configs:
        try:
            retention_ms = int(config["retention.ms"])
            segment_ms = int(config.get("segment.ms", SEGMENT_MS))
        except (KeyError, ValueError):
            return None
        if retention_ms < 0:  # kept forever: any copy can come back at any time
            return None
        longest = max(longest, retention_ms + segment_ms + check_interval_ms)
    return timedelta(milliseconds=longest) + relay_margin


async def topic_configs(bootstrap_servers: str, topics: Sequence[str]) -> list[dict[str, str]]:
    """``retention.ms``, ``retention.bytes`` and ``segment.ms`` of each topic (broker names)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        )
    finally:
        await admin.close()
    wanted = {"retention.ms", "retention.bytes", "segment.ms"}
    out: list[dict[str, str]] = []
    for response in responses:
        for resource in response.resources:
            error_code, _, _, _, entries = resource[:5]
            if error_code != 0:
                raise RuntimeError(f"describe_configs of {resource[3]}: error {error_code}")
            out.append({str(e[0]): str(e[1]) for e in entries if e[0] in wanted})
    return out


async def topic_dedup_retention(
    bootstrap_servers: str, topics: Sequence[str], *, relay_margin: timedelta = RELAY_MARGIN
) -> timedelta | None:
    """:func:`retention_for` of ``topics`` as the broker has them configured now."""
    return retention_for(await topic_configs(bootstrap_servers, topics), relay_margin=relay_margin)

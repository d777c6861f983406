"""Issue 18: consumer de-duplication records are kept only as long as a copy of their event
can be delivered again — derived from the consumed topics' retention."""

from __future__ import annotations

from datetime import timedelta

from electric_eventlog.dedup_retention import (
    CHECK_INTERVAL_MS,
    RELAY_MARGIN,
    SEGMENT_MS,
    retention_for,
)

HOUR_MS = 3_600_000


def test_topics_kept_forever_keep_every_record() -> None:
    # Our own topics (retention.ms=-1): a group reset can redeliver anything at any time.
    assert retention_for([{"retention.ms": "-1", "retention.bytes": "-1"}]) is None
    # One of several topics kept forever decides for all.
    finite = {"retention.ms": str(HOUR_MS), "segment.ms": str(HOUR_MS)}
    assert retention_for([finite, {"retention.ms": "-1"}]) is None


def test_unknown_or_missing_configuration_keeps_every_record() -> None:
    assert retention_for([]) is None
    assert retention_for([{"segment.ms": "1000"}]) is None
    assert retention_for([{"retention.ms": "soon"}]) is None


def test_time_retention_plus_segment_check_and_relay_margin() -> None:
    got = retention_for([{"retention.ms": str(24 * HOUR_MS), "segment.ms": str(HOUR_MS)}])
    assert got == timedelta(hours=25, milliseconds=CHECK_INTERVAL_MS) + RELAY_MARGIN
    # No segment.ms reported: Kafka's default (7 days) is assumed, never less.
    got = retention_for([{"retention.ms": str(HOUR_MS)}], relay_margin=timedelta(0))
    assert got == timedelta(milliseconds=HOUR_MS + SEGMENT_MS + CHECK_INTERVAL_MS)


def test_the_longest_topic_wins() -> None:
    short = {"retention.ms": str(HOUR_MS), "segment.ms": "0"}
    long = {"retention.ms": str(48 * HOUR_MS), "segment.ms": "0"}
    got = retention_for([short, long], relay_margin=timedelta(0), check_interval_ms=0)
    assert got == timedelta(hours=48)

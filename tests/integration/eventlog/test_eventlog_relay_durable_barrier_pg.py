"""The relay publishes on PostgreSQL only what a synchronous standby holds (issue 28; the
chaos run on pg_auto_failover found two events at one stream version): between fetching a
batch and sending it, it commits a transaction that has a transaction id, whose commit
waits for the standby to hold the WAL up to it, and so every commit the fetch saw.

What is checked here is the order on the wire, on a real server: the fetch, then that
commit, then the send. (The standby's wait itself is PostgreSQL's: docs/chaos.md §7.)"""

from __future__ import annotations

import pytest
from electric_eventlog import ANY, EventStore, InProcessBus, OutboxRelay
from electric_eventlog.bus import OutgoingMessage
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine, event

pytestmark = pytest.mark.integration


class RecordingBus(InProcessBus):
    def __init__(self, trail: list[str]) -> None:
        super().__init__()
        self.trail = trail

    async def publish(self, messages: list[OutgoingMessage]) -> None:
        self.trail.append(f"publish {len(messages)}")
        await super().publish(messages)


async def test_a_batch_is_sent_only_after_a_commit_that_waits_for_the_standby(
    pg_engine: Engine,
) -> None:
    store = EventStore(pg_engine, producer="barrier")
    for i in range(3):
        store.append_in_new_tx("s-1", ANY, [wrappers_pb2.StringValue(value=str(i))])
    trail: list[str] = []

    def statement(conn: object, cursor: object, sql: str, *args: object) -> None:
        if "txid_current" in sql:
            trail.append("xid")
        elif "eventlog_outbox" in sql and sql.lstrip().upper().startswith("SELECT"):
            trail.append("fetch")

    def commit(conn: object) -> None:
        trail.append("commit")

    event.listen(pg_engine, "before_cursor_execute", statement)
    event.listen(pg_engine, "commit", commit)
    try:
        relay = OutboxRelay(pg_engine, RecordingBus(trail), batch_size=10)
        assert await relay.publish_once() == 3
    finally:
        event.remove(pg_engine, "before_cursor_execute", statement)
        event.remove(pg_engine, "commit", commit)
    sent = trail.index("publish 3")
    before = trail[:sent]
    assert "fetch" in before and "xid" in before, trail
    assert (
        before.index("fetch") < before.index("xid") < len(before) - before[::-1].index("commit")
    ), trail  # fetched, then a transaction with an id, committed, then sent
    # Nothing to send: no barrier (an idle relay polls often).
    trail.clear()
    assert await relay.publish_once() == 0
    assert "xid" not in trail

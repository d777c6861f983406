"""The causal context (electric_eventlog.causality): what binds it, who reads it."""

from __future__ import annotations

import asyncio
import io
import json
import logging

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import EventStore, causality, create_engine, migrate
from electric_platform.context import (
    CAUSATION_ID_KEY,
    CORRELATION_ID_KEY,
    REQUEST_ID_KEY,
    outgoing_metadata,
)
from electric_platform.log import configure_logging
from electric_platform.owed_work import call_ids
from google.protobuf import wrappers_pb2


def test_outgoing_metadata_carries_the_bound_ids() -> None:
    md = dict(outgoing_metadata("tok"))
    # Outside any work: a new chain (the request id is the correlation id), no cause.
    assert md[CORRELATION_ID_KEY] == md[REQUEST_ID_KEY] and CAUSATION_ID_KEY not in md
    assert md["authorization"] == "Bearer tok"
    with causality.caused_by("corr", "event-1"):
        md = dict(outgoing_metadata())
        assert (md[CORRELATION_ID_KEY], md[CAUSATION_ID_KEY]) == ("corr", "event-1")
        with causality.caused_by("", "event-2"):  # a step keeps the chain's correlation
            assert (causality.correlation_id(), causality.causation_id()) == ("corr", "event-2")
        assert causality.causation_id() == "event-1"
    assert (causality.correlation_id(), causality.causation_id()) == ("", "")


def test_the_store_records_the_bound_ids_unless_given() -> None:
    engine = create_engine("sqlite:///:memory:")
    migrate(engine)
    store = EventStore(engine, producer="test")
    with engine.begin() as conn:
        with causality.caused_by("corr", "cause"):
            [a] = store.append(conn, "s", 0, [wrappers_pb2.StringValue(value="a")])
            [b] = store.append(
                conn, "s", 1, [wrappers_pb2.StringValue(value="b")], correlation_id="x"
            )
        [c] = store.append(conn, "s", 2, [wrappers_pb2.StringValue(value="c")])
    assert (a.correlation_id, a.causation_id) == ("corr", "cause")
    assert (b.correlation_id, b.causation_id) == ("x", "cause")
    assert (c.correlation_id, c.causation_id) == ("", "")


def test_threads_and_tasks_inherit_the_ids() -> None:
    async def main() -> list[str]:
        with causality.caused_by("corr", "cause"):
            in_thread = await asyncio.to_thread(causality.correlation_id)
            in_task = await asyncio.create_task(asyncio.sleep(0, causality.causation_id()))
        return [in_thread, in_task]

    assert asyncio.run(main()) == ["corr", "cause"]


def test_log_lines_carry_the_ids_and_library_text_moves_to_message() -> None:
    buffer = io.StringIO()
    configure_logging("INFO", "json", stream=buffer)
    try:
        with causality.caused_by("corr", "cause"):
            logging.getLogger("electric_eventlog.test").info("x.done", extra={"n": 1})
        logging.getLogger("asyncio").warning("Task was destroyed but it is pending!")
    finally:
        configure_logging("INFO", "json")
    ours, library = (json.loads(x) for x in buffer.getvalue().splitlines())
    assert ours["event"] == "x.done" and ours["n"] == 1
    assert (ours["correlation_id"], ours["causation_id"]) == ("corr", "cause")
    assert library["event"] == "library.message"
    assert library["message"] == "Task was destroyed but it is pending!"
    assert "correlation_id" not in library


def test_owed_calls_may_carry_ids() -> None:
    class Call:
        correlation_id = "c"
        causation_id = "e"

    assert call_ids(Call()) == ("c", "e")
    assert call_ids(Envelope()) == ("", "")  # an envelope has both fields, empty
    assert call_ids(object()) == ("", "")

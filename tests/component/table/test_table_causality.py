"""The table's events carry the tournament's correlation id and their causes (issue 14 item
7): the first events are caused by registration's TournamentStarted, the driver's steps by
the stream's latest event, a player's command by its request id, and a timer expiry by the
action (deal, move or earlier timeout) that started the turn that ran out."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import grpc
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_eventlog.bus import OutgoingMessage
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_table.app import MANAGERS, make_setup
from electric_table.journal import table_stream
from electric_table.tournament.runtime import turn_cause

from tests.support.auth import auth_env
from tests.support.table_kit import md, registration_messages, wait_table

PLAYERS = ("alice", "bob", "carol")


def _name(cls: type) -> str:
    return str(cls.DESCRIPTOR.full_name)  # type: ignore[attr-defined]


def _is_timeout(e: Envelope) -> bool:
    return e.event_type == _name(tev.TimeoutApplied)


def _batch_start(events: list[Envelope], i: int) -> int:
    """Index of the first event of the append holding ``events[i]`` (an append's events
    share their causation id and occurred_at)."""
    while i > 0 and (
        events[i - 1].causation_id == events[i].causation_id
        and events[i - 1].occurred_at == events[i].occurred_at
    ):
        i -= 1
    return i


async def test_driver_steps_timeouts_and_commands_record_their_causes(tmp_path: Path) -> None:
    config = load_config(
        "table",
        {
            "ELECTRIC_VAR_DIR": str(tmp_path),
            **auth_env(),
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
        },
    )
    host = ServiceHost(config, make_setup(pause_ms=50))
    await host.start()
    try:
        manager = MANAGERS[id(host)]
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}")
        stub = table_pb2_grpc.TableServiceStub(channel)
        table_id = str(uuid.uuid4())
        messages, _ = registration_messages(
            table_id, PLAYERS, action_timer_ms=150, time_bank_ms=100, level_ms=60_000
        )
        # Registration's events as registration publishes them, with their ids.
        stamped = []
        for m in messages:
            env = Envelope.FromString(m.value)
            env.correlation_id = "register-corr"
            stamped.append(OutgoingMessage(m.topic, m.key, env.SerializeToString(), m.headers))
        started_id = Envelope.FromString(stamped[-1].value).event_id
        await inprocess_bus().publish(stamped)
        await wait_table(stub, table_id, PLAYERS[0])

        def stream() -> list[Envelope]:
            with manager.store.engine.connect() as conn:
                return manager.store.read_stream(conn, table_stream(table_id))

        def timeouts() -> list[Envelope]:
            return [e for e in stream() if e.event_type == _name(tev.TimeoutApplied)]

        def sat_out() -> list[str]:
            out = []
            for e in stream():
                if e.event_type == _name(tev.PlayerSatOut):
                    msg = tev.PlayerSatOut()
                    e.payload.Unpack(msg)
                    out.append(msg.player_id)
            return out

        deadline = asyncio.get_running_loop().time() + 30
        while not any(e.event_type == _name(tev.TurnStarted) for e in stream()):
            assert asyncio.get_running_loop().time() < deadline, "no deal"
            await asyncio.sleep(0.01)
        # A late driver: the loop held past two turns' timers (150 ms each), as on a loaded
        # machine; its next step expires both in one append (the first hand's folds).
        time.sleep(1.0)
        while len(timeouts()) < 3 or not sat_out():  # nobody acts: the timers run out
            assert asyncio.get_running_loop().time() < deadline, "no timeouts"
            await asyncio.sleep(0.05)
        who = sat_out()[0]
        await stub.SitIn(
            table_pb2.SitInRequest(request_id="sit-in-1", table_id=table_id), metadata=md(who)
        )
        await channel.close()
    finally:
        await host.stop()
    events = stream()
    ids = {e.event_id for e in events}
    # One correlation id: the Register's that started the tournament.
    assert {e.correlation_id for e in events} == {"register-corr"}
    assert events[0].causation_id == started_id
    for i, e in enumerate(events):
        if e.event_type == _name(tev.HandStarted):
            # Dealt after the last event (a TableProgress, the summary of an append, causes
            # nothing: the cause is the table's latest event before it).
            facts = [x for x in events[:i] if x.event_type != _name(tev.TableProgress)]
            assert e.causation_id == facts[-1].event_id
        if e.event_type == _name(tev.TimeoutApplied):
            # The turn that ran out first in this batch started in the batch of the latest
            # TurnStarted before it. A late driver step catches up several expiries in one
            # append (the CI machine, loaded), and the append has one cause: its first.
            start = _batch_start(events, i)
            assert e.causation_id == turn_cause(events[:start]), i
            assert e.causation_id in ids
    # The late step's append expired more than one turn (the case the rule above covers).
    starts = [_batch_start(events, i) for i, e in enumerate(events) if _is_timeout(e)]
    assert any(starts.count(s) > 1 for s in starts), "no append caught up two expiries"
    # The player's command: its events are caused by its request id.
    mine = [e.event_type for e in events if e.causation_id == "sit-in-1"]
    assert _name(tev.PlayerSatIn) in mine

"""The table's events carry the tournament's correlation id and their causes (issue 14 item
7): the first events are caused by registration's TournamentStarted, the driver's steps by
the stream's latest event, a player's command by its request id, and a timer expiry by the
action (deal, move or earlier timeout) that started the turn that ran out."""

from __future__ import annotations

import asyncio
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
from electric_table.runtime import table_stream, turn_cause

from tests.support.auth import auth_env
from tests.support.table_kit import md, registration_messages, wait_table

PLAYERS = ("alice", "bob", "carol")


def _name(cls: type) -> str:
    return str(cls.DESCRIPTOR.full_name)  # type: ignore[attr-defined]


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
            assert e.causation_id == events[i - 1].event_id  # dealt after the last event
        if e.event_type == _name(tev.TimeoutApplied):
            # The turn that ran out started in the batch of the latest earlier TurnStarted.
            assert e.causation_id == turn_cause(events[:i]), i
            assert e.causation_id in ids
    # The player's command: its events are caused by its request id.
    mine = [e.event_type for e in events if e.causation_id == "sit-in-1"]
    assert _name(tev.PlayerSatIn) in mine

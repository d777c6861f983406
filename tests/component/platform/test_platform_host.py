"""ServiceHost: several services in one event loop (the embedded mode) on SQLite and the
in-process bus; health, reflection, metrics, events through the outbox relay, idempotent
start-up, drain on stop and on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from electric.common.v1 import money_pb2, tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_eventlog import decode_envelope, envelope_message, pack
from electric_payout.app import setup as payout_setup
from electric_platform import ServiceHost, load_config, run_hosts
from electric_platform.eventpath import inprocess_bus
from electric_registration.app import setup as registration_setup
from electric_table.app import setup as table_setup
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.support.auth import auth_env, bearer


def _env(tmp: Path) -> dict[str, str]:
    return {
        "ELECTRIC_VAR_DIR": str(tmp),
        **auth_env(),
        "ELECTRIC_GRPC_PORT": "0",
        "ELECTRIC_METRICS_PORT": "0",
        "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "3",
    }


def _md(sub: str = "alice", role: str = "player") -> Any:
    return bearer(sub, role, 60)


async def _wait(predicate: Callable[[], bool], timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def _types(topic: str) -> list[str]:
    bus = inprocess_bus()
    return [decode_envelope(m).event_type for m in bus._logs.get(topic, [])]


async def test_three_services_share_one_loop_and_bus(tmp_path: Path) -> None:
    env = _env(tmp_path)
    hosts = {
        "registration": ServiceHost(load_config("registration", env), registration_setup),
        "table": ServiceHost(load_config("table", env), table_setup),
        "payout": ServiceHost(load_config("payout", env), payout_setup),
    }
    for host in hosts.values():
        await host.start()
    try:
        ports = {h.grpc_port for h in hosts.values()}
        assert len(ports) == 3 and 0 not in ports
        for name, host in hosts.items():
            async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
                health = await health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(service=host.service_names[0])
                )
                assert health.status == health_pb2.HealthCheckResponse.SERVING
                call = reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")])
                )
                names = {s.name async for r in call for s in r.list_services_response.service}
                assert f"electric.{name}.v1.{name.capitalize()}Service" in names

        # Registration opened one table per tier; the relay moved the events to the bus.
        reg_topic = "electric.registration.events"
        await _wait(lambda: _types(reg_topic).count("electric.registration.v1.TableOpened") == 5)
        assert "electric.platform.v1.ServiceInstanceStarted" in _types(reg_topic)
        await _wait(
            lambda: "electric.platform.v1.ServiceInstanceStarted" in _types("electric.table.events")
        )

        reg = hosts["registration"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{reg.grpc_port}") as ch:
            stub = registration_pb2_grpc.RegistrationServiceStub(ch)
            lobby = await stub.ListLobby(registration_pb2.ListLobbyRequest(), metadata=_md())
            assert [t.open_tables for t in lobby.tiers] == [1, 1, 1, 1, 1]
        url = f"http://127.0.0.1:{reg.metrics_port}/metrics"
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
        assert (
            'grpc_server_handled_total{grpc_code="OK",grpc_method="ListLobby",'
            'grpc_service="electric.registration.v1.RegistrationService",grpc_type="unary"} 1.0'
        ) in text
        assert "electric_outbox_unsent_events 0.0" in text

        # The table service starts a table from TournamentStarted on the shared bus, once.
        table_id = str(uuid.uuid4())
        started = reg_events.TournamentStarted(
            table_id=table_id,
            tournament_id=table_id,
            table_name="t",
            seats=[tournament_pb2.SeatAssignment(seat=1, player_id="alice", entry_id="e1")],
            starting_stack=500,
            multiplier=2,
            prize_pool=money_pb2.Money(cents=200),
        )
        envelope = Envelope(
            event_id=str(uuid.uuid4()),
            stream_id="x",
            stream_version=1,
            event_type=started.DESCRIPTOR.full_name,
            payload=pack(started),
        )
        envelope.occurred_at.GetCurrentTime()
        message = envelope_message(reg_topic, envelope)
        await inprocess_bus().publish([message, message])
        table = hosts["table"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{table.grpc_port}") as ch:
            tstub = table_pb2_grpc.TableServiceStub(ch)
            for _ in range(100):
                try:
                    view = await tstub.GetTable(
                        table_pb2.GetTableRequest(table_id=table_id), metadata=_md()
                    )
                    break
                except grpc.aio.AioRpcError as err:
                    assert err.code() is grpc.StatusCode.NOT_FOUND
                    await asyncio.sleep(0.05)
            assert view.table.your_seat == 1 and view.table.version == 1

        # Stopping drains: an open stream ends with OK, the process-wide state is released.
        async with grpc.aio.insecure_channel(f"127.0.0.1:{reg.grpc_port}") as ch:
            stream = registration_pb2_grpc.RegistrationServiceStub(ch).WatchMyTables(
                registration_pb2.WatchMyTablesRequest(), metadata=_md()
            )
            assert isinstance(await stream.read(), registration_pb2.WatchMyTablesResponse)
            stopping = asyncio.create_task(reg.stop())
            assert await stream.read() is grpc.aio.EOF
            assert await stream.code() is grpc.StatusCode.OK
            await stopping
    finally:
        for host in hosts.values():
            await host.stop()

    # A restart on the same database opens no new tables (idempotent start-up).
    again = ServiceHost(load_config("registration", env), registration_setup)
    await again.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{again.grpc_port}") as ch:
            stub = registration_pb2_grpc.RegistrationServiceStub(ch)
            lobby = await stub.ListLobby(registration_pb2.ListLobbyRequest(), metadata=_md())
            assert [t.open_tables for t in lobby.tiers] == [1, 1, 1, 1, 1]
    finally:
        await again.stop()


async def test_run_hosts_exits_zero_on_sigterm_and_runs_hooks_in_reverse(tmp_path: Path) -> None:
    order: list[str] = []

    async def setup(host: ServiceHost) -> None:
        host.on_shutdown(lambda: order.append("first-registered"))

        async def second() -> None:
            order.append("second-registered")

        host.on_shutdown(second)

        async def forever() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                order.append("background-cancelled")

        host.add_background("forever", forever)

    host = ServiceHost(load_config("payout", _env(tmp_path)), setup)
    loop = asyncio.get_running_loop()
    loop.call_later(0.5, os.kill, os.getpid(), signal.SIGTERM)
    assert await run_hosts([host]) == 0
    assert order == ["background-cancelled", "second-registered", "first-registered"]


async def test_run_hosts_reports_a_crashed_background_task(tmp_path: Path) -> None:
    async def setup(host: ServiceHost) -> None:
        async def crash() -> None:
            raise RuntimeError("relay died")

        host.add_background("crash", crash)

    host = ServiceHost(load_config("payout", _env(tmp_path)), setup)
    assert await asyncio.wait_for(run_hosts([host], install_signal_handlers=False), 10) == 1


async def test_restartable_background_task_is_restarted_and_counted(tmp_path: Path) -> None:
    runs: list[int] = []
    done = asyncio.Event()

    async def setup(host: ServiceHost) -> None:
        async def flaky() -> None:
            runs.append(1)
            if len(runs) < 3:
                raise ConnectionError("broker away")
            done.set()
            await asyncio.Event().wait()

        host.add_background("flaky", flaky, restart=True)

    host = ServiceHost(load_config("payout", _env(tmp_path)), setup)
    await host.start()
    try:
        await asyncio.wait_for(done.wait(), 10)
        assert not host.stopping.is_set()
        value = host.metrics.registry.get_sample_value(
            "electric_background_restarts_total", {"task": "flaky"}
        )
        assert value == 2
    finally:
        await host.stop()


async def test_failed_start_runs_the_hooks_registered_so_far(tmp_path: Path) -> None:
    closed: list[str] = []

    async def setup(host: ServiceHost) -> None:
        host.on_shutdown(lambda: closed.append("db"))
        raise RuntimeError("migration failed")

    host = ServiceHost(load_config("payout", _env(tmp_path)), setup)
    assert await run_hosts([host], install_signal_handlers=False) == 1
    assert closed == ["db"]

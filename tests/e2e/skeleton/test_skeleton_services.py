"""Walking skeleton: the services as SEPARATE processes on real PostgreSQL and Kafka.

Checks, for each service: gRPC health SERVING, reflection lists its API, ``/metrics`` counts
calls, no token → UNAUTHENTICATED, wrong principal → PERMISSION_DENIED, a real RPC over its
own database, its events reach its Kafka topic through store + outbox + relay, and SIGTERM
drains (open streams end cleanly) with exit code 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import sqlalchemy as sa
from electric.common.v1 import errors_pb2, money_pb2, tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric.platform.v1 import events_pb2 as platform_events
from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_clients.errors import error_detail
from electric_domain.tournament import commitment, default_config, draw_multiplier
from electric_eventlog import envelope_message, pack
from electric_eventlog.kafka import KafkaBus
from electric_platform import SigningKey, issue_token
from google.protobuf.duration_pb2 import Duration
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.support import ports
from tests.support.auth import ISSUER_KEY, bearer, write_keys
from tests.support.infra import fresh_database

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]
API = {
    "registration": "electric.registration.v1.RegistrationService",
    "table": "electric.table.v1.TableService",
    "wallet": "electric.wallet.v1.WalletService",
    "payout": "electric.payout.v1.PayoutService",
}
#: One unary RPC per service, callable with an empty request, for auth/metrics checks.
PROBE = {
    "registration": "ListLobby",
    "table": "GetTable",
    "wallet": "GetBalance",
    "payout": "GetPayouts",
}


def _wallet_available() -> bool:
    return (ROOT / "services/wallet/electric_wallet/__main__.py").exists()


SERVICES = [
    s
    for s in ("registration", "table", "wallet", "payout")
    if s != "wallet" or (_wallet_available())
]


def _free_port() -> int:
    return ports.free_port()  # below the ephemeral range (tests/support/ports.py)


@dataclass
class Proc:
    """One service process."""

    name: str
    db_url: str
    grpc_port: int
    metrics_port: int
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


#: This run's Kafka namespace (ELECTRIC_KAFKA_NAMESPACE): its own topics and consumer groups,
#: so parallel runs on one broker do not take each other's events.
NAMESPACE = f"e2e-sk-{uuid.uuid4().hex[:12]}"


def _token(sub: str = "alice", role: str = "player") -> tuple[tuple[str, str], ...]:
    return bearer(sub, role, 600)


def _wait_serving(proc: Proc, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert proc.popen is not None
        if proc.popen.poll() is not None:
            raise AssertionError(f"{proc.name} exited early:\n{proc.log()}")
        try:
            with grpc.insecure_channel(proc.target) as ch:
                resp = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=1
                )
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{proc.name} not SERVING in time:\n{proc.log()}")


@pytest.fixture(scope="module")
def cluster(
    postgres_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("skeleton")
    procs: dict[str, Proc] = {}
    with contextlib.ExitStack() as stack:
        for name in SERVICES:
            url = stack.enter_context(fresh_database(postgres_url, prefix=f"e2e_{name}"))
            procs[name] = Proc(name, url, _free_port(), _free_port(), tmp / f"{name}.log")
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ELECTRIC_") and k not in ("DATABASE_URL",)
        }
        key_env = write_keys(tmp / "keys").env()
        for p in procs.values():
            env = {
                **base,
                "DATABASE_URL": p.db_url,
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
                "ELECTRIC_KAFKA_NAMESPACE": NAMESPACE,
                **key_env,
                "ELECTRIC_GRPC_PORT": str(p.grpc_port),
                "ELECTRIC_METRICS_PORT": str(p.metrics_port),
                "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "5",
                "ELECTRIC_VAR_DIR": str(tmp / "var"),
                **{f"ELECTRIC_{q.name.upper()}_TARGET": q.target for q in procs.values()},
            }
            log = p.log_path.open("wb")
            stack.callback(log.close)
            p.popen = subprocess.Popen(
                [sys.executable, "-m", f"electric_{p.name}"],
                env=env,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 90
            for p in procs.values():
                _wait_serving(p, deadline)
            yield procs
        finally:
            for p in procs.values():
                if p.popen is not None and p.popen.poll() is None:
                    p.popen.kill()
                    p.popen.wait(10)


def _metrics(proc: Proc) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    url = f"http://127.0.0.1:{proc.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _handled(proc: Proc, service: str, method: str, code: str) -> float:
    labels = {
        "grpc_service": service,
        "grpc_method": method,
        "grpc_type": "unary",
        "grpc_code": code,
    }
    return _metrics(proc).get(("grpc_server_handled_total", tuple(sorted(labels.items()))), 0.0)


async def _raw_call(target: str, method: str, md: Any = None) -> None:
    async with grpc.aio.insecure_channel(target) as ch:
        call = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
        await call(b"", metadata=md, timeout=10)


async def test_health_serving_for_every_service(cluster: dict[str, Proc]) -> None:
    for name, p in cluster.items():
        async with grpc.aio.insecure_channel(p.target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            for service in ("", API[name]):
                resp = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
                assert resp.status == health_pb2.HealthCheckResponse.SERVING, (name, service)


async def test_reflection_lists_each_api(cluster: dict[str, Proc]) -> None:
    for name, p in cluster.items():
        async with grpc.aio.insecure_channel(p.target) as ch:
            stub = reflection_pb2_grpc.ServerReflectionStub(ch)
            call = stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
            )
            names = {s.name async for r in call for s in r.list_services_response.service}
        assert API[name] in names, (name, names)
        assert "grpc.health.v1.Health" in names


async def test_no_token_is_unauthenticated_and_counted(cluster: dict[str, Proc]) -> None:
    for name, p in cluster.items():
        before = _handled(p, API[name], PROBE[name], "UNAUTHENTICATED")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _raw_call(p.target, f"/{API[name]}/{PROBE[name]}")
        assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED, name
        forged = issue_token("mallory", "operator", SigningKey.generate(ISSUER_KEY.kid))
        bad = (("authorization", "Bearer " + forged),)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _raw_call(p.target, f"/{API[name]}/{PROBE[name]}", bad)
        assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED, name
        assert _handled(p, API[name], PROBE[name], "UNAUTHENTICATED") == before + 2


async def test_lobby_is_served_from_registration_db_and_counted(
    cluster: dict[str, Proc],
) -> None:
    reg = cluster["registration"]
    before = _handled(reg, API["registration"], "ListLobby", "OK")
    async with grpc.aio.insecure_channel(reg.target) as ch:
        stub = registration_pb2_grpc.RegistrationServiceStub(ch)
        lobby = await stub.ListLobby(
            registration_pb2.ListLobbyRequest(), metadata=_token(), timeout=10
        )
    assert [t.buy_in.cents for t in lobby.tiers] == [100, 500, 1000, 2500, 5000]
    assert [t.rake.cents for t in lobby.tiers] == [7, 35, 70, 175, 350]
    assert all(t.open_tables >= 1 and t.seats == 3 for t in lobby.tiers)
    assert lobby.tiers[1].max_prize_pool.cents == 500 * 10_000
    assert _handled(reg, API["registration"], "ListLobby", "OK") == before + 1
    # The lobby reads the service's own rows: an extra open table shows up in the counts.
    engine = sa.create_engine(reg.db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO registration_tables (table_id, tier_id, table_name, status,"
                    " seats, players_registered, multiplier_seed, multiplier_seed_commitment,"
                    " paytable_version, multiplier, prize_pool_cents, stream_version, opened_at)"
                    " VALUES (:id, 'electric-100', 'extra', 'registering', 3, 2, '', '', 'v',"
                    " 0, 0, 1, now())"
                ),
                {"id": str(uuid.uuid4())},
            )
    finally:
        engine.dispose()
    async with grpc.aio.insecure_channel(reg.target) as ch:
        stub = registration_pb2_grpc.RegistrationServiceStub(ch)
        again = await stub.ListLobby(
            registration_pb2.ListLobbyRequest(), metadata=_token(), timeout=10
        )
    assert again.tiers[0].open_tables == lobby.tiers[0].open_tables + 1
    assert again.tiers[0].players_waiting == lobby.tiers[0].players_waiting + 2
    assert again.tiers[0].tables_filling == lobby.tiers[0].tables_filling + 1


async def test_wrong_principal_is_permission_denied(cluster: dict[str, Proc]) -> None:
    async with grpc.aio.insecure_channel(cluster["registration"].target) as ch:
        stub = registration_pb2_grpc.RegistrationServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.ListMyTables(
                registration_pb2.ListMyTablesRequest(player_id="bob"),
                metadata=_token("alice"),
                timeout=10,
            )
        assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
        ok = await stub.ListMyTables(
            registration_pb2.ListMyTablesRequest(player_id="bob"),
            metadata=_token("ops", "operator"),
            timeout=10,
        )
        assert list(ok.tables) == []
    async with grpc.aio.insecure_channel(cluster["payout"].target) as ch:
        pstub = payout_pb2_grpc.PayoutServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await pstub.ListWinnings(
                payout_pb2.ListWinningsRequest(player_id="bob"),
                metadata=_token("alice"),
                timeout=10,
            )
        assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED


async def test_get_table_unknown_is_not_found_with_detail(cluster: dict[str, Proc]) -> None:
    async with grpc.aio.insecure_channel(cluster["table"].target) as ch:
        stub = table_pb2_grpc.TableServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.GetTable(
                table_pb2.GetTableRequest(table_id="no-such-table"),
                metadata=_token(),
                timeout=10,
            )
    err = info.value
    assert err.code() is grpc.StatusCode.NOT_FOUND
    assert "no-such-table" in (err.details() or "")
    detail = errors_pb2.ResourceInfo()
    assert error_detail(err, detail)
    assert (detail.resource_type, detail.resource_id) == ("table", "no-such-table")


async def test_list_winnings_reads_payout_db(cluster: dict[str, Proc]) -> None:
    payout = cluster["payout"]
    engine = sa.create_engine(payout.db_url)
    player = f"winner-{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as conn:
            for i, cents in enumerate((930, 27900)):
                conn.execute(
                    sa.text(
                        "INSERT INTO payout_prizes (tournament_id, place, player_id, entry_id,"
                        " table_id, amount_cents, buy_in_cents, prize_pool_cents, multiplier,"
                        " paytable_version, status, wallet_transfer_id, awarded_at)"
                        " VALUES (:t, 1, :p, 'e', :t, :c, 100, :c, :m, 'v1', 'credited', 'tx',"
                        " now() - make_interval(secs => :age))"
                    ),
                    {"t": f"t{i}", "p": player, "c": cents, "m": cents // 100, "age": 10 - i},
                )
    finally:
        engine.dispose()
    async with grpc.aio.insecure_channel(payout.target) as ch:
        stub = payout_pb2_grpc.PayoutServiceStub(ch)
        page1 = await stub.ListWinnings(
            payout_pb2.ListWinningsRequest(page={"page_size": 1}),
            metadata=_token(player),
            timeout=10,
        )
        assert [w.amount.cents for w in page1.winnings] == [27900]  # newest first
        assert page1.total.cents == 28830 and page1.page.next_page_token
        page2 = await stub.ListWinnings(
            payout_pb2.ListWinningsRequest(
                page={"page_size": 1, "page_token": page1.page.next_page_token}
            ),
            metadata=_token(player),
            timeout=10,
        )
        assert [w.amount.cents for w in page2.winnings] == [930]
        assert not page2.page.next_page_token
        payouts = await stub.GetPayouts(
            payout_pb2.GetPayoutsRequest(tournament_id="t1"), metadata=_token(), timeout=10
        )
        assert payouts.payout.prizes[0].player_id == player


async def _topic_envelopes(bootstrap: str, topic: str) -> list[Envelope]:
    bus = KafkaBus(bootstrap, client_id="e2e-reader", namespace=NAMESPACE)
    out = []
    async for message in bus.read_topic(topic):
        env = Envelope()
        env.ParseFromString(message.value)
        out.append(env)
    return out


async def test_events_reach_kafka_through_the_outbox(
    cluster: dict[str, Proc], kafka_bootstrap: str
) -> None:
    reg = cluster["registration"]
    engine = sa.create_engine(reg.db_url)
    try:
        with engine.connect() as conn:
            opened = dict(
                conn.execute(
                    sa.text(
                        "SELECT table_id, multiplier_seed_commitment FROM registration_tables"
                        " WHERE table_name <> 'extra'"
                    )
                ).all()
            )
    finally:
        engine.dispose()
    assert len(opened) == 5
    found: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(found) != set(opened):
        for env in await _topic_envelopes(kafka_bootstrap, "electric.registration.events"):
            event = reg_events.TableOpened()
            if env.payload.Unpack(event) and event.table_id in opened:
                assert env.producer == "registration"
                assert env.stream_id == f"registration-table-{event.table_id}"
                assert env.stream_version == 1 and len(env.hash) == 64
                found[event.table_id] = event.multiplier_seed_commitment
        await asyncio.sleep(0.5)
    assert found == opened
    # Every skeleton service announced this very process on its own topic (the wallet has
    # its own event tests).
    for name, p in cluster.items():
        if name == "wallet":
            continue
        assert p.popen is not None
        pid = p.popen.pid
        ok = False
        deadline = time.monotonic() + 30
        while not ok and time.monotonic() < deadline:
            for env in await _topic_envelopes(kafka_bootstrap, f"electric.{name}.events"):
                started = platform_events.ServiceInstanceStarted()
                if env.payload.Unpack(started) and started.pid == pid and started.service == name:
                    ok = True
            if not ok:
                await asyncio.sleep(0.5)
        assert ok, f"no ServiceInstanceStarted from {name} pid {pid} on Kafka"


async def test_table_starts_from_tournament_started_on_kafka(
    cluster: dict[str, Proc], kafka_bootstrap: str
) -> None:
    table_id = str(uuid.uuid4())
    seed = bytes(range(32))
    multiplier = draw_multiplier(seed, default_config().pay_table).multiplier
    started = reg_events.TournamentStarted(
        tournament_id=table_id,
        table_id=table_id,
        tier_id="electric-500",
        table_name="$5 Electric Poker #e2e",
        seats=[
            tournament_pb2.SeatAssignment(seat=i, player_id=p, entry_id=f"e{i}")
            for i, p in ((1, "alice"), (2, "bob"), (3, "carol"))
        ],
        multiplier=multiplier,
        multiplier_seed=seed.hex(),
        multiplier_seed_commitment=commitment(seed),
        starting_stack=500,
        buy_in=money_pb2.Money(cents=500, currency="USD"),
        prize_pool=money_pb2.Money(cents=500 * multiplier, currency="USD"),
        action_timer=Duration(seconds=10),
        time_bank=Duration(seconds=10),
    )
    env = Envelope(
        event_id=str(uuid.uuid4()),
        stream_id=f"registration-table-{table_id}",
        stream_version=5,
        event_type=started.DESCRIPTOR.full_name,
        payload=pack(started),
        producer="registration",
        correlation_id="e2e",
    )
    env.occurred_at.GetCurrentTime()
    bus = KafkaBus(kafka_bootstrap, client_id="e2e-writer", namespace=NAMESPACE)
    await bus.start()
    try:
        message = envelope_message("electric.registration.events", env)
        await bus.publish([message, message])  # a redelivery must not start it twice
    finally:
        await bus.stop()
    cluster["table"].extra["table_id"] = table_id
    async with grpc.aio.insecure_channel(cluster["table"].target) as ch:
        stub = table_pb2_grpc.TableServiceStub(ch)
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = await stub.GetTable(
                    table_pb2.GetTableRequest(table_id=table_id),
                    metadata=_token("bob"),
                    timeout=10,
                )
                break
            except grpc.aio.AioRpcError as err:
                assert err.code() is grpc.StatusCode.NOT_FOUND
                assert time.monotonic() < deadline, cluster["table"].log()
                await asyncio.sleep(0.5)
    view = resp.table
    # The first hand may already be dealt: chips behind plus this street's bet are the
    # starting stack until the first street's bets are collected.
    assert view.hand.hand_number <= 1 and not view.hand.board
    assert [(s.seat, s.player_id, s.stack + s.street_bet) for s in view.seats] == [
        (1, "alice", 500),
        (2, "bob", 500),
        (3, "carol", 500),
    ]
    assert view.your_seat == 2 and view.multiplier == multiplier
    assert view.prize_pool.cents == 500 * multiplier
    # Exactly one TableStarted despite the duplicate delivery (the table plays on meanwhile).
    await asyncio.sleep(1.0)
    table_events = [
        e
        for e in await _topic_envelopes(kafka_bootstrap, "electric.table.events")
        if e.stream_id == f"table-{table_id}"
    ]
    starts = [e for e in table_events if e.event_type == "electric.table.v1.TableStarted"]
    assert len(starts) == 1, [e.event_type for e in table_events]
    assert starts[0].stream_version == 1


async def test_sigterm_drains_streams_and_exits_zero(cluster: dict[str, Proc]) -> None:
    """Last test of the module: it stops the processes."""
    reg, table = cluster["registration"], cluster["table"]
    async with (
        grpc.aio.insecure_channel(reg.target) as reg_ch,
        grpc.aio.insecure_channel(table.target) as table_ch,
    ):
        watch_my = registration_pb2_grpc.RegistrationServiceStub(reg_ch).WatchMyTables(
            registration_pb2.WatchMyTablesRequest(), metadata=_token("alice"), timeout=60
        )
        first = await watch_my.read()
        assert isinstance(first, registration_pb2.WatchMyTablesResponse)
        streams = [watch_my]
        table_id = table.extra.get("table_id")
        if table_id:
            watch_table = table_pb2_grpc.TableServiceStub(table_ch).WatchTable(
                table_pb2.WatchTableRequest(table_id=table_id), metadata=_token("bob"), timeout=60
            )
            first_view = await watch_table.read()
            assert isinstance(first_view, table_pb2.WatchTableResponse)
            streams.append(watch_table)
        started = time.monotonic()
        for p in cluster.values():
            assert p.popen is not None
            p.popen.send_signal(signal.SIGTERM)
        for stream in streams:
            # Drained: the open stream ends cleanly (OK) well before the grace period.
            rest = []
            while (message := await stream.read()) is not grpc.aio.EOF:
                rest.append(message)
            assert await stream.code() is grpc.StatusCode.OK, rest
        assert time.monotonic() - started < 5
    for p in cluster.values():
        assert p.popen is not None
        rc = p.popen.wait(30)
        assert rc == 0, f"{p.name} exited {rc}:\n{p.log()}"
        log = p.log()
        assert '"event": "service.stopped"' in log, log

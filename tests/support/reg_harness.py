"""Test stack for registration and payout: the real wallet, registration and payout services
on their ServiceHosts (real gRPC servers on 127.0.0.1, auth, own databases), sharing the
loop's in-process bus; plus a fake table producer that appends genuine table events to its
own event store and relays them to the bus, as the table service would.

Used by tests/unit/{registration,payout} (SQLite) and tests/integration/{registration,payout}
(PostgreSQL: pass database URLs).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
from electric.payout.v1 import payout_pb2_grpc
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.convert import usd
from electric_eventlog import (
    ANY,
    EventStore,
    InProcessBus,
    OutboxRelay,
    create_engine,
    migrate,
)
from electric_payout.app import setup as payout_setup
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_registration.app import setup as registration_setup
from electric_wallet.app import setup as wallet_setup
from sqlalchemy import Engine

from tests.support.auth import auth_env, bearer
from tests.support.infra import fresh_database

T = TypeVar("T")


def md(subject: str, role: str = "player") -> tuple[tuple[str, str], ...]:
    """Call metadata with a bearer token for ``subject``."""
    return bearer(subject, role)


OPS = md("ops", "operator")
SVC = md("registration-tests", "service")


@dataclass
class Stack:
    """The running services and stubs to them."""

    hosts: dict[str, ServiceHost]
    channels: list[grpc.aio.Channel]
    bus: InProcessBus
    reg: registration_pb2_grpc.RegistrationServiceStub
    wallet: wallet_pb2_grpc.WalletServiceStub
    payout: payout_pb2_grpc.PayoutServiceStub
    urls: dict[str, str]
    engines: dict[str, Engine] = field(default_factory=dict)

    def engine(self, service: str) -> Engine:
        """An engine on a service's database (for white-box checks)."""
        if service not in self.engines:
            self.engines[service] = create_engine(self.urls[service])
        return self.engines[service]

    async def close(self) -> None:
        for ch in self.channels:
            await ch.close()
        for name in ("payout", "registration", "wallet"):
            if name in self.hosts:
                await self.hosts[name].stop(0)
        for e in self.engines.values():
            e.dispose()

    # ---------------------------------------------------------------- helpers

    async def deposit(self, player: str, cents: int) -> None:
        await self.wallet.Deposit(
            wallet_pb2.DepositRequest(
                transfer_id=f"dep-{player}-{uuid.uuid4().hex[:8]}", player_id=player, amount=cents
            ),
            metadata=OPS,
        )

    async def balance(self, player: str) -> wallet_pb2.Balance:
        r = await self.wallet.GetBalance(
            wallet_pb2.GetBalanceRequest(player_id=player), metadata=OPS
        )
        return r.balance

    async def account(self, account_id: str) -> wallet_pb2.Account:
        r = await self.wallet.GetAccount(
            wallet_pb2.GetAccountRequest(account_id=account_id), metadata=OPS
        )
        return r.account

    async def transfer(self, transfer_id: str) -> wallet_pb2.Transfer:
        r = await self.wallet.GetTransfer(
            wallet_pb2.GetTransferRequest(transfer_id=transfer_id), metadata=OPS
        )
        return r.transfer

    async def register(
        self, player: str, tier: str = "electric-100", entries: int = 1, request_id: str = ""
    ) -> registration_pb2.RegisterResponse:
        return await self.reg.Register(
            registration_pb2.RegisterRequest(
                request_id=request_id or uuid.uuid4().hex, tier_id=tier, entries=entries
            ),
            metadata=md(player),
        )

    async def open_wallet(self, player: str) -> None:
        await self.wallet.OpenPlayerAccounts(
            wallet_pb2.OpenPlayerAccountsRequest(player_id=player), metadata=OPS
        )

    def registration_events(self, table_id: str) -> list[Any]:
        """The decoded events of a registration table's stream."""
        engine = self.engine("registration")
        store = EventStore(engine, producer="registration")
        with engine.connect() as conn:
            return [
                store.decode(e) for e in store.read_stream(conn, f"registration-table-{table_id}")
            ]

    async def tournament_started(self, table_id: str) -> Any:
        """Wait for the table's TournamentStarted and return it."""

        async def check() -> Any:
            evs = self.registration_events(table_id)
            return next((e for e in evs if type(e).__name__ == "TournamentStarted"), None)

        return await eventually(check)

    async def my_tables(
        self, player: str, include_finished: bool = False
    ) -> list[registration_pb2.MyTable]:
        r = await self.reg.ListMyTables(
            registration_pb2.ListMyTablesRequest(include_finished=include_finished),
            metadata=md(player),
        )
        return list(r.tables)


async def start_stack(
    tmp_path: Path, urls: Mapping[str, str] | None = None, *, payout: bool = True
) -> Stack:
    """Wallet, registration (and payout) on their own databases (SQLite files in
    ``tmp_path`` unless ``urls`` names them)."""
    db = {
        s: (urls or {}).get(s) or f"sqlite+pysqlite:///{tmp_path}/{s}.db"
        for s in ("wallet", "registration", "payout", "table")
    }
    env = {
        "ELECTRIC_VAR_DIR": str(tmp_path),
        **auth_env(),
        "ELECTRIC_GRPC_PORT": "0",
        "ELECTRIC_METRICS_PORT": "-1",
        "ELECTRIC_LOG_LEVEL": "WARNING",
        "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "0",
        **{f"ELECTRIC_{s.upper()}_DATABASE_URL": u for s, u in db.items()},
    }
    bus = inprocess_bus()  # the one every service of this event loop relays to
    hosts: dict[str, ServiceHost] = {}
    hosts["wallet"] = ServiceHost(load_config("wallet", env), wallet_setup)
    await hosts["wallet"].start()
    env["ELECTRIC_WALLET_TARGET"] = f"127.0.0.1:{hosts['wallet'].grpc_port}"
    hosts["registration"] = ServiceHost(load_config("registration", env), registration_setup)
    await hosts["registration"].start()
    if payout:
        hosts["payout"] = ServiceHost(load_config("payout", env), payout_setup)
        await hosts["payout"].start()
    channels = {
        name: grpc.aio.insecure_channel(f"127.0.0.1:{h.grpc_port}") for name, h in hosts.items()
    }
    return Stack(
        hosts=hosts,
        channels=list(channels.values()),
        bus=bus,
        reg=registration_pb2_grpc.RegistrationServiceStub(channels["registration"]),
        wallet=wallet_pb2_grpc.WalletServiceStub(channels["wallet"]),
        payout=payout_pb2_grpc.PayoutServiceStub(channels.get("payout", channels["wallet"])),
        urls=db,
    )


@contextlib.asynccontextmanager
async def running_stack(
    tmp_path: Path, urls: Mapping[str, str] | None = None, *, payout: bool = True
) -> AsyncIterator[Stack]:
    """:func:`start_stack`, closed on exit."""
    s = await start_stack(tmp_path, urls, payout=payout)
    try:
        yield s
    finally:
        await s.close()


@contextlib.contextmanager
def fresh_databases(
    postgres_url: str, prefix: str, services: Iterable[str]
) -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL database per service (named ``<prefix><service>_...``), each
    dropped on exit: the ``urls`` of :func:`start_stack`."""
    with contextlib.ExitStack() as stack:
        yield {
            s: stack.enter_context(fresh_database(postgres_url, prefix=f"{prefix}{s}"))
            for s in services
        }


class FakeTable:
    """Appends events to a ``producer`` ("table" by default) event store of its own and
    relays them to the bus: genuine envelopes on that service's topic."""

    def __init__(self, url: str, bus: InProcessBus, producer: str = "table") -> None:
        self.engine = create_engine(url)
        migrate(self.engine)
        self.store = EventStore(self.engine, producer=producer)
        self.relay = OutboxRelay(self.engine, bus, topic=self.store.topic)
        self.bus = bus

    async def emit(self, table_id: str, *events: Any, stream: str = "") -> list[Any]:
        """Append ``events`` to ``stream`` (default ``table-<id>``) and relay them."""

        def append() -> list[Any]:
            with self.engine.begin() as conn:
                return self.store.append(conn, stream or f"table-{table_id}", ANY, list(events))

        stored = await asyncio.to_thread(append)
        await self.relay.publish_once()
        return stored

    async def redeliver(self, event_type: str) -> int:
        """Publish again every message of the table topic of ``event_type`` (a duplicate
        delivery, as Kafka does after a consumer crash); the number re-published."""
        from electric_eventlog import OutgoingMessage

        again = [
            OutgoingMessage(m.topic, m.key, m.value, m.headers)
            async for m in self.bus.read_topic(self.store.topic)
            if m.header("event-type") == event_type.encode()
        ]
        await self.bus.publish(again)
        return len(again)

    def close(self) -> None:
        self.engine.dispose()


def finished_event(
    table_id: str,
    places: list[tuple[int, int, str, str, int, int]],
    multiplier: int,
    pool: int,
    prizes: Mapping[int, int] | None = None,
) -> table_events.TournamentFinished:
    """TournamentFinished with (place, seat, player, entry, tied_count, hand) places and, as
    the table publishes them, each seat's prize (``prizes``: seat → cents; unpaid seats 0).
    Without ``prizes`` the places carry none (payout then holds the tournament)."""
    return table_events.TournamentFinished(
        table_id=table_id,
        tournament_id=table_id,
        places=[
            table_events.FinishingPlace(
                place=p,
                seat=s,
                player_id=pl,
                entry_id=e,
                tied_count=k,
                eliminated_in_hand=h,
                prize=usd(prizes.get(s, 0)) if prizes is not None else None,
            )
            for p, s, pl, e, k, h in places
        ],
        hands_played=max(h for *_, h in places) or 1,
        multiplier=multiplier,
        prize_pool=usd(pool),
    )


async def eventually(
    check: Callable[[], Awaitable[T | None]], *, timeout: float = 10.0, interval: float = 0.05
) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")

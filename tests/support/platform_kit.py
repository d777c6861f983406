"""The whole platform in this test's event loop: the four services on their own
``ServiceHost`` s (real gRPC servers on 127.0.0.1, auth, one SQLite file each under a temp
dir, the loop's in-process bus), wired the way the embedded runner wires them
(``electric_runner.app.service_setups`` / ``embedded_environ``) but without bots.

Used by the API fuzz test (tests/component/fuzz) and the text-client test (tests/e2e/tui)::

    async with embedded_platform(tmp_path) as platform:
        stub = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
        await stub.ListLobby(..., metadata=platform.md("alice", "player"))
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
from electric_platform import ServiceHost, load_config
from electric_runner.app import embedded_environ, service_setups
from electric_table.app import MANAGERS, make_setup
from electric_table.tournament.runtime import TableManager
from sqlalchemy import Engine, create_engine

from tests.support import auth

#: Start order: the wallet first (the others call it), payout last.
ORDER = ("wallet", "registration", "table", "payout")


@dataclass
class Platform:
    """The running services, a channel to each and read-only engines on their databases."""

    hosts: dict[str, ServiceHost]
    targets: dict[str, str]
    db_urls: dict[str, str]
    channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)
    engines: dict[str, Engine] = field(default_factory=dict)

    def channel(self, service: str) -> grpc.aio.Channel:
        """A (shared) channel to ``service``."""
        if service not in self.channels:
            self.channels[service] = grpc.aio.insecure_channel(
                self.targets[service],
                options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)],
            )
        return self.channels[service]

    def engine(self, service: str) -> Engine:
        """A SQLAlchemy engine on ``service``'s database (white-box checks only)."""
        if service not in self.engines:
            self.engines[service] = create_engine(self.db_urls[service])
        return self.engines[service]

    #: The issuer's private key (it signs player, operator and auditor tokens; the bots'
    #: ``BotRunnerConfig.key``).
    issuer_key = auth.ISSUER_KEY

    def token(self, subject: str, role: str, ttl: float = 3600.0) -> str:
        """A valid bearer token for ``subject`` with ``role`` (the test key set)."""
        return auth.token(subject, role, ttl)

    def md(self, subject: str, role: str = "player") -> tuple[tuple[str, str], ...]:
        """Call metadata with a valid bearer token."""
        return (("authorization", f"Bearer {self.token(subject, role)}"),)

    @property
    def bot_targets(self) -> Targets:
        """What the poker bots call: registration, table and wallet."""
        t = self.targets
        return Targets(t["registration"], t["table"], t["wallet"])

    def bot_runner(
        self,
        *,
        seed: int,
        player_prefix: str,
        bots: int = 3,
        until_finished: int = 1,
        **more: Any,
    ) -> BotRunner:
        """Poker bots over this platform's APIs with the issuer's key (``more``: any other
        :class:`BotRunnerConfig` field, e.g. ``mix``)."""
        return BotRunner(
            BotRunnerConfig(
                targets=self.bot_targets,
                key=self.issuer_key,
                bots=bots,
                until_finished=until_finished,
                seed=seed,
                player_prefix=player_prefix,
                **more,
            )
        )

    @property
    def table_manager(self) -> TableManager:
        """The table service's live manager (its event store: ``.store``)."""
        return MANAGERS[id(self.hosts["table"])]

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close(None)
        for name in reversed(ORDER):
            if name in self.hosts:
                await self.hosts[name].stop(0)
        for engine in self.engines.values():
            engine.dispose()


@contextlib.asynccontextmanager
async def embedded_platform(
    tmp_path: Path,
    *,
    hand_pause_ms: int = 0,
    extra_env: Mapping[str, str] | None = None,
) -> AsyncIterator[Platform]:
    """Start the four services (SQLite under ``tmp_path``, free ports); stop them at exit."""
    base = {
        "ELECTRIC_VAR_DIR": str(tmp_path),
        **auth.auth_env(),
        "ELECTRIC_METRICS_PORT": "-1",
        "ELECTRIC_LOG_LEVEL": "ERROR",
        "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "0",
        **(extra_env or {}),
    }
    env = embedded_environ(base, free_ports=True)
    for name in ORDER:
        env[f"ELECTRIC_{name.upper()}_METRICS_PORT"] = "-1"
    setups = dict(service_setups())
    setups["table"] = make_setup(pause_ms=hand_pause_ms)
    hosts: dict[str, ServiceHost] = {}
    targets = {name: env[f"ELECTRIC_{name.upper()}_TARGET"] for name in ORDER}
    platform = Platform(hosts=hosts, targets=targets, db_urls={})
    try:
        for name in ORDER:
            config = load_config(name, env)
            platform.db_urls[name] = config.database_url
            host = ServiceHost(config, setups[name])
            await host.start()
            hosts[name] = host
        yield platform
    finally:
        await platform.close()

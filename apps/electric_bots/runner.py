"""The bot runner: many :class:`~electric_bots.player.BotPlayer` s on one event loop.

Bots are spread over the lobby's tiers (at least three per tier, so tables fill) and mix the
strategies of :mod:`electric_domain.tournament.bots`. The runner is bounded: by a number of
registrations (``max_registrations``), by a wall-clock budget (``duration``) or by an
external stop event; when the budget is used up it *drains* (no new entries, waiting
entries withdrawn, running tables played to the end) unless ``drain=False``.

Usage::

    config = BotRunnerConfig(targets=Targets(...), key=issuer_key, bots=15, max_registrations=30)
    runner = BotRunner(config)
    stats = await runner.run()          # returns when drained / stopped
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric_domain.tournament.bots import BOTS, Bot
from electric_platform.auth import Role, TokenSource
from electric_platform.context import outgoing_metadata
from electric_platform.keys import SigningKey
from electric_platform.log import get_logger

from electric_bots.player import BotPlayer, BotSettings, BotStats, Channels

_log = get_logger("electric.bots")

#: Default strategy mix: loose random players (they end tournaments quickly) and tight ones.
DEFAULT_MIX: tuple[tuple[str, int], ...] = (("random", 3), ("tag", 1))


@dataclass(frozen=True)
class Targets:
    """host:port of the services the bots call."""

    registration: str
    table: str
    wallet: str


@dataclass
class BotRunnerConfig:
    """What the runner does; every bound is optional but a test sets at least one."""

    targets: Targets
    #: The issuer's private key (``electric_platform.keys.SigningKey``): signs the bots'
    #: player tokens and the cashier's operator token.
    key: SigningKey
    #: Number of bot players.
    bots: int = 15
    #: Tier ids to play (empty: every tier of the lobby).
    tiers: Sequence[str] = ()
    #: Strategy names (keys of ``electric_domain.tournament.bots.BOTS``) with weights.
    mix: Sequence[tuple[str, int]] = DEFAULT_MIX
    #: Entries per Register call and open entries per bot.
    entries: int = 1
    max_active: int = 1
    #: Stop registering after this many Register calls in total (None: no limit).
    max_registrations: int | None = None
    #: Stop registering once bots saw this many of their tables finish (None: no limit).
    until_finished: int | None = None
    #: Stop registering after this many seconds (None: no limit).
    duration: float | None = None
    #: After the budget: withdraw waiting entries and finish running tables (else stop).
    drain: bool = True
    #: Deposit per bot in cents.
    deposit_cents: int = 100_000
    #: Strategy thinking time multiplier (0: instant answers).
    think_scale: float = 0.0
    #: Random seed of the strategies' choices (None: from the OS).
    seed: int | None = None
    #: Prefix of the bot player ids (``<prefix>-<n>``); make it unique per run.
    player_prefix: str = "bot"
    #: Subject of the operator token used for deposits.
    operator: str = "bot-cashier"


@dataclass(frozen=True)
class BotAssignment:
    """A bot's identity: player id, tier and strategy name."""

    player_id: str
    tier_id: str
    strategy: str


def assign(
    bots: int, tiers: Sequence[str], mix: Sequence[tuple[str, int]], prefix: str
) -> list[BotAssignment]:
    """Spread ``bots`` over ``tiers`` round-robin and strategies by weight (deterministic).

    Every tier gets at least three bots when ``bots >= 3 * len(tiers)``; otherwise only the
    first ``bots // 3`` tiers are used, so no tier is left with a table that cannot fill.
    """
    if not tiers:
        raise ValueError("no tiers to play")
    usable = list(tiers) if bots >= 3 * len(tiers) else list(tiers)[: max(1, bots // 3)]
    names = [name for name, weight in mix for _ in range(weight)]
    for name in names:
        if name not in BOTS:
            raise ValueError(f"unknown strategy {name!r}; known: {', '.join(BOTS)}")
    if not names:
        raise ValueError("empty strategy mix")
    out = []
    for n in range(bots):
        tier = usable[n % len(usable)]
        # Strategies rotate per tier so every tier gets the same mix.
        strategy = names[(n // len(usable)) % len(names)]
        out.append(BotAssignment(f"{prefix}-{n + 1}", tier, strategy))
    return out


def parse_mix(text: str) -> tuple[tuple[str, int], ...]:
    """``random:2,tag:1`` -> ((random, 2), (tag, 1)); a name alone weighs 1."""
    out = []
    for part in text.split(","):
        name, _, weight = part.strip().partition(":")
        if name not in BOTS:
            raise ValueError(f"unknown bot strategy {name!r}; known: {', '.join(BOTS)}")
        n = int(weight) if weight else 1
        if n <= 0:
            raise ValueError(f"weight of {name!r} must be positive")
        out.append((name, n))
    return tuple(out)


def make_strategy(name: str) -> Bot:
    """A fresh strategy object of the named kind."""
    cls = BOTS[name]
    strategy: Bot = cls()
    return strategy


@dataclass
class BotRunner:
    """Runs the bots of ``config`` until the budget is used up (then drains) or stopped."""

    config: BotRunnerConfig
    stats: BotStats = field(default_factory=BotStats)
    assignments: list[BotAssignment] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    draining: asyncio.Event = field(default_factory=asyncio.Event)

    def _may_register(self) -> bool:
        cfg = self.config
        done = (
            cfg.max_registrations is not None and self.stats.registrations >= cfg.max_registrations
        ) or (
            cfg.until_finished is not None and len(self.stats.tables_finished) >= cfg.until_finished
        )
        if done:
            self.draining.set()
        return not done

    async def _lobby_tiers(self, channel: grpc.aio.Channel, tokens: TokenSource) -> list[str]:
        stub = registration_pb2_grpc.RegistrationServiceStub(channel)
        delay = 0.2
        while True:
            try:
                lobby = await stub.ListLobby(
                    registration_pb2.ListLobbyRequest(),
                    metadata=outgoing_metadata(tokens.token()),
                    timeout=10,
                )
                return [t.tier_id for t in lobby.tiers]
            except grpc.aio.AioRpcError as err:
                if err.code() not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    raise
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=delay)
            if self.stop.is_set():
                return []
            delay = min(delay * 2, 2.0)

    async def run(self) -> BotStats:
        """Play; returns the statistics once every bot has finished."""
        cfg = self.config
        # Registration and wallet instances are interchangeable: a target naming several
        # spreads the calls over them; the table channel sticks to one (it forwards).
        spread = [("grpc.lb_policy_name", "round_robin")]
        channels = Channels(
            registration=grpc.aio.insecure_channel(cfg.targets.registration, options=spread),
            table=grpc.aio.insecure_channel(cfg.targets.table),
            wallet=grpc.aio.insecure_channel(cfg.targets.wallet, options=spread),
        )
        operator = TokenSource(cfg.key, cfg.operator, Role.OPERATOR)
        try:
            tiers = list(cfg.tiers) or await self._lobby_tiers(channels.registration, operator)
            if not tiers:
                return self.stats
            self.assignments = assign(cfg.bots, tiers, cfg.mix, cfg.player_prefix)
            rng = random.Random(cfg.seed)
            players = [
                BotPlayer(
                    BotSettings(
                        player_id=a.player_id,
                        tier_id=a.tier_id,
                        entries=cfg.entries,
                        max_active=cfg.max_active,
                        deposit_cents=cfg.deposit_cents,
                        think_scale=cfg.think_scale,
                    ),
                    make_strategy(a.strategy),
                    random.Random(rng.getrandbits(64)),
                    channels,
                    key=cfg.key,
                    operator=operator,
                    stats=self.stats,
                    may_register=self._may_register,
                    draining=self.draining,
                    stop=self.stop,
                )
                for a in self.assignments
            ]
            _log.info(
                "bots.started",
                bots=len(players),
                tiers=sorted({a.tier_id for a in self.assignments}),
                strategies=sorted({a.strategy for a in self.assignments}),
            )
            tasks = [asyncio.create_task(p.run(), name=f"bot-{p.player_id}") for p in players]
            budget = asyncio.create_task(self._budget())
            try:
                await asyncio.gather(*tasks)
            finally:
                # Stop first: a cancelled gRPC stream may surface as an RpcError (CANCELLED)
                # rather than CancelledError; the bots' loops end on the stop event anyway.
                self.stop.set()
                budget.cancel()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, budget, return_exceptions=True)
            return self.stats
        finally:
            for channel in (channels.registration, channels.table, channels.wallet):
                await channel.close(None)

    async def _budget(self) -> None:
        cfg = self.config
        started = time.monotonic()
        while cfg.duration is None or time.monotonic() - started < cfg.duration:
            if not self._may_register():
                if not cfg.drain:
                    self.stop.set()
                return  # draining: the bots wind down by themselves
            await asyncio.sleep(0.2)
        self.draining.set()
        if not cfg.drain:
            self.stop.set()

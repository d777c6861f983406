"""The casino bot runner: THB and UTH bots on one event loop, bounded by rounds or time.

THB bots each play at their own private table; the runner hands out THB rounds from one
budget (``thb_rounds``: a bot claims a round before each Deal). UTH bots all sit at one live
table (``uth_table``) and play every round the table runs until the table has run
``uth_rounds`` rounds with them (or the time budget is used up).

Usage::

    runner = CasinoRunner(CasinoRunnerConfig(targets=..., key=issuer_key, thb_bots=8,
                                             thb_rounds=500))
    stats = await runner.run()
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from electric_platform.auth import Role, TokenSource
from electric_platform.keys import SigningKey
from electric_platform.log import get_logger

from electric_bots.casino import (
    THB_STRATEGIES,
    CasinoBot,
    CasinoChannels,
    CasinoStats,
    ThbBot,
    thb_strategy,
)
from electric_bots.runner import Targets

_log = get_logger("electric.bots.casino")

#: Default mixes: half optimal, half simple; UTH adds one bot in eight that never decides.
DEFAULT_THB_MIX: tuple[tuple[str, int], ...] = (("optimal", 1), ("simple", 1))
DEFAULT_UTH_MIX: tuple[tuple[str, int], ...] = (("optimal", 4), ("simple", 3), ("never", 1))


def parse_casino_mix(text: str, known: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """``optimal:2,simple:1`` -> ((optimal, 2), (simple, 1)); a name alone weighs 1."""
    out = []
    for part in text.split(","):
        name, _, weight = part.strip().partition(":")
        if name not in known:
            raise ValueError(f"unknown casino strategy {name!r}; known: {', '.join(known)}")
        n = int(weight) if weight else 1
        if n <= 0:
            raise ValueError(f"weight of {name!r} must be positive")
        out.append((name, n))
    return tuple(out)


def spread(count: int, mix: Sequence[tuple[str, int]]) -> list[str]:
    """``count`` strategy names in the proportions of ``mix`` (deterministic round-robin)."""
    names = [name for name, weight in mix for _ in range(weight)]
    if not names:
        raise ValueError("empty strategy mix")
    return [names[n % len(names)] for n in range(count)]


@dataclass
class CasinoRunnerConfig:
    """What the casino runner does; a test sets round budgets, ``make run`` a duration."""

    targets: Targets
    key: SigningKey
    thb_bots: int = 4
    thb_mix: Sequence[tuple[str, int]] = DEFAULT_THB_MIX
    #: THB rounds to deal in total (None: no limit).
    thb_rounds: int | None = None
    uth_bots: int = 0
    uth_mix: Sequence[tuple[str, int]] = DEFAULT_UTH_MIX
    #: UTH table rounds to play (None: no limit), counting rounds with at least
    #: ``uth_min_players`` players.
    uth_rounds: int | None = None
    uth_min_players: int = 1
    #: The live UTH table the bots sit at.
    uth_table: str = "uth-1"
    #: Stop claiming new rounds after this many seconds (None: no limit).
    duration: float | None = None
    deposit_cents: int = 1_000_000
    ante_cents: int = 100
    #: UTH Trips bet per round (0: none).
    trips_cents: int = 0
    #: A never-deciding UTH bot bets in one round out of this many (its rounds run every
    #: decision window to the deadline).
    never_every: int = 1
    player_prefix: str = "casino-bot"
    operator: str = "casino-bot-cashier"
    #: Seconds a bot waits for the table service to learn its seat.
    seat_wait: float = 60.0
    #: Stop every bot as soon as one failed (tests and benchmarks: no hang on a lost bot).
    stop_on_error: bool = False


@dataclass
class CasinoRunner:
    """Runs the casino bots of ``config`` until their budgets are used up or stopped."""

    config: CasinoRunnerConfig
    stats: CasinoStats = field(default_factory=CasinoStats)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    #: (player id, game, strategy) of every bot.
    assignments: list[tuple[str, str, str]] = field(default_factory=list)
    #: Ids of the UTH rounds the bots played (the table's rounds, not per seat).
    uth_rounds_seen: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    #: Optional client-side round timings of the UTH bots (the bench sets one).
    uth_timings: Any = None

    def _in_time(self) -> bool:
        d = self.config.duration
        return d is None or time.monotonic() - self.started < d

    def claim_thb(self) -> bool:
        """One more THB round may be dealt (and is counted now)."""
        limit = self.config.thb_rounds
        if self.stop.is_set() or not self._in_time():
            return False
        if limit is not None and self.stats.claimed["thb"] >= limit:
            return False
        self.stats.claimed["thb"] += 1
        return True

    def uth_more(self) -> bool:
        """The UTH bots should keep playing."""
        limit = self.config.uth_rounds
        if self.stop.is_set() or not self._in_time():
            return False
        return limit is None or len(self.uth_rounds_seen) < limit

    def _bots(self, channels: CasinoChannels, operator: TokenSource) -> list[CasinoBot]:
        cfg = self.config
        common = {
            "key": cfg.key,
            "operator": operator,
            "stats": self.stats,
            "stop": self.stop,
            "deposit_cents": cfg.deposit_cents,
            "ante_cents": cfg.ante_cents,
        }
        bots: list[CasinoBot] = []
        for n, name in enumerate(spread(cfg.thb_bots, cfg.thb_mix) if cfg.thb_bots else []):
            if name not in THB_STRATEGIES:
                raise ValueError(f"unknown THB strategy {name!r}")
            pid = f"{cfg.player_prefix}-thb-{n + 1}"
            self.assignments.append((pid, "thb", name))
            bots.append(
                ThbBot(
                    pid, channels, strategy=thb_strategy(name), seat_wait=cfg.seat_wait,
                    may_play=self.claim_thb, **common,
                )
            )  # fmt: skip
        if cfg.uth_bots:
            from electric_bots.casino_uth import UthBot, uth_strategy

            for n, name in enumerate(spread(cfg.uth_bots, cfg.uth_mix)):
                pid = f"{cfg.player_prefix}-uth-{n + 1}"
                self.assignments.append((pid, "uth", name))
                bots.append(
                    UthBot(
                        pid, channels, strategy=uth_strategy(name), table_id=cfg.uth_table,
                        trips_cents=cfg.trips_cents, rounds_seen=self.uth_rounds_seen,
                        seat_wait=cfg.seat_wait, may_play=self.uth_more,
                        timings=self.uth_timings, min_players=cfg.uth_min_players,
                        bet_every=cfg.never_every if name == "never" else 1, **common,
                    )
                )  # fmt: skip
        return bots

    async def run(self) -> CasinoStats:
        """Play; returns the statistics once every bot has finished."""
        cfg = self.config
        channels = CasinoChannels(
            registration=grpc.aio.insecure_channel(cfg.targets.registration),
            table=grpc.aio.insecure_channel(cfg.targets.table),
            wallet=grpc.aio.insecure_channel(cfg.targets.wallet),
        )
        operator = TokenSource(cfg.key, cfg.operator, Role.OPERATOR)
        self.started = time.monotonic()
        try:
            bots = self._bots(channels, operator)
            _log.info("casino_bots.started", bots=len(bots), thb=cfg.thb_bots, uth=cfg.uth_bots)
            tasks = [asyncio.create_task(b.run(), name=f"casino-{b.player_id}") for b in bots]
            if cfg.stop_on_error:
                for task in tasks:
                    task.add_done_callback(lambda _: self.stop.set() if self.stats.errors else None)
            try:
                await asyncio.gather(*tasks)
            finally:
                self.stop.set()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            return self.stats
        finally:
            for channel in (channels.registration, channels.table, channels.wallet):
                await channel.close(None)


#: The casino bots' defaults, the same for ``make run`` and ``python -m electric_bots``.
DEFAULT_THB_BOTS = 4
DEFAULT_UTH_BOTS = 6
#: A never-deciding UTH bot bets in one round out of this many (``never_every``): its
#: decision windows run to the deadline, so auto-check and auto-fold are played too.
NEVER_DECIDES_EVERY = 4


def add_casino_options(parser: Any) -> None:
    """``--thb-bots`` and ``--uth-bots`` (an ``argparse`` parser): the embedded runner's and
    the separate-process bots' options are the same."""
    parser.add_argument(
        "--thb-bots",
        type=int,
        default=DEFAULT_THB_BOTS,
        help=f"THB casino bots (0 = none); {DEFAULT_THB_BOTS}",
    )
    parser.add_argument(
        "--uth-bots",
        type=int,
        default=DEFAULT_UTH_BOTS,
        help=f"UTH casino bots at table uth-1, one in eight never decides (0 = none);"
        f" {DEFAULT_UTH_BOTS}",
    )


def check_casino_options(parser: Any, thb_bots: int, uth_bots: int) -> None:
    """Refuse negative bot counts (``parser.error`` exits)."""
    if thb_bots < 0 or uth_bots < 0:
        parser.error("--thb-bots/--uth-bots must be >= 0")

"""Live figures of a running platform, from its events and the wallet's public API.

:class:`Figures` folds the events of the registration, table and payout topics (read from
offset zero through the bus, like any consumer) and the wallet's house accounts (read with
an operator token over gRPC). :func:`render` turns them into a few terminal lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import grpc
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.accounts import PRIZE_RESERVE, RAKE
from electric_eventlog import EventBus, ReceivedMessage, decode_envelope, topic_for
from electric_platform.auth import TokenSource
from electric_platform.context import outgoing_metadata

from electric_runner.casino_summary import CasinoFigures, render_casino

#: Topics the summary reads.
TOPICS: tuple[str, ...] = (topic_for("registration"), topic_for("table"), topic_for("payout"))

_TOURNAMENT_STARTED = registration_events.TournamentStarted.DESCRIPTOR.full_name
_TABLE_OPENED = registration_events.TableOpened.DESCRIPTOR.full_name
_PLAYER_REGISTERED = registration_events.PlayerRegistered.DESCRIPTOR.full_name
_HAND_STARTED = table_events.HandStarted.DESCRIPTOR.full_name
_ELECTRIC = table_events.ElectricModeStarted.DESCRIPTOR.full_name
_FINISHED = table_events.TournamentFinished.DESCRIPTOR.full_name
_PRIZE_CREDITED = payout_events.PrizeCredited.DESCRIPTOR.full_name


@dataclass
class Figures:
    """What the live summary shows."""

    tables_opened: int = 0
    entries: int = 0
    tournaments_started: int = 0
    tournaments_finished: int = 0
    hands_dealt: int = 0
    electric_mode: int = 0
    multipliers: Counter[int] = field(default_factory=Counter)
    buy_ins_cents: int = 0
    prize_pools_cents: int = 0
    prizes_credited: int = 0
    prizes_credited_cents: int = 0
    rake_cents: int | None = None
    prize_reserve_cents: int | None = None
    #: Monotonic times of the TournamentFinished events seen (for the rate).
    finished_at: list[float] = field(default_factory=list)
    started_monotonic: float = field(default_factory=time.monotonic)
    #: Casino rounds per game (THB, UTH): rate, handle, house win, observed vs exact RTP.
    casino: CasinoFigures = field(default_factory=CasinoFigures)

    @property
    def running(self) -> int:
        """Tournaments started and not yet finished."""
        return max(0, self.tournaments_started - self.tournaments_finished)

    def per_minute(self, now: float | None = None, window: float = 120.0) -> float:
        """Tournaments finished per minute over the last ``window`` seconds (or uptime)."""
        now = time.monotonic() if now is None else now
        span = min(window, max(now - self.started_monotonic, 1e-9))
        recent = sum(1 for t in self.finished_at if now - t <= span)
        return recent * 60.0 / span

    def apply(self, envelope: Envelope) -> None:
        """Fold one event into the figures (unknown types are ignored)."""
        kind = envelope.event_type
        if self.casino.apply(envelope):
            return
        if kind == _TOURNAMENT_STARTED:
            started = registration_events.TournamentStarted()
            envelope.payload.Unpack(started)
            self.tournaments_started += 1
            self.multipliers[started.multiplier] += 1
            self.buy_ins_cents += len(started.seats) * started.buy_in.cents
            self.prize_pools_cents += started.prize_pool.cents
        elif kind == _TABLE_OPENED:
            self.tables_opened += 1
        elif kind == _PLAYER_REGISTERED:
            self.entries += 1
        elif kind == _HAND_STARTED:
            self.hands_dealt += 1
        elif kind == _ELECTRIC:
            self.electric_mode += 1
        elif kind == _FINISHED:
            self.tournaments_finished += 1
            self.finished_at.append(time.monotonic())
            del self.finished_at[:-5000]
        elif kind == _PRIZE_CREDITED:
            credited = payout_events.PrizeCredited()
            envelope.payload.Unpack(credited)
            self.prizes_credited += 1
            self.prizes_credited_cents += credited.amount.cents


def usd(cents: int | None) -> str:
    """``$1,234.56`` (``-$0.07`` for negatives, ``?`` when unknown)."""
    if cents is None:
        return "?"
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{part:02d}"


def render(figures: Figures, *, extra: str = "") -> list[str]:
    """The summary as a few lines of text."""
    mults = (
        " ".join(f"{m:,}x:{n}" for m, n in sorted(figures.multipliers.items()))
        or "(none drawn yet)"
    )
    lines = [
        f"tournaments  running {figures.running}  finished {figures.tournaments_finished}"
        f"  ({figures.per_minute():.1f}/min)  hands dealt {figures.hands_dealt}"
        f"  electric mode {figures.electric_mode}",
        f"multipliers  {mults}",
        f"money        buy-ins {usd(figures.buy_ins_cents)}  rake {usd(figures.rake_cents)}"
        f"  prize reserve {usd(figures.prize_reserve_cents)}"
        f"  prizes credited {figures.prizes_credited} ({usd(figures.prizes_credited_cents)})",
    ]
    lines += render_casino(figures.casino)
    if extra:
        lines.append(extra)
    return lines


async def follow_events(bus: EventBus, figures: Figures, stop: asyncio.Event) -> None:
    """Fold every event of :data:`TOPICS` into ``figures`` until ``stop`` (new group: from 0)."""

    async def handle(message: ReceivedMessage) -> None:
        with contextlib.suppress(Exception):  # a foreign message must not stop the summary
            figures.apply(decode_envelope(message))

    await bus.consume(
        list(TOPICS),
        group_id=f"electric-runner-summary-{uuid.uuid4().hex}",
        handler=handle,
        stop=stop,
    )


async def poll_wallet(
    target: str, tokens: TokenSource, figures: Figures, stop: asyncio.Event, every: float = 1.0
) -> None:
    """Keep the rake and prize reserve balances fresh (operator GetAccount)."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        while not stop.is_set():
            for account, attr in (
                (RAKE, "rake_cents"),
                (PRIZE_RESERVE, "prize_reserve_cents"),
            ):
                with contextlib.suppress(grpc.aio.AioRpcError):
                    response = await stub.GetAccount(
                        wallet_pb2.GetAccountRequest(account_id=account),
                        metadata=outgoing_metadata(tokens.token()),
                        timeout=5,
                    )
                    setattr(figures, attr, response.account.posted)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)

"""Helpers for the table service tests: registration events, tokens, a player bot over gRPC,
and checks over the stored event stream."""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from electric.common.v1 import money_pb2, tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_domain.tournament import Tournament, default_config, draw_multiplier
from electric_eventlog import envelope_message, pack
from electric_eventlog.bus import OutgoingMessage
from electric_table.tournament import mapping
from google.protobuf.duration_pb2 import Duration

from tests.support.auth import bearer

REG_TOPIC = "electric.registration.events"


def md(sub: str, role: str = "player") -> tuple[tuple[str, str], ...]:
    return bearer(sub, role)


def table_info(t: Tournament) -> mapping.TableInfo:
    """The table facts the mapping needs for tournament ``t`` (table ``t-1``, entry ``e<i>``
    of seat i + 1, a 10 s action timer)."""
    return mapping.TableInfo(
        table_id="t-1",
        table_name="T",
        seats=tuple(
            mapping.SeatInfo(i + 1, s.player_id, f"e{i}", s.player_id)
            for i, s in enumerate(t.state.seats)
        ),
        action_timer_ms=10_000,
    )


def _ms(ms: int) -> Duration:
    d = Duration()
    d.FromMilliseconds(ms)
    return d


def registration_messages(
    table_id: str,
    players: Sequence[str],
    *,
    buy_in_cents: int = 500,
    action_timer_ms: int = 2000,
    time_bank_ms: int = 1000,
    level_ms: int = 2000,
    seed: bytes | None = None,
) -> tuple[list[OutgoingMessage], int]:
    """TableFilled (revealing the seed) then TournamentStarted, as registration publishes
    them on its topic; and the multiplier the seed draws."""
    seed = seed or os.urandom(32)
    multiplier = draw_multiplier(seed, default_config().pay_table).multiplier
    seats = [
        tournament_pb2.SeatAssignment(
            seat=i + 1, player_id=p, entry_id=f"entry-{p}", display_name=p.title()
        )
        for i, p in enumerate(players)
    ]
    prize = money_pb2.Money(cents=multiplier * buy_in_cents, currency="USD")
    filled = reg_events.TableFilled(
        table_id=table_id,
        seats=seats,
        multiplier=multiplier,
        multiplier_seed=seed.hex(),
        prize_pool=prize,
    )
    started = reg_events.TournamentStarted(
        tournament_id=table_id,
        table_id=table_id,
        tier_id=f"electric-{buy_in_cents}",
        seats=seats,
        multiplier=multiplier,
        starting_stack=500,
        buy_in=money_pb2.Money(cents=buy_in_cents, currency="USD"),
        prize_pool=prize,
        action_timer=_ms(action_timer_ms),
        time_bank=_ms(time_bank_ms),
        levels=[
            tournament_pb2.BlindLevel(
                level=i + 1, small_blind=sb, big_blind=2 * sb, ante=a, duration=_ms(level_ms)
            )
            for i, (sb, a) in enumerate([(10, 0), (15, 0), (20, 5), (30, 5), (40, 10), (50, 10)])
        ],
        table_name=f"test {table_id[:8]}",
    )
    out = []
    for version, payload in ((4, filled), (5, started)):
        env = Envelope(
            event_id=str(uuid.uuid4()),
            stream_id=f"registration-table-{table_id}",
            stream_version=version,
            event_type=payload.DESCRIPTOR.full_name,
            payload=pack(payload),
            producer="registration",
            correlation_id=f"test-{table_id}",
        )
        env.occurred_at.GetCurrentTime()
        out.append(envelope_message(REG_TOPIC, env))
    return out, multiplier


async def wait_table(
    stub: table_pb2_grpc.TableServiceStub, table_id: str, who: str, timeout: float = 30
) -> table_pb2.TableView:
    """Poll GetTable until the table exists."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            resp = await stub.GetTable(
                table_pb2.GetTableRequest(table_id=table_id), metadata=md(who), timeout=10
            )
            return resp.table
        except grpc.aio.AioRpcError as err:
            if err.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                raise
            assert asyncio.get_running_loop().time() < deadline, "table never appeared"
            await asyncio.sleep(0.1)


def choose(view: table_pb2.TableView, rng: random.Random) -> tuple[int, int]:
    """A random legal decision (action type, amount) — often aggressive so games end."""
    legal = {a.type: a for a in view.legal_actions}
    r = rng.random()
    if table_pb2.ACTION_TYPE_ALL_IN in legal and r < 0.15:
        return table_pb2.ACTION_TYPE_ALL_IN, 0
    for kind in (table_pb2.ACTION_TYPE_RAISE, table_pb2.ACTION_TYPE_BET):
        if kind in legal and r < 0.35:
            a = legal[kind]
            return kind, rng.randint(a.min_amount, min(a.max_amount, a.min_amount * 2))
    if table_pb2.ACTION_TYPE_CHECK in legal:
        return table_pb2.ACTION_TYPE_CHECK, 0
    if table_pb2.ACTION_TYPE_CALL in legal and r < 0.9:
        return table_pb2.ACTION_TYPE_CALL, 0
    return table_pb2.ACTION_TYPE_FOLD, 0


@dataclass
class Bot:
    """A player over WatchTable + Act; records every view it receives."""

    name: str
    table_id: str
    seed: int = 0
    passive: bool = False  # never acts (timeouts)
    views: list[table_pb2.TableView] = field(default_factory=list)
    #: Every WatchTable message carrying an event, in order (the story the bot was told).
    events: list[table_pb2.WatchTableResponse] = field(default_factory=list)
    acted: dict[str, tuple[int, int]] = field(default_factory=dict)  # request id -> (hand, seq)
    errors: list[grpc.StatusCode] = field(default_factory=list)
    think: float = 0.0
    reconnects: int = 0
    retries: int = 0

    async def play(self, target: str, *, stop_after_hands: int = 0) -> None:
        """Play until the tournament finishes; survives server restarts (reconnects, and
        retries an unanswered Act with the SAME request id until it gets an answer)."""
        rng = random.Random(self.seed or hash(self.name))
        seen: set[tuple[int, int]] = set()
        while True:
            try:
                if await self._session(target, rng, seen, stop_after_hands):
                    return
            except grpc.aio.AioRpcError as err:
                if err.code() not in _RETRY:
                    raise
            self.reconnects += 1  # the stream broke or ended early (server gone)
            await asyncio.sleep(0.2)

    async def _session(
        self,
        target: str,
        rng: random.Random,
        seen: set[tuple[int, int]],
        stop_after_hands: int,
    ) -> bool:
        async with grpc.aio.insecure_channel(target) as ch:
            stub = table_pb2_grpc.TableServiceStub(ch)
            stream = stub.WatchTable(
                table_pb2.WatchTableRequest(table_id=self.table_id), metadata=md(self.name)
            )
            async for resp in stream:
                if resp.HasField("event"):
                    self.events.append(resp)
                if not resp.HasField("table"):
                    continue  # an event followed by more events: the snapshot comes last
                view = resp.table
                self.views.append(view)
                if view.status == table_pb2.TABLE_STATUS_FINISHED:
                    return True
                if stop_after_hands and view.hand_number >= stop_after_hands:
                    return True
                if self.passive or not view.legal_actions:
                    continue
                key = (view.hand_number, view.action_seq)
                if key in seen:
                    continue
                seen.add(key)
                if self.think:
                    await asyncio.sleep(rng.uniform(0, self.think))
                action, amount = choose(view, rng)
                await self._act(target, view, action, amount)
            return False  # the stream ended without a finish (server stopping): reconnect

    async def _act(self, target: str, view: table_pb2.TableView, action: int, amount: int) -> None:
        rid = str(uuid.uuid4())
        req = table_pb2.ActRequest(
            request_id=rid,
            table_id=self.table_id,
            hand_number=view.hand_number,
            action_seq=view.action_seq,
            action=action,  # type: ignore[arg-type]
            amount=amount,
        )
        while True:
            try:
                async with grpc.aio.insecure_channel(target) as ch:
                    await table_pb2_grpc.TableServiceStub(ch).Act(
                        req, metadata=md(self.name), timeout=10
                    )
                self.acted[rid] = (view.hand_number, view.action_seq)
                return
            except grpc.aio.AioRpcError as err:
                if err.code() in _RETRY:
                    self.retries += 1
                    await asyncio.sleep(0.3)
                    continue
                # A timer may have acted first; anything else is a failure.
                assert err.code() is grpc.StatusCode.FAILED_PRECONDITION, err
                self.errors.append(err.code())
                return


_RETRY = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
)


def decode_stream(envelopes: Sequence[Envelope]) -> list[tuple[int, Any]]:
    """(version, payload message) of every stored table event."""
    from electric_eventlog import default_registry

    reg = default_registry()
    return [(e.stream_version, reg.unpack(e.payload)) for e in envelopes]


def check_stream(
    events: list[tuple[int, Any]], envelopes: Sequence[Envelope] | None = None
) -> dict[str, int]:
    """Invariants of a table stream: contiguous versions, per-hand action numbers 1..n with
    no gap or repeat, at most one event per player request id, one TableStarted first, hand
    numbers 1..n. ``envelopes`` (the stored ones ``events`` were decoded from), when given,
    add their time, producer and causation to the report of an out-of-order hand number."""
    versions = [v for v, _ in events]
    assert versions == list(range(1, len(versions) + 1)), "versions not contiguous"
    assert isinstance(events[0][1], tev.TableStarted)
    by_hand: dict[int, list[int]] = {}
    requests: dict[str, int] = {}
    for _, m in events:
        if isinstance(m, tev.ActionTaken):
            by_hand.setdefault(m.hand_number, []).append(m.action_seq)
            if m.request_id:
                requests[m.request_id] = requests.get(m.request_id, 0) + 1
    for hand, seqs in by_hand.items():
        assert seqs == list(range(1, len(seqs) + 1)), f"hand {hand}: action seqs {seqs}"
    assert all(n == 1 for n in requests.values()), "a request was applied twice"
    hands = [m.hand_number for _, m in events if isinstance(m, tev.HandStarted)]
    assert hands == list(range(1, len(hands) + 1)), _hands_report(hands, events, envelopes)
    return requests


def _hands_report(
    hands: list[int], events: list[tuple[int, Any]], envelopes: Sequence[Envelope] | None
) -> str:
    """Why the HandStarted numbers are not 1..n: the table, the numbers, the TableStarted
    and the events around the first HandStarted out of order (with their envelopes' time,
    producer and causation when given)."""
    first = events[0][1]
    table = getattr(first, "table_id", "?")
    started = [i for i, (_, m) in enumerate(events) if isinstance(m, tev.HandStarted)]
    bad = next(k for k, h in enumerate(hands) if h != k + 1)
    at = started[bad]
    by_version = {e.stream_version: e for e in envelopes or ()}
    ended = [m.hand_number for _, m in events if isinstance(m, tev.HandEnded)]

    def line(i: int) -> str:
        v, m = events[i]
        hand = getattr(m, "hand_number", "")
        text = f"  v{v} {type(m).__name__} hand={hand}"
        env = by_version.get(v)
        if env is not None:
            text += (
                f" at={env.occurred_at.ToJsonString()} producer={env.producer}"
                f" causation={env.causation_id} correlation={env.correlation_id}"
                f" event_id={env.event_id}"
            )
        return text

    around = range(max(0, (started[bad - 1] if bad else at) - 3), min(len(events), at + 4))
    ts = (
        f"table_id={first.table_id} seats={[s.player_id for s in first.seats]}"
        f" first_button_seat={first.first_button_seat} source={first.source_event_id}"
        if isinstance(first, tev.TableStarted)
        else repr(first)
    )
    return "\n".join(
        [
            f"hand numbers not consecutive on table {table}: {hands}",
            f"hands ended: {ended}",
            f"first anomaly: HandStarted #{bad + 1} of the stream has hand_number {hands[bad]}"
            f" (expected {bad + 1}), at version {events[at][0]} of {len(events)}",
            f"TableStarted: {ts}",
            "events around it:",
            *(line(i) for i in around),
        ]
    )


def shown_at(events: list[tuple[int, Any]]) -> dict[tuple[int, int], int]:
    """(hand, seat) → stream version at which the seat's cards were exposed."""
    out: dict[tuple[int, int], int] = {}
    for v, m in events:
        if isinstance(m, tev.CardsShown):
            out.setdefault((m.hand_number, m.seat), v)
    return out


def check_privacy(bot: Bot, events: list[tuple[int, Any]]) -> int:
    """Every view the bot received shows another seat's hole cards only after the event
    that exposed them; returns how many views were checked."""
    shown = shown_at(events)
    dealt = {
        (m.hand_number, m.seat): [c.text for c in m.cards]
        for _, m in events
        if isinstance(m, tev.CardsDealt)
    }
    for view in bot.views:
        for s in view.seats:
            if not s.hole_cards:
                continue
            cards = [c.text for c in s.hole_cards]
            key = (view.hand.hand_number, s.seat)
            assert dealt.get(key) == cards, f"wrong cards in view for {key}"
            if s.seat == view.your_seat:
                continue
            assert key in shown, f"{bot.name} saw unexposed cards of seat {s.seat}: {key}"
            assert view.version >= shown[key], f"{bot.name} saw seat {s.seat} before exposure"
    return len(bot.views)

"""A seeded Electric Poker tournament on one tree's table service, in virtual time.

The table is started the way the service starts it: registration's ``TableFilled`` and
``TournamentStarted`` (seeded multiplier seed, three players) through the consumer's
handlers. Then the service's own driver step (``TableDriver._step``: Tick at a due time,
DealHand after the pause) runs under the table's lock at the virtual clock, with seeded
deck seeds; while the table waits for its next wake-up the player to act may act, through
the ``TableService`` servicer (``Act``, now and then a retry of the same request, a stale
command or a pre-turn selection by another seat), or let the timer run out. After every
change each player and an auditor read the table (``GetTable``) and every player's
``WatchTable`` stream (opened before the first hand) is caught up to the head, so each
message is what a player would be sent.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from electric.common.v1 import money_pb2, tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import table_pb2
from electric_domain.tournament import default_config, draw_multiplier
from electric_eventlog import EventStore, causality, pack
from electric_platform.auth import Role
from google.protobuf.duration_pb2 import Duration
from sqlalchemy import Engine

from tools.side_by_side.determinism import CLOCK, seed_bytes
from tools.side_by_side.recording import Recorder, as_json, context_of
from tools.side_by_side.tree_modules import load

if TYPE_CHECKING:
    from electric_table.host.clock import Clock
    from electric_table.tournament.api import TableApi
    from electric_table.tournament.consumers import on_table_filled, start_table
    from electric_table.tournament.driver import TableDriver
    from electric_table.tournament.handlers import TableHandlers
    from electric_table.tournament.runtime import TableManager, TableRuntime
else:  # the tree under test's names (`tree_modules`)
    Clock = load("electric_table.host.clock", "electric_table.clock").Clock
    TableApi = load("electric_table.tournament.api", "electric_table.api").TableApi
    _consumers = load("electric_table.tournament.consumers", "electric_table.consumers")
    on_table_filled, start_table = _consumers.on_table_filled, _consumers.start_table
    TableDriver = load("electric_table.tournament.driver", "electric_table.driver").TableDriver
    TableHandlers = load(
        "electric_table.tournament.handlers", "electric_table.handlers"
    ).TableHandlers
    _runtime = load("electric_table.tournament.runtime", "electric_table.runtime")
    TableManager, TableRuntime = _runtime.TableManager, _runtime.TableRuntime

PLAYERS = ("ann", "ben", "cat")
AUDITOR = "auditor"
BUY_IN_CENTS = 500
#: Steps after which a tournament that has not finished is a harness failure.
MAX_STEPS = 20_000


def _ms(ms: int) -> Duration:
    d = Duration()
    d.FromMilliseconds(ms)
    return d


def registration_envelopes(table_id: str, seed: bytes) -> list[Envelope]:
    """TableFilled (revealing ``seed``) then TournamentStarted, as registration stores them."""
    multiplier = draw_multiplier(seed, default_config().pay_table).multiplier
    seats = [
        tournament_pb2.SeatAssignment(
            seat=i + 1, player_id=p, entry_id=f"entry-{table_id}-{p}", display_name=p.title()
        )
        for i, p in enumerate(PLAYERS)
    ]
    prize = money_pb2.Money(cents=multiplier * BUY_IN_CENTS, currency="USD")
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
        tier_id=f"electric-{BUY_IN_CENTS}",
        seats=seats,
        multiplier=multiplier,
        starting_stack=500,
        buy_in=money_pb2.Money(cents=BUY_IN_CENTS, currency="USD"),
        prize_pool=prize,
        action_timer=_ms(8_000),
        time_bank=_ms(5_000),
        levels=[
            tournament_pb2.BlindLevel(
                level=i + 1, small_blind=sb, big_blind=2 * sb, ante=a, duration=_ms(45_000)
            )
            for i, (sb, a) in enumerate([(10, 0), (15, 0), (20, 5), (30, 5), (40, 10), (50, 10)])
        ],
        table_name=f"side by side {table_id}",
    )
    out = []
    for version, payload in ((4, filled), (5, started)):
        env = Envelope(
            event_id=f"registration-{table_id}-{version}",
            stream_id=f"registration-table-{table_id}",
            stream_version=version,
            event_type=payload.DESCRIPTOR.full_name,
            payload=pack(payload),
            producer="registration",
            correlation_id=f"open-{table_id}",
        )
        env.occurred_at.FromMilliseconds(CLOCK.now)
        out.append(env)
    return out


@dataclass
class Watcher:
    """One player's WatchTable stream, every message kept."""

    player: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    last: int = 0
    done: bool = False

    async def run(self, api: TableApi, table_id: str) -> None:
        try:
            request = table_pb2.WatchTableRequest(table_id=table_id)
            async for resp in api.WatchTable(request, None):
                self.messages.append(as_json(resp))
                self.last = resp.sequence
        finally:
            self.done = True


def choose(view: table_pb2.TableView, rng: random.Random) -> tuple[int, int]:
    """A legal decision (action, amount), often aggressive so tournaments end."""
    legal = {a.type: a for a in view.legal_actions}
    r = rng.random()
    if table_pb2.ACTION_TYPE_ALL_IN in legal and r < 0.12:
        return table_pb2.ACTION_TYPE_ALL_IN, 0
    for kind in (table_pb2.ACTION_TYPE_RAISE, table_pb2.ACTION_TYPE_BET):
        if kind in legal and r < 0.35:
            a = legal[kind]
            return kind, rng.randint(a.min_amount, min(a.max_amount, a.min_amount * 2))
    if table_pb2.ACTION_TYPE_CHECK in legal:
        return table_pb2.ACTION_TYPE_CHECK, 0
    if table_pb2.ACTION_TYPE_CALL in legal and r < 0.85:
        return table_pb2.ACTION_TYPE_CALL, 0
    return table_pb2.ACTION_TYPE_FOLD, 0


class TournamentRun:
    """One tournament table of one tree (module doc)."""

    def __init__(self, engine: Engine, seed: int, index: int, *, perturb: bool) -> None:
        self.table_id = f"sbs-{seed}-{index}"
        self.rng = random.Random(seed_bytes("bots", seed, index))
        self.store = EventStore(engine, producer="table")
        self.stopping = asyncio.Event()
        self.manager = TableManager(
            engine, self.store, stopping=self.stopping, clock=Clock(CLOCK.now_ms)
        )
        self.handlers = TableHandlers(self.manager, hand_pause_ms=1_500)
        self.api = TableApi(self.handlers, self.stopping, self.manager)
        deals = itertools.count()

        def deck_seed() -> bytes:
            n = next(deals)
            salt = "perturbed" if perturb and n == 2 else ""  # the injected difference
            return seed_bytes("deck", seed, index, n, salt)

        self.driver = TableDriver(self.manager, self.handlers, seed_source=deck_seed)
        self.requests = itertools.count(1)
        self.multiplier_seed = seed_bytes("multiplier", seed, index)

    def start(self, engine: Engine) -> None:
        """Registration's events through the consumer's handlers, in one transaction each."""
        for env in registration_envelopes(self.table_id, self.multiplier_seed):
            payload = self.store.decode(env)
            with engine.begin() as conn:
                if isinstance(payload, reg_events.TableFilled):
                    on_table_filled(conn, env, payload)
                else:
                    assert isinstance(payload, reg_events.TournamentStarted)
                    start_table(self.store, conn, env, payload)

    async def play(self, engine: Engine, rec: Recorder) -> None:
        self.start(engine)
        rt = await self.manager.load(self.table_id)
        if rt is None:
            raise RuntimeError(f"table {self.table_id} did not load")
        watchers = [Watcher(p) for p in PLAYERS]
        tasks = [
            asyncio.create_task(w.run(self.api, self.table_id), context=context_of(w.player))
            for w in watchers
        ]
        try:
            await self._views(rt, rec, watchers)
            for _ in range(MAX_STEPS):
                if rt.finished:
                    break
                await self._step(rt, rec, watchers)
            else:
                raise RuntimeError(f"{self.table_id} did not finish in {MAX_STEPS} steps")
        finally:
            self.stopping.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.manager.close()
        for w in watchers:
            for message in w.messages:
                rec.add(w.player, "WatchTable", {"message": message})

    async def _step(self, rt: TableRuntime, rec: Recorder, watchers: list[Watcher]) -> None:
        rec.step += 1
        before = rt.version
        async with rt.lock:
            with causality.caused_by(rt.correlation_id, rt.last_event_id):
                delay = await self.driver._step(rt)
        if rt.version != before:
            await self._views(rt, rec, watchers)
        if delay <= 0:
            return
        wake = CLOCK.now + max(1, round(delay * 1000))
        if not await self._players(rt, rec, wake):
            CLOCK.advance_to(wake)  # nobody acts before the table's next wake-up
        if rt.version != before:
            await self._views(rt, rec, watchers)

    async def _players(self, rt: TableRuntime, rec: Recorder, wake: int) -> bool:
        """The player to act acts before ``wake`` (or lets the timer run); others may
        select a pre-turn action. True when time moved for a player's call."""
        turn = rt.tournament.state.turn
        if turn is None:
            return False
        player = rt.info.seats[turn.seat].player_id
        view = await self._get(rec, player)
        think = self.rng.randint(100, 2_500)
        if view is None or not view.legal_actions or self.rng.random() < 0.07:
            return False  # the timer runs out (a time bank, a sit-out after two)
        if CLOCK.now + think >= wake:
            return False
        CLOCK.advance_to(CLOCK.now + think)
        if self.rng.random() < 0.15:
            await self._pre_action(rt, rec, exclude=player)
        action, amount = choose(view, self.rng)
        seq = view.action_seq - 1 if self.rng.random() < 0.03 else view.action_seq  # stale
        request = table_pb2.ActRequest(
            request_id=f"{player}-{next(self.requests)}",
            table_id=self.table_id,
            hand_number=view.hand_number,
            action_seq=seq,
            action=action,  # type: ignore[arg-type]
            amount=amount,
        )
        await rec.call(player, "Act", self.api.Act, request)
        if self.rng.random() < 0.05:  # a retry of the same request: answered, not re-applied
            await rec.call(player, "Act", self.api.Act, request)
        return True

    async def _pre_action(self, rt: TableRuntime, rec: Recorder, *, exclude: str) -> None:
        others = [s.player_id for s in rt.info.seats if s.player_id != exclude]
        player = self.rng.choice(others)
        view = await self._get(rec, player)
        if view is None or not view.pre_actions_offered:
            return
        request = table_pb2.SetPreActionRequest(
            request_id=f"{player}-{next(self.requests)}",
            table_id=self.table_id,
            hand_number=view.hand_number,
            action_seq=view.action_seq,
            pre_action=self.rng.choice(list(view.pre_actions_offered)),
        )
        await rec.call(player, "SetPreAction", self.api.SetPreAction, request)

    async def _get(self, rec: Recorder, who: str, role: Role = Role.PLAYER) -> Any:
        request = table_pb2.GetTableRequest(table_id=self.table_id)
        answer = await rec.call(who, "GetTable", self.api.GetTable, request, role=role)
        return None if answer is None else answer.table

    async def _views(self, rt: TableRuntime, rec: Recorder, watchers: list[Watcher]) -> None:
        """Every player's and the auditor's view now; the watchers caught up to the head."""
        for player in PLAYERS:
            await self._get(rec, player)
        await self._get(rec, AUDITOR, Role.AUDITOR)
        for _ in range(10_000):
            if all(w.done or w.last >= rt.version for w in watchers):
                return
            await asyncio.sleep(0)
        raise RuntimeError(f"watchers of {self.table_id} not caught up at {rt.version}")

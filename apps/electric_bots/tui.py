"""A text client: a whole tournament drawn as text from WatchTable and WatchMyTables alone.

The renderers are pure (no I/O): :class:`TableRenderer` turns each ``WatchTableResponse``
(a snapshot, a typed :class:`TableEvent`, or both) into lines — seats and stacks, blinds and
antes, each action with its amount, the board, the pots (side pots included), the showdown
(show or muck), the pot awards, eliminations and the finishing places — and records what it
drew as data (:attr:`TableRenderer.drawn`) so a test or another front end can check it.
:class:`MyTablesRenderer` draws the Multi-Table Bar from ``WatchMyTablesResponse`` s.

:func:`follow_table` and :func:`follow_my_tables` drive them over gRPC (resuming a broken
table stream from the last sequence drawn); ``python -m electric_bots.tui`` (see
:mod:`electric_bots.tui_main`) is the live client against a running platform.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import grpc
from electric.common.v1 import cards_pb2, money_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc

Metadata = tuple[tuple[str, str], ...]
Out = Callable[[str], None]

_STREETS = {
    table_pb2.STREET_PREFLOP: "PRE-FLOP",
    table_pb2.STREET_FLOP: "FLOP",
    table_pb2.STREET_TURN: "TURN",
    table_pb2.STREET_RIVER: "RIVER",
    table_pb2.STREET_SHOWDOWN: "SHOWDOWN",
}
_FORCED = {
    table_pb2.FORCED_BET_TYPE_ANTE: "ante",
    table_pb2.FORCED_BET_TYPE_SMALL_BLIND: "small blind",
    table_pb2.FORCED_BET_TYPE_BIG_BLIND: "big blind",
}
_ORIGIN = {
    table_pb2.ACTION_ORIGIN_PRE_ACTION: "pre-action",
    table_pb2.ACTION_ORIGIN_TIMEOUT: "timed out",
    table_pb2.ACTION_ORIGIN_SITTING_OUT: "sitting out",
    table_pb2.ACTION_ORIGIN_ELECTRIC_MODE: "electric",
}
_TIMER = {
    table_pb2.TIMER_KIND_TIME_BANK_STARTED: "time bank started",
    table_pb2.TIMER_KIND_ACTION_TIMER_EXPIRED: "action timer expired",
    table_pb2.TIMER_KIND_TIME_BANK_EXHAUSTED: "time bank exhausted",
}
_MY_STATUS = {
    registration_pb2.TABLE_STATUS_REGISTERING: "registering",
    registration_pb2.TABLE_STATUS_RUNNING: "running",
    registration_pb2.TABLE_STATUS_FINISHED: "finished",
    registration_pb2.TABLE_STATUS_CANCELLED: "cancelled",
}


# ---------------------------------------------------------------------------- what was drawn


@dataclass(frozen=True)
class DrawnAction:
    """A betting decision as drawn: hand, action number, seat, ``ActionType`` name
    (``FOLD`` … ``ALL_IN``), chips it added and the seat's street total afterwards."""

    hand: int
    action_seq: int
    seat: int
    action: str
    amount_added: int
    street_bet: int


@dataclass(frozen=True)
class DrawnAward:
    """One winner's share of one pot as drawn."""

    hand: int
    pot_index: int
    seat: int
    amount: int


@dataclass(frozen=True)
class DrawnPlace:
    """A finishing place as drawn."""

    place: int
    seat: int
    player_id: str
    prize_cents: int


@dataclass
class Drawn:
    """Everything the renderer drew that a replay can be compared with."""

    actions: list[DrawnAction] = field(default_factory=list)
    awards: list[DrawnAward] = field(default_factory=list)
    places: list[DrawnPlace] = field(default_factory=list)
    #: Hands whose revealed deck seed matched the commitment shown before the deal.
    seeds_verified: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------- formatting


def cards(items: Iterable[cards_pb2.Card]) -> str:
    """``[As Kd]``."""
    return "[" + " ".join(c.text or "??" for c in items) + "]"


def money(m: money_pb2.Money) -> str:
    """``$12.50``."""
    return f"${m.cents // 100:,}.{m.cents % 100:02d}"


def seed_matches(seed_hex: str, commitment: str) -> bool:
    """True when SHA-256 of the revealed seed is the commitment shown before the deal."""
    try:
        return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest() == commitment.lower()
    except ValueError:
        return False


# ---------------------------------------------------------------------------- one table


class TableRenderer:
    """Turns one table's WatchTable stream into text lines (pure; see the module docstring).

    ``show_turns`` also draws each turn start with its timer ring (noisy, off by default).
    """

    def __init__(self, *, show_turns: bool = False) -> None:
        self.show_turns = show_turns
        self.names: dict[int, str] = {}
        self.players: dict[int, str] = {}
        self.stacks: dict[int, int] = {}
        self.commitments: dict[int, str] = {}
        #: Sequence of the last stored event drawn (quote it to resume the stream).
        self.sequence = 0
        #: Blind level last drawn.
        self.level = 0
        self.finished = False
        self.drawn = Drawn()
        self._header = False

    def name(self, seat: int) -> str:
        return self.names.get(seat) or f"Seat {seat}"

    # -- input ---------------------------------------------------------------------------

    def feed(self, response: table_pb2.WatchTableResponse) -> list[str]:
        """The lines one stream message adds (events already drawn are skipped)."""
        lines: list[str] = []
        if response.HasField("table"):
            lines += self.snapshot(response.table)
        if response.HasField("event"):
            if response.sequence and response.sequence <= self.sequence:
                return lines  # a resumed stream repeating what was drawn
            lines += self.event(response.event)
        if response.sequence > self.sequence:
            self.sequence = response.sequence
        return lines

    def snapshot(self, view: table_pb2.TableView, *, stacks: bool = True) -> list[str]:
        """Learn names and seats from a view; the header the first time (``stacks``: with
        the view's stacks, else the seats only — when the story is drawn from hand 1)."""
        for seat in view.seats:
            self.names[seat.seat] = seat.display_name or seat.player_id
            self.players[seat.seat] = seat.player_id
        if view.status == table_pb2.TABLE_STATUS_FINISHED:
            self.finished = True
        if self._header:
            return []
        self._header = True
        lines = [
            f"=== {view.table_name or view.table_id} · buy-in {money(view.buy_in)} · "
            f"x{view.multiplier} · prize pool {money(view.prize_pool)} ===",
        ]
        for seat in view.seats:
            you = " (you)" if seat.seat == view.your_seat else ""
            chips = f" — {seat.stack} chips" if stacks else ""
            lines.append(f"  Seat {seat.seat}: {self.name(seat.seat)}{you}{chips}")
            self.stacks[seat.seat] = seat.stack
        level = view.level
        if level.big_blind and stacks:
            self.level = level.level
            lines.append(
                f"  Level {level.level}: blinds {level.small_blind}/{level.big_blind}"
                + (f" ante {level.ante}" if level.ante else "")
            )
        return lines

    def event(self, event: table_pb2.TableEvent) -> list[str]:
        """The lines of one typed event."""
        kind = event.WhichOneof("kind")
        if kind is None:
            return []
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return [f"  ({kind})"]
        lines: list[str] = handler(getattr(event, kind))
        return lines

    # -- events --------------------------------------------------------------------------

    def _on_hand_started(self, e: table_pb2.HandStartEvent) -> list[str]:
        self.commitments[e.hand_number] = e.deck_commitment
        lv = e.level
        blinds = f"{lv.small_blind}/{lv.big_blind}" + (f" ante {lv.ante}" if lv.ante else "")
        electric = " ⚡ ELECTRIC MODE" if e.electric else ""
        stacks = ", ".join(f"{self.name(s.seat)} {s.stack}" for s in e.stacks)
        for s in e.stacks:
            self.stacks[s.seat] = s.stack
        return [
            f"--- Hand #{e.hand_number} --- blinds {blinds}{electric}",
            f"  button {self.name(e.button_seat)}, SB {self.name(e.small_blind_seat)}, "
            f"BB {self.name(e.big_blind_seat)}; stacks: {stacks}",
            f"  deck commitment {e.deck_commitment[:16]}…",
        ]

    def _on_hole_cards_dealt(self, e: table_pb2.HoleCardsEvent) -> list[str]:
        if not e.cards:
            return []
        return [f"  Dealt to {self.name(e.seat)}: {cards(e.cards)}"]

    def _on_forced_bet(self, e: table_pb2.ForcedBetEvent) -> list[str]:
        self.stacks[e.seat] = self.stacks.get(e.seat, 0) - e.amount
        all_in = " and is all-in" if e.all_in else ""
        return [f"  {self.name(e.seat)} posts {_FORCED.get(e.type, 'a blind')} {e.amount}{all_in}"]

    def _on_action(self, e: table_pb2.ActionEvent) -> list[str]:
        self.stacks[e.seat] = self.stacks.get(e.seat, 0) - e.amount_added
        action = table_pb2.ActionType.Name(e.action).removeprefix("ACTION_TYPE_")
        self.drawn.actions.append(
            DrawnAction(e.hand_number, e.action_seq, e.seat, action, e.amount_added, e.street_bet)
        )
        verb = {
            "FOLD": "folds",
            "CHECK": "checks",
            "CALL": f"calls {e.amount_added}",
            "BET": f"bets {e.street_bet}",
            "RAISE": f"raises to {e.street_bet}",
            "ALL_IN": f"is all-in for {e.amount_added} (to {e.street_bet})",
        }.get(action, f"{action.lower()} {e.amount_added}")
        if e.all_in and action != "ALL_IN":
            verb += " and is all-in"
        origin = _ORIGIN.get(e.origin)
        return [f"  {self.name(e.seat)} {verb}" + (f" [{origin}]" if origin else "")]

    def _on_uncalled_bet_returned(self, e: table_pb2.UncalledBetEvent) -> list[str]:
        self.stacks[e.seat] = self.stacks.get(e.seat, 0) + e.amount
        return [f"  Uncalled bet of {e.amount} returned to {self.name(e.seat)}"]

    def _on_street_dealt(self, e: table_pb2.StreetEvent) -> list[str]:
        street = _STREETS.get(e.street, "BOARD")
        return [f"  *** {street} *** {cards(e.board)}"]

    def _on_pots(self, e: table_pb2.PotsEvent) -> list[str]:
        parts = []
        for pot in e.pots:
            name = "main pot" if pot.index == 0 else f"side pot {pot.index}"
            eligible = ",".join(str(s) for s in pot.eligible_seats)
            parts.append(f"{name} {pot.amount} (seats {eligible})")
        return [f"  Pots: {'; '.join(parts) or 'none'} — total {e.total}"]

    def _on_showdown(self, e: table_pb2.ShowdownEvent) -> list[str]:
        if e.decision == table_pb2.SHOWDOWN_DECISION_MUCK:
            return [f"  {self.name(e.seat)} mucks"]
        desc = f" ({e.hand_description})" if e.hand_description else ""
        return [f"  {self.name(e.seat)} shows {cards(e.cards)}{desc}"]

    def _on_pot_awarded(self, e: table_pb2.PotAwardEvent) -> list[str]:
        pot = "the main pot" if e.pot_index == 0 else f"side pot {e.pot_index}"
        lines = []
        for w in e.winners:
            self.stacks[w.seat] = self.stacks.get(w.seat, 0) + w.amount
            self.drawn.awards.append(DrawnAward(e.hand_number, e.pot_index, w.seat, w.amount))
            how = f" with {w.hand_description} {cards(w.best_five)}" if w.hand_description else ""
            lines.append(f"  {self.name(w.seat)} wins {w.amount} from {pot} ({e.amount}){how}")
        return lines

    def _on_hand_ended(self, e: table_pb2.HandEndEvent) -> list[str]:
        for s in e.stacks:
            self.stacks[s.seat] = s.stack
        stacks = ", ".join(f"{self.name(s.seat)} {s.stack}" for s in e.stacks)
        line = f"  Hand #{e.hand_number} over; stacks: {stacks}"
        if e.deck_seed:
            ok = seed_matches(
                e.deck_seed, e.deck_commitment or self.commitments.get(e.hand_number, "")
            )
            if ok:
                self.drawn.seeds_verified.append(e.hand_number)
            verdict = "matches" if ok else "DOES NOT MATCH"
            line += f"; deck seed {e.deck_seed[:16]}… {verdict} the commitment"
        return [line]

    def _on_eliminated(self, e: table_pb2.EliminationEvent) -> list[str]:
        return [f"  {self.name(e.seat)} is eliminated in place {e.finishing_place}"]

    def _on_tournament_finished(self, e: table_pb2.TournamentEndEvent) -> list[str]:
        self.finished = True
        lines = [f"=== Tournament over after {e.hands_played} hands ==="]
        for p in e.places:
            self.drawn.places.append(DrawnPlace(p.place, p.seat, p.player_id, p.prize.cents))
            tie = f" (tied ×{p.tied_count})" if p.tied_count > 1 else ""
            name = self.names.get(p.seat) or p.player_id
            lines.append(f"  {p.place}. {name}{tie} — {money(p.prize)}")
        return lines

    def _on_turn_started(self, e: table_pb2.TurnEvent) -> list[str]:
        if not self.show_turns:
            return []
        t = e.timer
        timer = t.action_timer.ToMilliseconds() / 1000
        bank = t.time_bank_remaining.ToMilliseconds() / 1000
        return [f"  … {self.name(e.seat)} to act (timer {timer:.0f}s, bank {bank:.0f}s)"]

    def _on_timer(self, e: table_pb2.TimerEvent) -> list[str]:
        return [f"  {self.name(e.seat)}: {_TIMER.get(e.kind, 'timer')}"]

    def _on_level_advanced(self, e: table_pb2.LevelEvent) -> list[str]:
        lv = e.level
        if lv.level == self.level:
            return []
        first, self.level = not self.level, lv.level
        ante = f" ante {lv.ante}" if lv.ante else ""
        what = "Level" if first else "Blinds up: level"
        return [f"  {what} {lv.level}, blinds {lv.small_blind}/{lv.big_blind}{ante}"]

    def _on_electric_mode(self, e: table_pb2.ElectricModeEvent) -> list[str]:
        if e.clock_expired:
            return ["  ⚡ The clock hit 0:00 — ELECTRIC MODE from the next hand: everyone all-in"]
        return []

    def _on_seat_status(self, e: table_pb2.SeatStatusEvent) -> list[str]:
        if e.sitting_out:
            why = " (timed out)" if e.by_timeout else ""
            return [f"  {self.name(e.seat)} sits out{why}"]
        return [f"  {self.name(e.seat)} is back"]

    def _on_pre_action(self, e: table_pb2.PreActionEvent) -> list[str]:
        what = table_pb2.PreActionType.Name(e.pre_action).removeprefix("PRE_ACTION_TYPE_")
        change = table_pb2.PreActionChange.Name(e.change).removeprefix("PRE_ACTION_CHANGE_")
        return [f"  (your pre-action {what}: {change.lower().replace('_', ' ')})"]


# ---------------------------------------------------------------------------- My Tables


class MyTablesRenderer:
    """Draws the Multi-Table Bar: one line per table whenever that table's line changes."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}
        #: Table id -> last status seen (``running``, ``finished``, …).
        self.status: dict[str, str] = {}

    def feed(self, response: registration_pb2.WatchMyTablesResponse) -> list[str]:
        """The lines of the tables whose line changed."""
        out = []
        for t in response.tables:
            self.status[t.table_id] = _MY_STATUS.get(t.status, "?")
            line = self.line(t)
            if self.last.get(t.table_id) != line:
                self.last[t.table_id] = line
                out.append(line)
        return out

    @staticmethod
    def line(t: registration_pb2.MyTable) -> str:
        status = t.status_text or _MY_STATUS.get(t.status, "?")
        parts = [f"[{t.table_name or t.table_id[:8]}] {status}"]
        if t.my_seat:
            parts.append(f"seat {t.my_seat}")
        if t.status == registration_pb2.TABLE_STATUS_RUNNING:
            parts.append(f"stack {t.my_stack}")
            if t.current_hand_number and not t.status_text:
                parts.append(f"hand {t.current_hand_number}")
            if t.my_turn:
                parts.append("YOUR TURN")
        if t.finishing_place:
            parts.append(f"finished {t.finishing_place}, prize {money(t.prize)}")
        if t.cancel_reason:
            parts.append(f"cancelled: {t.cancel_reason}")
        return " · ".join(parts)


# ---------------------------------------------------------------------------- over gRPC


_RETRY = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


async def _get_table(
    stub: table_pb2_grpc.TableServiceAsyncStub,
    table_id: str,
    metadata: Callable[[], Metadata],
    wait: float = 30.0,
) -> table_pb2.GetTableResponse:
    """GetTable, waiting out a table that My Tables shows but the table service is still
    starting (NOT_FOUND for a moment) and a server that is restarting."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + wait
    while True:
        try:
            response: table_pb2.GetTableResponse = await stub.GetTable(
                table_pb2.GetTableRequest(table_id=table_id), metadata=metadata(), timeout=10
            )
            return response
        except grpc.aio.AioRpcError as err:
            if err.code() not in _RETRY | {grpc.StatusCode.NOT_FOUND} or loop.time() > give_up:
                raise
        await asyncio.sleep(0.2)


async def follow_table(
    channel: grpc.aio.Channel,
    table_id: str,
    metadata: Callable[[], Metadata],
    out: Out,
    *,
    renderer: TableRenderer | None = None,
    from_start: bool = True,
    stop: asyncio.Event | None = None,
) -> TableRenderer:
    """Draw ``table_id`` until its tournament is over (or ``stop``); the renderer.

    With ``from_start`` the header comes from ``GetTable`` and the stream starts after the
    table's first event, so the whole tournament is drawn even when joining late. A broken
    stream is resumed from the last sequence drawn.
    """
    r = renderer or TableRenderer()
    stub = table_pb2_grpc.TableServiceStub(channel)
    if from_start and not r.sequence:
        view = await _get_table(stub, table_id, metadata)
        for line in r.snapshot(view.table, stacks=False):
            out(line)
        r.finished = False
        r.sequence = 1  # the table's first event (TableStarted) is what the header shows
    while not r.finished and not (stop and stop.is_set()):
        request = table_pb2.WatchTableRequest(table_id=table_id, from_sequence=r.sequence)
        try:
            async for response in stub.WatchTable(request, metadata=metadata()):
                for line in r.feed(response):
                    out(line)
                if stop and stop.is_set():
                    break
        except grpc.aio.AioRpcError as err:
            if err.code() not in _RETRY:
                raise
            await asyncio.sleep(0.5)
        else:
            if not r.finished:
                await asyncio.sleep(0.2)  # the server ended the stream (restart): resume
    return r


async def follow_my_tables(
    registration: grpc.aio.Channel,
    table: grpc.aio.Channel,
    metadata: Callable[[], Metadata],
    out: Out,
    *,
    stop: asyncio.Event,
    tables: int | None = None,
    show_turns: bool = False,
) -> dict[str, TableRenderer]:
    """Draw the Multi-Table Bar and every table of the caller that starts, each whole; stops
    with ``stop`` or once ``tables`` tables were drawn to the end."""
    bar = MyTablesRenderer()
    followed: dict[str, asyncio.Task[TableRenderer]] = {}
    renderers: dict[str, TableRenderer] = {}
    reported: set[str] = set()
    ended_at = 0.0
    stub = registration_pb2_grpc.RegistrationServiceStub(registration)

    def start(table_id: str, name: str) -> None:
        renderer = renderers[table_id] = TableRenderer(show_turns=show_turns)
        prefix = f"{name[:24]:<24}│ "
        followed[table_id] = asyncio.create_task(
            follow_table(
                table, table_id, metadata, lambda s: out(prefix + s), renderer=renderer, stop=stop
            )
        )

    def done() -> bool:
        finished = [t for t in followed.values() if t.done()]
        for table_id, task in followed.items():
            if task.done() and table_id not in reported:
                reported.add(table_id)
                if not task.cancelled() and task.exception() is not None:
                    out(f"{table_id[:8]}│ stopped drawing: {task.exception()!r}")
        if tables is None or len(finished) < tables:
            return False
        # Drawn to the end: wait (a little) for the bar to show those tables' final state.
        ended = {_MY_STATUS[registration_pb2.TABLE_STATUS_FINISHED], "cancelled"}
        shown = all(bar.status.get(t) in ended for t in followed if followed[t].done())
        nonlocal ended_at
        ended_at = ended_at or asyncio.get_running_loop().time()
        return shown or asyncio.get_running_loop().time() - ended_at > 10.0

    watching = {registration_pb2.TABLE_STATUS_RUNNING, registration_pb2.TABLE_STATUS_FINISHED}

    async def read_bar() -> None:
        while True:
            stream = stub.WatchMyTables(
                registration_pb2.WatchMyTablesRequest(), metadata=metadata()
            )
            try:
                async for response in stream:
                    for line in bar.feed(response):
                        out(f"MTB │ {line}")
                    for t in response.tables:
                        if t.table_id not in followed and t.status in watching:
                            start(t.table_id, t.table_name or t.table_id[:8])
            except grpc.aio.AioRpcError as err:
                if err.code() not in _RETRY:
                    raise
            await asyncio.sleep(0.2)  # the stream ended (server restart): subscribe again

    reader = asyncio.create_task(read_bar())
    try:
        while not stop.is_set() and not done() and not reader.done():
            await asyncio.sleep(0.1)
        if reader.done():
            reader.result()  # raise what ended it
    finally:
        reader.cancel()
        for task in followed.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(reader, *followed.values(), return_exceptions=True)
    return renderers


if __name__ == "__main__":
    from electric_bots.tui_main import main

    raise SystemExit(main())

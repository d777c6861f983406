"""One bot at one tournament table: its watch, resumed where it ended, and its decisions.

A watch (``WatchTable``) ends for many reasons: the table moved to another instance
(UNAVAILABLE), the server restarted or is draining (the stream just ends), a silence the bot
does not trust, an expired token. The bot reopens it with ``from_sequence`` = the sequence
of the last message it handled: the server then sends every later event and none before, so
no update is missed and none is handled twice. A message at or below that sequence that
still arrives (a read-model view served while the table is not loaded anywhere, a server
behind the bot) is dropped unless it carries more than what was handled (a view with the
hand after one without).

The bot is done with a table (:class:`Outcome`) when:

- a view says the tournament FINISHED, or that the bot's seat was eliminated;
- My Tables (registration) says the table finished or was cancelled. A cancelled table never
  reaches the table service: WatchTable answers NOT_FOUND for ever, and the bot used to wait
  for it for ever (the drain never ended);
- the stream ended without a finished view and GetTable says FINISHED: a watch resumed at
  the end of a finished table ends at once, with nothing to send;
- nothing new arrived for ``BotPlayer.stall_seconds`` while registration does not say the
  table still waits for players: such a table is not being played (one the table service
  could not start shows STARTING for ever, and the bot reopened its watch every 2 s for
  ever). The bot lets it go as ``abandoned`` and counts an error: it is a platform fault.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
from electric.registration.v1 import registration_pb2
from electric.table.v1 import table_pb2
from electric_clients.errors import token_expired
from electric_domain.tournament.bots import Decide, GoSitOut

from electric_bots.views import (
    act_fields,
    context_from_view,
    is_my_turn,
    my_seat,
    offered_pre_actions,
    pre_action_type,
    safe_fields,
)

if TYPE_CHECKING:
    from electric_bots.player import BotPlayer

#: Status codes a bot waits out and retries (the server restarts, a table not started yet).
TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


class Outcome(enum.StrEnum):
    """Why a bot stopped playing a table."""

    FINISHED = "finished"
    ELIMINATED = "eliminated"
    CANCELLED = "cancelled"
    #: Nothing new for ``stall_seconds`` (see the module docstring).
    ABANDONED = "abandoned"
    #: The bot was stopped.
    STOPPED = "stopped"


class _Ended(enum.Enum):
    """How one watch ended without the table being over."""

    EOF = "the server ended the stream"
    SILENT = "no message within the idle time"
    NOT_FOUND = "NOT_FOUND"
    FAILED = "an error"


class TableSession:
    """What one bot remembers about one table while it plays there, and its watch loop."""

    def __init__(self, bot: BotPlayer, table_id: str) -> None:
        self.bot = bot
        self.table_id = table_id
        self.answered: tuple[int, int] | None = None
        self.pre_action_hand = 0
        self.sat_out_requested = False
        self.sit_in_hand = 0
        self.done = False
        self.outcome = Outcome.STOPPED
        #: Message of the last FAILED_PRECONDITION/ABORTED refusal (lower case).
        self.refused = ""
        #: Short description of the last view (diagnostics).
        self.last = ""
        #: True until a view with a hand arrived.
        self.starting = True
        #: Sequence of the last WatchTable message handled (the ``from_sequence`` to resume).
        self.sequence = 0
        #: Whether the last view handled had a hand (a read-model view has none).
        self._had_hand = False
        #: Loop time of the last new message (or of the start): the stall clock.
        self.progress_at = asyncio.get_running_loop().time()
        #: WatchTable calls opened, and the status the last one failed with (diagnostics).
        self.watches = 0
        self.last_code = ""

    # -- the watch -------------------------------------------------------------------------

    async def run(self) -> Outcome:
        """Watch and play until the table is over for this bot (or the bot stops)."""
        bot = self.bot
        not_found = 0
        while not bot._stop.is_set():
            ended = await self._watch()
            if isinstance(ended, Outcome):
                return ended
            if ended is _Ended.NOT_FOUND:
                # Not started on the table service yet, or never will be (cancelled): wait
                # for My Tables to change, then judge.
                not_found += 1
                await bot._wait_change(min(0.25 * not_found, 2.0))
            else:
                not_found = 0
            over = await self._over(ended)
            if over is not None:
                return over
            if ended is not _Ended.NOT_FOUND and await bot._sleep(0.2):
                break
        return Outcome.STOPPED

    async def _watch(self) -> Outcome | _Ended:
        """One WatchTable call, resumed after the last message handled."""
        bot = self.bot
        stats = bot._stats
        self.watches += 1
        self.last_code = ""
        request = table_pb2.WatchTableRequest(table_id=self.table_id, from_sequence=self.sequence)
        stream = bot._table.WatchTable(request, metadata=bot._md())
        try:
            while True:
                # A message at least every few seconds while a game runs (timers); a silence
                # may hide a lost update: reopen (the resumed stream sends whatever came
                # since). Before the first hand a silence is suspicious sooner.
                idle = 2.0 if self.starting else bot.idle_seconds
                update = await asyncio.wait_for(stream.read(), timeout=idle)
                if not isinstance(update, table_pb2.WatchTableResponse):
                    return _Ended.EOF  # grpc.aio.EOF
                if not self.fresh(update):
                    continue
                # Views only: events followed by more events carry no snapshot.
                if update.HasField("table") and await self.on_view(update.table):
                    return self.outcome
        except TimeoutError:
            stats.resubscribes += 1
            stats.note(f"resubscribed {self.table_id} after silence; last view {self.last}")
            return _Ended.SILENT
        except grpc.aio.AioRpcError as err:
            code = err.code()
            self.last_code = code.name
            if code is grpc.StatusCode.NOT_FOUND:
                return _Ended.NOT_FOUND
            if code is grpc.StatusCode.CANCELLED and bot._stop.is_set():
                return Outcome.STOPPED
            if code not in TRANSIENT and not token_expired(err):  # reopen, fresh token
                stats.error(f"WatchTable: {code.name}: {err.details()}")
            return _Ended.FAILED
        finally:
            stream.cancel()

    def fresh(self, update: table_pb2.WatchTableResponse) -> bool:
        """Whether ``update`` is new to this session; remembers its sequence if so."""
        seq = update.sequence
        view = update.table if update.HasField("table") else None
        finished = view is not None and view.status == table_pb2.TABLE_STATUS_FINISHED
        if seq and seq <= self.sequence and not finished:
            if seq < self.sequence or update.event_type or view is None:
                return False  # handled already (or older than what was handled)
            if not view.HasField("hand") or self._had_hand:
                return False  # the same version again, and no richer
        if seq > self.sequence:
            self.sequence = seq
            self.progress_at = asyncio.get_running_loop().time()
        if view is not None:
            self._had_hand = view.HasField("hand")
        return True

    async def _over(self, ended: _Ended) -> Outcome | None:
        """Whether the table is over for this bot after a watch ended (module docstring)."""
        bot = self.bot
        stats = bot._stats
        mine = bot._my_tables.get(self.table_id)
        status = mine.status if mine is not None else registration_pb2.TABLE_STATUS_UNSPECIFIED
        if status == registration_pb2.TABLE_STATUS_FINISHED:
            stats.tables_finished.add(self.table_id)
            return self._end(Outcome.FINISHED)
        if status == registration_pb2.TABLE_STATUS_CANCELLED:
            stats.tables_cancelled.add(self.table_id)
            return self._end(Outcome.CANCELLED)
        if ended is _Ended.EOF and await self._finished_on_the_table_service():
            return self.outcome
        now = asyncio.get_running_loop().time()
        if status == registration_pb2.TABLE_STATUS_REGISTERING:
            self.progress_at = now  # waiting for players is not a stall
        elif now - self.progress_at > bot.stall_seconds:
            stats.tables_abandoned.add(self.table_id)
            stats.error(
                f"gave up table {self.table_id}: nothing new for {now - self.progress_at:.0f}s "
                f"after {self.watches} watches (the last ended with "
                f"{self.last_code or ended.value}; view {self.last or '-'})"
            )
            return self._end(Outcome.ABANDONED)
        return None

    async def _finished_on_the_table_service(self) -> bool:
        """GetTable once: True (and the outcome set) when the tournament finished."""
        bot = self.bot
        try:
            response: table_pb2.GetTableResponse = await bot._table.GetTable(
                table_pb2.GetTableRequest(table_id=self.table_id), metadata=bot._md(), timeout=10
            )
        except grpc.aio.AioRpcError:
            return False  # no answer: the next watch tells
        if response.table.status != table_pb2.TABLE_STATUS_FINISHED:
            return False
        return await self.on_view(response.table)

    def _end(self, outcome: Outcome) -> Outcome:
        self.done = True
        self.outcome = outcome
        return outcome

    # -- the game --------------------------------------------------------------------------

    async def on_view(self, view: table_pb2.TableView) -> bool:
        """React to a new view; True when the bot is finished at this table."""
        bot = self.bot
        stats = bot._stats
        seat = my_seat(view)
        self.last = (
            f"v{view.version} {table_pb2.TableStatus.Name(view.status)} hand "
            f"{view.hand.hand_number}/{view.hand.action_seq} to_act {view.hand.to_act_seat} "
            f"me {view.your_seat} legal {len(view.legal_actions)}"
        )
        if view.status == table_pb2.TABLE_STATUS_FINISHED:
            stats.tables_finished.add(self.table_id)
            self._end(Outcome.FINISHED)
            return True
        if view.HasField("hand") and view.hand.hand_number > 0:
            self.starting = False
        if seat is None or view.status != table_pb2.TABLE_STATUS_RUNNING:
            return False
        stats.tables_played.add(self.table_id)
        if seat.eliminated:
            self._end(Outcome.ELIMINATED)
            return True
        hand_no = view.hand.hand_number if view.HasField("hand") else 0
        if seat.sitting_out and hand_no != self.sit_in_hand and bot.strategy.wants_sit_in(hand_no):
            self.sit_in_hand = hand_no
            await self._command("SitIn", self._sit_in)
            return False
        if is_my_turn(view):
            key = (view.hand.hand_number, view.hand.action_seq)
            if key == self.answered:
                return False
            self.answered = key
            await self._decide(view)
            return False
        offered = offered_pre_actions(view)
        if offered and hand_no != self.pre_action_hand:
            self.pre_action_hand = hand_no
            choice = bot.strategy.pre_action(offered, bot.rng)
            if choice is not None:
                await self._command("SetPreAction", lambda: self._pre_action(view, choice))
        return False

    async def _decide(self, view: table_pb2.TableView) -> None:
        bot = self.bot
        decision = bot.strategy.decide(context_from_view(view), bot.rng)
        if isinstance(decision, GoSitOut):
            if (seat := my_seat(view)) and not seat.sitting_out:
                await self._command("SitOut", self._sit_out)
            return
        if not isinstance(decision, Decide):
            bot._stats.timeouts_let_run += 1  # TimeOut: let the action timer run
            return
        pause = min(
            decision.think_ms / 1000 * bot.settings.think_scale, bot.settings.max_think_seconds
        )
        if pause > 0 and await bot._sleep(pause):
            return
        for fields in (act_fields(decision, view), safe_fields(view)):
            request = table_pb2.ActRequest(
                request_id=str(uuid.uuid4()),
                table_id=self.table_id,
                hand_number=view.hand.hand_number,
                action_seq=view.hand.action_seq,
                action=fields.action,
                amount=fields.amount,
            )
            self.refused = ""
            if await self._command("Act", lambda r=request: self._act(r)):  # type: ignore[misc]
                bot._stats.actions += 1
                return
            if "stale" in self.refused or not self.refused:
                return  # the table moved on: the next view decides
            # Refused as illegal (a view/engine disagreement): answer passively instead.
            bot._stats.fallbacks += 1

    async def _command(self, name: str, fn: Callable[[], Awaitable[Any]]) -> bool:
        """Send a command; stale/refused ones are counted, not fatal. True when accepted."""
        stats = self.bot._stats
        try:
            result = await self.bot._retry(fn, name)
            return result is not None
        except grpc.aio.AioRpcError as err:
            code = err.code()
            if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED):
                stats.stale_commands += 1  # the table moved on (timer, another action)
                self.refused = (err.details() or "?").lower()
                stats.last_stale.append(f"{name}: {code.name}: {err.details()}")
                del stats.last_stale[:-20]
            elif code is grpc.StatusCode.UNIMPLEMENTED:
                stats.unimplemented += 1
            else:
                stats.error(f"{name}: {code.name}: {err.details()}")
            return False

    async def _act(self, request: table_pb2.ActRequest) -> table_pb2.ActResponse:
        response: table_pb2.ActResponse = await self.bot._table.Act(
            request, metadata=self.bot._md(), timeout=10
        )
        if (acked := self.bot._stats.acked_acts) is not None:
            acked.add(request.request_id)
        return response

    async def _pre_action(self, view: table_pb2.TableView, choice: Any) -> object:
        self.bot._stats.pre_actions += 1
        response: table_pb2.SetPreActionResponse = await self.bot._table.SetPreAction(
            table_pb2.SetPreActionRequest(
                request_id=str(uuid.uuid4()),
                table_id=self.table_id,
                hand_number=view.hand.hand_number,
                action_seq=view.hand.action_seq,
                pre_action=pre_action_type(choice),
            ),
            metadata=self.bot._md(),
            timeout=10,
        )
        return response

    async def _sit_out(self) -> object:
        self.bot._stats.sit_outs += 1
        response: table_pb2.SitOutResponse = await self.bot._table.SitOut(
            table_pb2.SitOutRequest(request_id=str(uuid.uuid4()), table_id=self.table_id),
            metadata=self.bot._md(),
            timeout=10,
        )
        return response

    async def _sit_in(self) -> object:
        self.bot._stats.sit_ins += 1
        response: table_pb2.SitInResponse = await self.bot._table.SitIn(
            table_pb2.SitInRequest(request_id=str(uuid.uuid4()), table_id=self.table_id),
            metadata=self.bot._md(),
            timeout=10,
        )
        return response

"""Group commit of a live UTH table's PlaceBets and Decide (issue 13).

A busy table's betting window is a burst: every seated player places an ante, trips, maybe
a double, inside a few seconds; each decision window is another (a Play decision reserves
its bet too). One placement at a time under the table's lock costs a
request-id read, an intent transaction, a wallet call and an append each (about 85 ms on a
loaded 2-core machine: a 2 s window took ~27 placements). Here the placements queued on a
table (placements and decisions alike) are carried by ONE pass under the lock:

1. the request ids already answered are answered again (one read for the batch);
2. the round catches up to ``now`` once; each placement runs on the live round in queue
   order; a refused one is rolled back in memory (``UthRound.replay`` of the events before
   it: the domain is pure) and its refusal stored;
3. the intents of every new bet in one transaction, then every wallet reservation at once;
4. a placement with a refused (or failed) reservation is answered with that error and its
   other reservations are voided; the others are run again on the round as it was (the
   same commands give the same events and the same bet ids, checked);
5. ONE transaction appends each placement's events (its own causation id), marks the bets
   placed and stores every request row.

A batch holds at most one placement per player (a bet id counts the seat's actions, so a
player's second placement waits for the next batch). Players who arrive with their
placement are seated first, and their seats stand even if the bet is refused (seats are
numbered by arrival: a refused bet must not renumber the others). The crash rules are
unchanged: intent first, and an intent never appended is voided when its round ends.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import electric_domain.casino.uth.events as uth
from electric_domain.casino.common.errors import Rejected, RejectReason
from electric_domain.casino.uth.round import UthRound
from electric_eventlog.fencing import FencedError

from electric_table.casino import money, repo
from electric_table.casino.thb.handlers import answered, fence_table
from electric_table.casino.uth import records as uth_records
from electric_table.refusals import (
    ConcurrentChange,
    NotNow,
    NotPermitted,
    Refusal,
    TableMoved,
    TryAgain,
)

if TYPE_CHECKING:
    from electric_table.casino.uth.tables import LiveTable, UthTables

#: Most placements one pass carries (one intent transaction, one append transaction).
MAX_BATCH = 64

Request = tuple[str, str, str]


PLACE_BETS, DECIDE = "PlaceBets", "Decide"


@dataclass(eq=False)
class Queued:
    """One queued PlaceBets (``action``: ante, trips, undo, double, repeat, clear) or Decide
    (``action``: the decision, of round ``round_id``), answered by the pass that carries it."""

    player: str
    action: str
    amount: int
    request_id: str
    rpc: str = PLACE_BETS
    round_id: str = ""
    done: bool = False
    error: BaseException | None = None

    def answer(self, error: BaseException | None = None) -> None:
        self.done, self.error = True, error

    @property
    def request(self) -> Request:
        return (self.player, self.request_id, self.rpc)


def command_step(item: Queued, now: int) -> Callable[[UthRound], None]:
    """The domain commands of one queued command on the live round."""
    if item.rpc == DECIDE:

        def decide(r: UthRound) -> None:
            seat = next((i for i, s in enumerate(r.state.seats) if s.player == item.player), None)
            if seat is None:
                raise NotPermitted(f"{item.player} has no seat in round {item.round_id}")
            r.handle(uth.Decide(seat, item.action, now))

        return decide
    return bet_step(item, now)


def bet_step(item: Queued, now: int) -> Callable[[UthRound], None]:
    """The domain commands of one betting action on the live round."""

    def step(r: UthRound) -> None:
        seat = next((i for i, s in enumerate(r.state.seats) if s.player == item.player), None)
        if seat is None:
            r.handle(uth.TakeSeat(item.player, now))
            seat = len(r.state.seats) - 1
        if item.action in ("ante", "trips"):
            r.handle(uth.PlaceBet(seat, item.action, item.amount, now))
        elif item.action == "undo":
            r.handle(uth.Undo(seat, now))
        elif item.action == "double":
            r.handle(uth.Double(seat, now))
        elif item.action == "repeat":
            r.handle(uth.Repeat(seat, now))
        else:  # clear
            if not r.state.seats[seat].actions:
                raise Rejected(RejectReason.NOTHING_TO_UNDO, "no bet to clear")
            while r.state.seats[seat].actions:
                r.handle(uth.Undo(seat, now))

    return step


def take_batch(pending: list[Queued]) -> list[Queued]:
    """The next pass's placements, removed from ``pending`` (module doc for the rules)."""
    batch: list[Queued] = []
    players: set[str] = set()
    for item in pending:
        if len(batch) >= MAX_BATCH:
            break
        if item.player not in players:
            batch.append(item)
            players.add(item.player)
    for item in batch:
        pending.remove(item)
    return batch


async def reserve_bets(
    tables: UthTables, t: LiveTable, bets: Sequence[repo.BetRow]
) -> list[BaseException | None]:
    """Intents of ``bets`` in one transaction, then their wallet reservations at once: the
    outcome of each (None: reserved). The intents check the table's fence (``partitions``
    ownership): a stale owner reserves nothing in the wallet."""
    if not bets:
        return []

    def intents() -> list[bool]:
        try:
            with tables.engine.begin() as conn:
                if t.fence is not None:
                    t.fence.check(conn)
                return [repo.record_intent(conn, b) for b in bets]
        except FencedError as exc:
            raise TableMoved(f"{fence_table(exc)} moved to another instance; retry") from exc

    still_intents: list[bool] = await tables.refuse(t, intents)
    wallet = tables.base.wallet

    async def reserve(b: repo.BetRow, is_intent: bool) -> None:
        if not is_intent:
            # A retry whose earlier attempt left an intent that was auto-voided since: the
            # wallet may not hold the transfer any more (a void of an unknown transfer is
            # "never reserved"), so reserving again would hold money no row resolves. The
            # request is spent, as in THB's ``_reserve`` (docs/chaos.md, item 5).
            raise NotNow(
                f"bet {b.bet_id} was voided after an earlier attempt of this request "
                "failed; send a new request"
            )
        await money.reserve(wallet, b.bet_id, b.player_id, b.amount_cents)

    return list(
        await asyncio.gather(
            *(reserve(b, ok) for b, ok in zip(bets, still_intents, strict=True)),
            return_exceptions=True,
        )
    )


async def undo_reservations(
    tables: UthTables,
    round_id: str,
    bets: Sequence[repo.BetRow],
    outcomes: Sequence[BaseException | None],
) -> None:
    """A placement that does not stand: a refused bet never existed (its intent goes), a
    reserved one is voided now; a bet whose call failed keeps its intent (voided with the
    round when it ends, as after a crash)."""
    refused = [b.bet_id for b, o in zip(bets, outcomes, strict=True) if _refused(o)]
    reserved = [b.bet_id for b, o in zip(bets, outcomes, strict=True) if o is None]
    if not refused and not reserved:
        return

    def undo() -> None:
        with tables.engine.begin() as conn:
            for bet_id in refused:
                repo.forget_intent(conn, bet_id)
            repo.owe(conn, {bet_id: repo.VOID for bet_id in reserved})

    await asyncio.to_thread(undo)
    if reserved:
        await tables.base.run_owed(round_id)


def _refused(outcome: BaseException | None) -> bool:
    """The reservation was refused (nothing is held: its intent goes): by the wallet, or
    because the bet was voided since an earlier attempt."""
    return isinstance(outcome, NotNow)


class BetBatches:
    """The PlaceBets path of :class:`~electric_table.casino.uth.tables.UthTables`."""

    def __init__(self, tables: UthTables) -> None:
        self.tables = tables

    async def place(self, t: LiveTable, item: Queued) -> None:
        """Queue ``item``; whoever holds the lock next carries the queue (raises its error)."""
        t.pending.append(item)
        try:
            async with t.lock:
                while not item.done:
                    batch = take_batch(t.pending)
                    assert batch, "a queued placement is in no pass"
                    await self._carry(t, batch)
        except asyncio.CancelledError:
            if item in t.pending:  # never carried: it must not run later, in another round
                t.pending.remove(item)
            raise
        if item.error is not None:
            raise item.error

    async def _carry(self, t: LiveTable, batch: list[Queued]) -> None:
        try:
            await self._pass(t, batch)
        except asyncio.CancelledError:
            retry = TryAgain("the placement was interrupted; retry with the same request_id")
            for item in batch:
                if not item.done:
                    item.answer(retry)
            raise
        except Exception as exc:
            for item in batch:
                if not item.done:
                    item.answer(exc)

    async def _pass(self, t: LiveTable, batch: list[Queued]) -> None:
        tables = self.tables
        t.check_owned()  # dropped here while these waited for the lock: UNAVAILABLE, retry
        tables.base.metrics.placements_per_pass.observe(len(batch))
        fresh = await asyncio.to_thread(self._unanswered, batch)
        if not fresh:
            return
        now = tables.now_ms()
        await tables._tick(t, now)
        if t.broken:
            raise TryAgain(f"UTH table {t.table_id} is being repaired ({t.broken}); retry")
        if t.round is None or t.book is None:
            closed = NotNow(f"no round is open at {t.table_id} yet; retry shortly")
            over = [i for i in fresh if i.rpc == DECIDE]
            for i in fresh:
                i.answer(NotNow(f"round {i.round_id} is over") if i in over else closed)
            if over:
                await tables.refuse(t, functools.partial(self._store_refusals, t, over, ""))
            return
        round_id = t.book.round_id
        try:
            refused: list[Queued] = []
            seating = self._seat_newcomers(t, fresh, now, refused)
            start, book_before = len(t.round.history), copy.deepcopy(t.book)
            segments = self._run_steps(t, [i for i in fresh if not i.done], now, refused)
            if refused:
                await tables.refuse(
                    t, functools.partial(self._store_refusals, t, refused, round_id)
                )
            parts = [
                (item, t.book.translate(events, request_id=item.request_id))
                for item, events in segments
            ]
            parts = await self._reserve(t, parts, start, book_before, now)
            commit: list[tuple[uth_records.Batch, Request | None]] = []
            if seating is not None:
                commit.append((seating, None))
            commit += [(b, item.request) for item, b in parts]
            if commit:
                await tables._commit_parts(t, commit)
        except BaseException as exc:
            await tables.restore_after(t, exc)
            raise
        for item, _ in parts:
            item.answer()

    def _seat_newcomers(
        self, t: LiveTable, items: list[Queued], now: int, refused: list[Queued]
    ) -> uth_records.Batch | None:
        """Seat the players who arrive with their placement, in queue order, before any bet:
        a seat stands even when its first bet is refused (a seat without bets is what a
        player seated at the round's open has), so a refusal never renumbers a seat."""
        assert t.round is not None and t.book is not None
        start = len(t.round.history)
        for item in items:
            if item.rpc == PLACE_BETS and t.seat_of(item.player) is None:
                try:
                    t.round.handle(uth.TakeSeat(item.player, now))
                except Rejected as rej:
                    item.answer(rej)
                    refused.append(item)
        events = t.round.history[start:]
        return t.book.translate(events) if events else None

    def _run_steps(
        self, t: LiveTable, items: list[Queued], now: int, refused: list[Queued]
    ) -> list[tuple[Queued, list[object]]]:
        """Each placement on the live round; a refused one is rolled back and answered."""
        segments: list[tuple[Queued, list[object]]] = []
        for item in items:
            assert t.round is not None and t.book is not None
            if item.rpc == DECIDE and (t.book.round_id != item.round_id or not t.live):
                item.answer(NotNow(f"round {item.round_id} is over"))
                refused.append(item)
                continue
            start = len(t.round.history)
            try:
                command_step(item, now)(t.round)
            except (Rejected, NotPermitted) as exc:
                if len(t.round.history) > start:
                    t.round = UthRound.replay(self.tables.config, t.round.history[:start])
                item.answer(exc)
                if isinstance(exc, Rejected):  # no seat (NotPermitted): answered, not stored
                    refused.append(item)
                continue
            segments.append((item, list(t.round.history[start:])))
        return segments

    async def _reserve(
        self,
        t: LiveTable,
        parts: list[tuple[Queued, uth_records.Batch]],
        start: int,
        book_before: uth_records.UthBook,
        now: int,
    ) -> list[tuple[Queued, uth_records.Batch]]:
        """Reserve every new bet; what stands (module doc, step 4)."""
        assert t.round is not None and t.book is not None
        bets = [b for _, part in parts for b in part.new_bets]
        got = await reserve_bets(self.tables, t, bets)
        outcomes = dict(zip((b.bet_id for b in bets), got, strict=True))
        standing, failed = [], []
        for item, part in parts:
            errors = [o for b in part.new_bets if (o := outcomes[b.bet_id]) is not None]
            if not errors:
                standing.append((item, part))
                continue
            failed.append(item)
            mine = [outcomes[b.bet_id] for b in part.new_bets]
            await undo_reservations(self.tables, t.book.round_id, part.new_bets, mine)
            item.answer(next((e for e in errors if _refused(e)), errors[0]))
        if not failed:
            return parts
        # Run the standing placements again on the round as it was before the pass.
        t.round = UthRound.replay(self.tables.config, t.round.history[:start])
        t.book = book_before
        again: list[tuple[Queued, uth_records.Batch]] = []
        for item, part in standing:
            first = len(t.round.history)
            try:
                command_step(item, now)(t.round)
            except (Rejected, NotPermitted) as rej:
                raise ConcurrentChange(
                    f"placement {item.request_id} changed on a re-run: {rej}"
                ) from rej
            redo = t.book.translate(t.round.history[first:], request_id=item.request_id)
            if [b.bet_id for b in redo.new_bets] != [b.bet_id for b in part.new_bets]:
                raise ConcurrentChange(f"placement {item.request_id} got other bet ids on a re-run")
            again.append((item, redo))
        return again

    def _unanswered(self, batch: list[Queued]) -> list[Queued]:
        """The placements never answered before; the others get their stored answer (ONE
        query for the whole batch)."""
        with self.tables.engine.connect() as conn:
            stored = repo.get_requests(conn, [(item.player, item.request_id) for item in batch])
        fresh = []
        for item in batch:
            try:
                prior = answered(
                    stored.get((item.player, item.request_id)), item.request_id, item.rpc
                )
            except Refusal as err:  # a reused request id, or the stored refusal again
                item.answer(err)
                continue
            if prior is not None:
                item.answer()
            else:
                fresh.append(item)
        return fresh

    def _store_refusals(self, t: LiveTable, refused: list[Queued], round_id: str) -> None:
        for item in refused:
            err = item.error
            assert err is not None
            rid = item.round_id or round_id
            self.tables.base._refuse(item.player, item.request_id, item.rpc, rid, err, t.fence)


__all__ = [
    "DECIDE",
    "MAX_BATCH",
    "PLACE_BETS",
    "BetBatches",
    "Queued",
    "command_step",
    "take_batch",
]

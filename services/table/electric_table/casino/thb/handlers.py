"""Casino commands: load the round from its stream, let the domain decide, store the result.

Each command runs under a per-round (Deal: per-player) ``asyncio.Lock``. The domain decides
on a copy of the replayed round; every new bet is then recorded as an *intent* and reserved
in the wallet (transfer id = bet id) BEFORE one transaction appends the events to
``casino-<round_id>`` (expected version) together with the round row (written from the
events by the journal's projector: ``journal.append_round``; the round's deck seed, withheld
from the events, passed to it), the bets' placement, the settlement calls owed (post / void)
and the request's de-duplication row. After the
commit the owed wallet calls run (:mod:`money`). A repeated request id answers as the first
time. Time (``now_ms``) and randomness (``seed``) are inputs.

**Auto-void rule (crash).** At start (:meth:`CasinoHandlers.recover`) a bet left as an
*intent* means the service stopped between the wallet reservation and the append of its
BetPlaced. If its round is open, the round cannot continue consistently (the wallet holds a
bet the round never placed) and is voided with reason :data:`AUTO_VOID_REASON`; every
reservation of the round, the orphan included, is voided once. An intent without a round
(a crashed Deal) only has its reservation voided. Any other open THB round resumes (THB has
no timers); an open round whose stream cannot be replayed is reported and left for an
operator's VoidRound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import electric_domain.casino.thb.events as thb
from electric.table.v1 import casino_events_pb2 as cev
from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.common.errors import Rejected
from electric_domain.casino.common.game_number import next_game_number
from electric_domain.casino.common.money import BetResult, Outcome
from electric_domain.casino.thb.round import ThbRound
from electric_eventlog import ConcurrencyError, EventStore
from electric_eventlog.fencing import Fence, FencedError
from electric_platform.owed_work import OwedWork
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine

from electric_table.casino import money, repo
from electric_table.casino.metrics import CasinoMetrics
from electric_table.casino.thb import records
from electric_table.errors import stored_answer
from electric_table.journal import append_round, casino_stream
from electric_table.refusals import (
    BadRequest,
    ConcurrentChange,
    NotKnown,
    NotNow,
    NotPermitted,
    NotStored,
    Refusal,
    RepeatedRefusal,
    RequestIdReused,
    TableMoved,
    WalletRefused,
)

log = logging.getLogger(__name__)

AUTO_VOID_REASON = "auto-void: the service stopped between a bet's reservation and placement"
THB_TABLE = re.compile(r"^thb-[0-9]+$")
_ROUND_NS = uuid.UUID("6f1b7d8e-2c55-4b8e-9a43-0c2b5d1e7a10")


def round_id_for(player_id: str, request_id: str) -> str:
    """A Deal's round id: stable under retries of the same request."""
    return "thb-r-" + uuid.uuid5(_ROUND_NS, f"{player_id}\n{request_id}").hex


@dataclass
class Loaded:
    row: repo.RoundRow
    round: ThbRound
    version: int

    @property
    def key(self) -> records.RoundKey:
        r = self.row
        return records.RoundKey(r.round_id, r.table_id, r.game, r.player_id)


class CasinoHandlers:
    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        wallet: Any,
        config: CasinoConfig,
        metrics: CasinoMetrics,
        *,
        now_ms: Callable[[], int] | None = None,
        seed: Callable[[], bytes] = lambda: os.urandom(32),
    ) -> None:
        self.engine, self.store, self.wallet = engine, store, wallet
        self.config, self.metrics = config, metrics
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.seed = seed
        self.work = OwedWork("table.casino_wallet", money.CasinoWalletWork(engine, wallet))
        self._locks: dict[str, asyncio.Lock] = {}
        self._intent_seen: dict[str, float] = {}

    def _lock(self, key: str) -> asyncio.Lock:
        if len(self._locks) > 10_000:
            self._locks = {k: v for k, v in self._locks.items() if v.locked()}
        return self._locks.setdefault(key, asyncio.Lock())

    # ------------------------------------------------------------------------- reads

    def load(self, round_id: str) -> Loaded | None:
        """The round replayed from its stream (None if unknown)."""
        with self.engine.connect() as conn:
            row = repo.get_round(conn, round_id)
            if row is None:
                return None
            envelopes = self.store.read_stream(conn, casino_stream(round_id))
        events = []
        for env in envelopes:
            e = records.decode(self.store.decode(env), row.seed_hex)
            if e is not None:
                events.append(e)
        return Loaded(row, ThbRound.replay(self.config, events), len(envelopes))

    def unfinished(self, player_id: str) -> list[Loaded]:
        with self.engine.connect() as conn:
            rows = repo.unfinished(conn, player_id)
        return [x for x in (self.load(r.round_id) for r in rows) if x is not None]

    def count_unfinished(self) -> int:
        with self.engine.connect() as conn:
            return repo.count_unfinished(conn)

    def _prior(self, who: str, request_id: str, rpc: str) -> repo.RequestRow | None:
        with self.engine.connect() as conn:
            prior = repo.get_request(conn, who, request_id)
        return answered(prior, request_id, rpc)

    def _refuse(
        self,
        who: str,
        request_id: str,
        rpc: str,
        round_id: str,
        err: BaseException,
        fence: Fence | None = None,
    ) -> None:
        """Store a refusal (a retry gets it again); under ``fence``, only while still the
        owner of the UTH table (a stale owner's refusal must not answer the new owner's
        retry)."""
        try:
            with self.engine.begin() as conn:
                if fence is not None:
                    fence.check(conn)
                repo.insert_request(
                    conn, who, request_id, repo.RequestRow(rpc, round_id, *stored_answer(err))
                )
        except FencedError as exc:
            raise TableMoved(f"{fence_table(exc)} moved to another instance; retry") from exc

    # ---------------------------------------------------------------------- commands

    async def deal(self, player_id: str, table_id: str, ante: int, request_id: str) -> str:
        """THB New Game / Repeat Bets: start a round with ``ante``; returns its id."""
        if not THB_TABLE.match(table_id):
            raise BadRequest(f"table_id {table_id!r} is not a THB table (thb-<n>)")
        round_id = round_id_for(player_id, request_id)
        async with self._lock(f"player:{player_id}"):
            prior = await asyncio.to_thread(self._prior, player_id, request_id, "Deal")
            if prior is not None:
                return prior.round_id
            seated, busy, previous = await asyncio.to_thread(self._table_state, table_id, player_id)
            if not seated:
                raise NotPermitted(f"{player_id} has no seat at {table_id}: join the table first")
            if busy is not None:
                raise NotNow(f"round {busy.round_id} on {table_id} is still open; finish it first")
            now = self.now_ms()
            try:
                number = next_game_number(now, table_id.replace("-", "").upper(), previous)
                rnd = ThbRound.start(
                    self.config,
                    round_id=round_id,
                    game_number=number,
                    ante_cents=ante,
                    deck_seed=self.seed(),
                    at=now,
                )
            except Rejected as rej:
                await asyncio.to_thread(self._refuse, player_id, request_id, "Deal", "", rej)
                raise
            key = records.RoundKey(round_id, table_id, "thb", player_id)
            new_bets = [self._bet(key, "ante", ante)]
            await self._reserve(new_bets)
            await self._commit(
                key,
                0,
                rnd.history,
                new_bets,
                seed_hex=rnd.state.seed_hex,
                request=(player_id, request_id, "Deal"),
            )
            self.metrics.started.labels("thb").inc()
        return round_id

    def _table_state(
        self, table_id: str, player_id: str
    ) -> tuple[bool, repo.RoundRow | None, str | None]:
        with self.engine.connect() as conn:
            return (
                repo.seated(conn, table_id, player_id),
                repo.open_round_on(conn, table_id, player_id),
                repo.last_game_number(conn, table_id),
            )

    async def decide(
        self, player_id: str, round_id: str, cmd: thb.Command, request_id: str
    ) -> None:
        async with self._lock(f"round:{round_id}"):
            if await asyncio.to_thread(self._prior, player_id, request_id, "Decide"):
                return
            loaded = await self._loaded(round_id)
            if loaded.row.player_id != player_id:
                raise NotPermitted(f"round {round_id} is not {player_id}'s")
            probe = ThbRound.replay(self.config, loaded.round.history)
            try:
                events = probe.handle(cmd)
            except Rejected as rej:
                await asyncio.to_thread(
                    self._refuse, player_id, request_id, "Decide", round_id, rej
                )
                raise
            key = loaded.key
            new_bets = [
                self._bet(
                    key, "flop" if isinstance(e, thb.FlopCalled) else e.street, e.amount_cents
                )
                for e in events
                if isinstance(e, thb.FlopCalled | thb.StreetBet)
            ]
            await self._reserve(new_bets)
            await self._commit(
                key, loaded.version, events, new_bets, request=(player_id, request_id, "Decide")
            )

    async def void(self, operator: str, round_id: str, reason: str, request_id: str) -> None:
        """Operator VoidRound: idempotent (a voided round answers OK)."""
        async with self._lock(f"round:{round_id}"):
            if await asyncio.to_thread(self._prior, operator, request_id, "VoidRound"):
                return
            loaded = await self._loaded(round_id)
            if loaded.row.status == repo.VOIDED:
                return
            await self._void(loaded, reason, operator, (operator, request_id, "VoidRound"))

    async def _void(
        self, loaded: Loaded, reason: str, by: str, request: tuple[str, str, str] | None
    ) -> None:
        probe = ThbRound.replay(self.config, loaded.round.history)
        events = probe.handle(thb.Void(reason, self.now_ms()))
        await self._commit(loaded.key, loaded.version, events, [], request=request, voided_by=by)

    async def ack(self, player_id: str, round_id: str) -> None:
        async with self._lock(f"round:{round_id}"):
            loaded = await self._loaded(round_id)
            row = loaded.row
            if row.player_id != player_id:
                raise NotPermitted(f"round {round_id} is not {player_id}'s")
            if row.status == repo.OPEN:
                raise NotNow(f"round {round_id} has no result yet")
            if row.acknowledged:
                return
            msg = cev.CasinoResultAcknowledged(round_id=round_id, player_id=player_id)

            def write(conn: Connection) -> None:
                append_round(self.store, conn, round_id, loaded.version, [msg])

            await self._tx(write, round_id)

    # --------------------------------------------------------------------- internals

    async def _loaded(self, round_id: str) -> Loaded:
        if not round_id:
            raise BadRequest("round_id is required")
        loaded = await asyncio.to_thread(self.load, round_id)
        if loaded is None:
            raise NotKnown(f"casino round {round_id!r} not found")
        return loaded

    @staticmethod
    def _bet(key: records.RoundKey, spot: str, amount: int) -> repo.BetRow:
        return repo.BetRow(
            records.bet_id(key.round_id, spot), key.round_id, key.player_id, spot, amount, "", False
        )

    async def _reserve(self, bets: list[repo.BetRow]) -> None:
        for b in bets:

            def intent(b: repo.BetRow = b) -> bool:
                with self.engine.begin() as conn:
                    return repo.record_intent(conn, b)

            if not await asyncio.to_thread(intent):
                # A retry of a command whose earlier attempt failed after its intent and was
                # auto-voided since: the wallet may not have the transfer any more (a void
                # of an unknown transfer is "never reserved"), so reserving it again would
                # hold money that no row resolves. The request is spent; a new one deals.
                raise NotNow(
                    f"bet {b.bet_id} was voided after an earlier attempt of this request "
                    "failed; send a new request"
                )
            try:
                await money.reserve(self.wallet, b.bet_id, b.player_id, b.amount_cents)
            except WalletRefused:
                # refused: nothing is held for this bet, so no intent remains (a refused bet
                # must not trigger the auto-void rule). Unavailable keeps it (unknown outcome).
                await asyncio.to_thread(self._forget_intent, b.bet_id)
                raise

    def _forget_intent(self, bet_id: str) -> None:
        with self.engine.begin() as conn:
            repo.forget_intent(conn, bet_id)

    async def _commit(
        self,
        key: records.RoundKey,
        version: int,
        events: list[Any],
        new_bets: list[repo.BetRow],
        *,
        seed_hex: str | None = None,
        request: tuple[str, str, str] | None = None,
        voided_by: str = "",
    ) -> None:
        msgs: list[Message] = records.to_protos(key, events, voided_by=voided_by)
        status: str | None = None
        ops: dict[str, str] = {}
        returned = [0]  # cents back to players: stakes + wins, or voided stakes (metrics)
        for e in events:
            if isinstance(e, thb.Settled):
                status, ops = repo.SETTLED, _settlement_ops(key.round_id, e.results)
                returned[0] = sum(r.returned_cents for r in e.results)
            elif isinstance(e, thb.RoundVoided):
                status = repo.VOIDED

        def write(conn: Connection) -> None:
            append_round(
                self.store,
                conn,
                key.round_id,
                version,
                msgs,
                causation_id=request[1] if request else "",
                seed_hex=seed_hex,
            )
            repo.mark_placed(conn, [b.bet_id for b in new_bets])
            owed = dict(ops)
            if status == repo.VOIDED:
                voided_bets = repo.bets(conn, key.round_id)
                owed = {b.bet_id: repo.VOID for b in voided_bets}
                returned[0] = sum(b.amount_cents for b in voided_bets)
            elif status == repo.SETTLED:
                for b in repo.bets(conn, key.round_id):
                    owed.setdefault(b.bet_id, repo.VOID)  # a bet without a result is refunded
            repo.owe(conn, owed)
            if request is not None:
                who, rid, rpc = request
                repo.insert_request(conn, who, rid, repo.RequestRow(rpc, key.round_id, "OK", ""))

        await self._tx(write, key.round_id)
        for b in new_bets:
            self.metrics.handle.labels(key.game).inc(b.amount_cents)
        if status == repo.SETTLED:
            self.metrics.settled.labels(key.game).inc()
        elif status == repo.VOIDED:
            self.metrics.voided.labels(key.game).inc()
        self.metrics.returned.labels(key.game).inc(returned[0])
        if status is not None:
            await self.run_owed(key.round_id)

    async def _tx(
        self, write: Callable[[Connection], None], round_id: str, fence: Fence | None = None
    ) -> None:
        """``write`` in one transaction; with ``fence`` (a UTH table under partition
        ownership) the epoch is checked first, in the same transaction."""

        def tx() -> None:
            with self.engine.begin() as conn:
                if fence is not None:
                    fence.check(conn)
                write(conn)

        try:
            await asyncio.to_thread(tx)
        except FencedError as exc:
            log.warning("uth.fenced", extra={"round_id": round_id, "error": str(exc)})
            raise TableMoved(f"{fence_table(exc)} moved to another instance; retry") from exc
        except ConcurrencyError as exc:
            raise ConcurrentChange(f"round {round_id} changed concurrently; retry") from exc
        except Exception as exc:
            log.error("casino.write_failed", extra={"round_id": round_id, "error": str(exc)})
            raise NotStored(f"round {round_id}: could not store the command; retry") from exc

    async def run_owed(self, round_id: str) -> None:
        """Carry out the round's owed wallet calls now (failures: the background loop)."""
        try:
            await self.work.run_group(round_id)
        except Exception as exc:
            log.warning("casino.owed_calls_failed", extra={"round_id": round_id, "error": str(exc)})
            self.work.wake.set()

    # ----------------------------------------------------------------------- restart

    async def recover(self, *, resolve_intents: bool = True) -> dict[str, int]:
        """Replay every open THB round; apply the auto-void rule to left intents (module
        doc). Live UTH rounds are resumed by ``uth.tables.UthTables.recover``.

        Not ``resolve_intents`` (several instances, ``partitions`` ownership): an intent
        seen now may be a live peer's command between its reservation and its append, not
        a crash; the periodic sweep applies the rule once an intent is 60 s old."""
        with self.engine.connect() as conn:
            intents = repo.intents(conn) if resolve_intents else []
            open_rounds = [r for r in repo.open_rounds(conn) if r.game == "thb"]
        voided = await self._resolve_intents(intents)
        broken = 0
        for r in open_rounds:
            if r.round_id in voided:
                continue
            try:
                await asyncio.to_thread(self.load, r.round_id)
            except Exception as exc:
                broken += 1
                log.error("casino.replay_failed", extra={"round_id": r.round_id, "error": str(exc)})
        await self.work.run_pass()
        return {
            "open": len(open_rounds) - len(voided),
            "auto_voided": len(voided),
            "broken": broken,
        }

    async def _resolve_intents(self, intents: list[repo.BetRow]) -> set[str]:
        """The auto-void rule for intents left behind; returns the THB rounds it voided. An
        intent of an open live UTH round is left: the round's end voids every reservation
        that has no result (the round never placed it, so it simply continues)."""
        voided: set[str] = set()
        orphans: dict[str, str] = {}
        for b in intents:
            with self.engine.connect() as conn:
                row = repo.get_round(conn, b.round_id)
            if row is not None and row.status == repo.OPEN:
                if row.game != "thb":
                    continue
                if b.round_id in voided:
                    continue
                loaded = await asyncio.to_thread(self.load, b.round_id)
                if loaded is not None:
                    await self._auto_void(loaded)
                    voided.add(b.round_id)
                    continue
            orphans[b.bet_id] = repo.VOID
        if orphans:
            with self.engine.begin() as conn:
                repo.owe(conn, orphans)
            self.work.wake.set()
        return voided

    async def _auto_void(self, loaded: Loaded) -> None:
        """Void ``loaded`` by the auto-void rule. Another instance applying the same rule
        at the same moment (both recovering or sweeping) appends first: our append at the
        same version fails (ABORTED) — or our read already saw its void (the domain refuses
        a second one) — and the round, read again, is resolved: one ``CasinoRoundVoided``,
        every reservation voided once."""
        try:
            await self._void(loaded, AUTO_VOID_REASON, "auto", None)
        except (ConcurrentChange, Rejected):
            again = await asyncio.to_thread(self.load, loaded.row.round_id)
            if again is None or again.row.status == repo.OPEN:
                raise
            log.info("casino.auto_void_raced", extra={"round_id": loaded.row.round_id})

    async def sweep_intents(self, min_age_s: float = 60.0) -> int:
        """The periodic sweep: intents seen by earlier sweeps at least ``min_age_s`` ago (a
        command whose transaction failed without a restart) get the auto-void rule, under
        their round's lock. Returns how many intents were resolved."""
        with self.engine.connect() as conn:
            intents = repo.intents(conn)
        now = time.monotonic()
        seen = {b.bet_id: self._intent_seen.get(b.bet_id, now) for b in intents}
        self._intent_seen = seen
        stale = [b for b in intents if now - seen[b.bet_id] >= min_age_s]
        for b in stale:
            async with self._lock(f"round:{b.round_id}"):
                with self.engine.connect() as conn:
                    still = [x for x in repo.intents(conn) if x.bet_id == b.bet_id]
                if still:
                    await self._resolve_intents(still)
        if stale:
            await self.work.run_pass()
        return len(stale)

    async def run_sweeper(self, stop: asyncio.Event, interval_s: float = 30.0) -> None:
        """Background task ``casino-intent-sweep``: :meth:`sweep_intents` every interval."""
        while not stop.is_set():
            try:
                await self.sweep_intents()
            except Exception as exc:
                log.warning("casino.intent_sweep_failed", extra={"error": str(exc)})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval_s)


def answered(prior: repo.RequestRow | None, request_id: str, rpc: str) -> repo.RequestRow | None:
    """A stored answer of ``request_id``: None (never answered), the row (answered OK), or
    its stored refusal raised (also when the id was used for another rpc)."""
    if prior is None:
        return None
    if prior.rpc != rpc:
        raise RequestIdReused(request_id, prior.rpc)
    if prior.code != "OK":
        raise RepeatedRefusal(prior.code, prior.message)
    return prior


def fence_table(exc: FencedError) -> str:
    """``UTH table <id>`` of a fenced write (resource ``casino-table-<id>``)."""
    return "UTH table " + exc.resource.removeprefix("casino-table-")


def _settlement_ops(round_id: str, results: tuple[BetResult, ...]) -> dict[str, str]:
    """A lost or won bet's reservation is posted; a pushed one is voided."""
    ops = {}
    for r in results:
        if r.stake_cents <= 0:
            continue
        op = repo.POST if r.outcome in (Outcome.WIN, Outcome.LOSE) else repo.VOID
        ops[records.bet_id(round_id, r.spot)] = op
    return ops


__all__ = [
    "AUTO_VOID_REASON",
    "CasinoHandlers",
    "Loaded",
    "Refusal",
    "TableMoved",
    "answered",
]

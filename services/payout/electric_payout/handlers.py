"""Payout's consumers and credit worker: results → prizes → wallet, exactly once.

Consumers (``IdempotentConsumer``: the applied-record commits with the effect, so a
redelivered event changes nothing):

- ``payout.registration-events`` on ``electric.registration.events``: TournamentStarted →
  ``payout_tournaments`` (prize pool, pay table version, published payouts, seats).
- ``payout.table-events`` on ``electric.table.events``: HandStarted → the hand's button
  seat; TournamentFinished → ``payout_results``.

Whichever of TournamentStarted and TournamentFinished arrives second (topics are not
ordered with each other) awards the prizes in its transaction: one ``payout_prizes`` row and
one PrizeAwarded event (stream ``payout-<tournament>``) per paid player, guarded by
``payout_results.awarded_at`` so it happens once.

The credit worker then pays each ``awarded`` prize from ``house:prize_reserve`` to the
player's cash with the idempotency key ``prize-<tournament>-<place>-<player>``; after the
wallet answered, one transaction marks the prize ``credited`` (only if it still was
``awarded``) and appends PrizeCredited. A crash between the two repeats the wallet call,
which the wallet answers as a replay: one transfer, one PrizeCredited.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import grpc
from electric.common.v1 import money_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import wallet_pb2
from electric_domain.tournament import TournamentConfig
from electric_eventlog import (
    ANY,
    NO_STREAM,
    ConsumerWorker,
    EventBus,
    EventStore,
    IdempotentConsumer,
    ReceivedMessage,
    topic_for,
    utc_now,
)
from electric_platform.log import get_logger
from electric_wallet.client import WalletClient
from sqlalchemy import Connection, Engine, insert, select, update

from electric_payout.awards import compute_awards, prize_transfer_id
from electric_payout.metrics import PayoutMetrics
from electric_payout.store import tables as t

log = get_logger("electric.payout")

REGISTRATION_TOPIC = topic_for("registration")
TABLE_TOPIC = topic_for("table")
_STARTED = registration_events.TournamentStarted.DESCRIPTOR.full_name.encode()
_HAND = table_events.HandStarted.DESCRIPTOR.full_name.encode()
_FINISHED = table_events.TournamentFinished.DESCRIPTOR.full_name.encode()


def _cross_check(
    tournament_id: str, finished: table_events.TournamentFinished, ours: dict[int, int]
) -> None:
    """Log when the table's own prize figures (``FinishingPlace.prize``, informative) differ
    from payout's computation, which is the one paid."""
    if "prize" not in table_events.FinishingPlace.DESCRIPTOR.fields_by_name:
        return
    for p in finished.places:
        if p.HasField("prize") and p.prize.cents != ours.get(p.seat, 0):
            log.warning(
                "payout.prize_mismatch",
                tournament_id=tournament_id,
                seat=p.seat,
                table_says=p.prize.cents,
                payout_pays=ours.get(p.seat, 0),
            )


def payout_stream(tournament_id: str) -> str:
    """Event stream of a tournament's payout."""
    return f"payout-{tournament_id}"


def _usd(cents: int) -> money_pb2.Money:
    return money_pb2.Money(cents=cents, currency="USD")


class Payouts:
    """Effects of the consumed events and the awarding decision."""

    def __init__(self, engine: Engine, store: EventStore, config: TournamentConfig) -> None:
        self.engine = engine
        self.store = store
        self.config = config

    # ------------------------------------------------------------------ effects

    def on_registration_event(self, conn: Connection, envelope: Envelope) -> bool:
        """TournamentStarted → remember the tournament; award if its result is in.
        True when prizes were awarded."""
        started = registration_events.TournamentStarted()
        if not envelope.payload.Unpack(started):
            return False
        tid = started.tournament_id or started.table_id
        exists = conn.execute(
            select(t.tournaments.c.tournament_id).where(t.tournaments.c.tournament_id == tid)
        ).first()
        if exists is None:
            conn.execute(
                insert(t.tournaments).values(
                    tournament_id=tid,
                    table_id=started.table_id or tid,
                    buy_in_cents=started.buy_in.cents,
                    prize_pool_cents=started.prize_pool.cents,
                    multiplier=started.multiplier,
                    paytable_version=started.paytable_version,
                    table_size=started.table_size or len(started.seats),
                    started=started.SerializeToString(),
                    received_at=utc_now(),
                )
            )
        return self.award_if_ready(conn, tid, correlation_id=envelope.correlation_id)

    def on_table_event(self, conn: Connection, envelope: Envelope) -> bool:
        """HandStarted → its button; TournamentFinished → the result, award if possible."""
        hand = table_events.HandStarted()
        if envelope.payload.Unpack(hand):
            exists = conn.execute(
                select(t.hand_buttons.c.button_seat).where(
                    t.hand_buttons.c.table_id == hand.table_id,
                    t.hand_buttons.c.hand_number == hand.hand_number,
                )
            ).first()
            if exists is None:
                conn.execute(
                    insert(t.hand_buttons).values(
                        table_id=hand.table_id,
                        hand_number=hand.hand_number,
                        button_seat=hand.button_seat,
                    )
                )
            return False
        finished = table_events.TournamentFinished()
        if not envelope.payload.Unpack(finished):
            return False
        tid = finished.tournament_id or finished.table_id
        exists = conn.execute(
            select(t.results.c.tournament_id).where(t.results.c.tournament_id == tid)
        ).first()
        if exists is None:
            conn.execute(
                insert(t.results).values(
                    tournament_id=tid,
                    finished=finished.SerializeToString(),
                    source_event_id=envelope.event_id,
                    received_at=utc_now(),
                )
            )
        return self.award_if_ready(conn, tid, correlation_id=envelope.correlation_id)

    # ------------------------------------------------------------------ awarding

    def award_if_ready(self, conn: Connection, tournament_id: str, *, correlation_id: str) -> bool:
        """Award the prizes once both the start and the result are known (once)."""
        result = conn.execute(
            select(t.results).where(t.results.c.tournament_id == tournament_id).with_for_update()
        ).first()
        if result is None or result.awarded_at is not None:
            return False
        tour = conn.execute(
            select(t.tournaments).where(t.tournaments.c.tournament_id == tournament_id)
        ).first()
        if tour is None:
            return False  # TournamentStarted not consumed yet: it will award
        started = registration_events.TournamentStarted.FromString(tour.started)
        finished = table_events.TournamentFinished.FromString(result.finished)
        table_id = started.table_id or tournament_id
        buttons = {
            int(r.hand_number): int(r.button_seat)
            for r in conn.execute(
                select(t.hand_buttons).where(t.hand_buttons.c.table_id == table_id)
            )
        }
        awards = compute_awards(self.config, started, finished, buttons)
        pool = started.prize_pool.cents
        if sum(a.amount_cents for a in awards) != pool:  # pragma: no cover - domain invariant
            raise RuntimeError(f"prizes of {tournament_id} do not sum to the pool {pool}")
        _cross_check(tournament_id, finished, {a.seat: a.amount_cents for a in awards})
        if finished.prize_pool.cents and finished.prize_pool.cents != pool:
            log.warning(
                "payout.pool_mismatch",
                tournament_id=tournament_id,
                started=pool,
                finished=finished.prize_pool.cents,
            )
        now = utc_now()
        events = []
        for a in awards:
            key = prize_transfer_id(tournament_id, a.player_id, a.place)
            conn.execute(
                insert(t.prizes).values(
                    tournament_id=tournament_id,
                    place=a.place,
                    player_id=a.player_id,
                    entry_id=a.entry_id,
                    table_id=table_id,
                    amount_cents=a.amount_cents,
                    buy_in_cents=started.buy_in.cents,
                    prize_pool_cents=pool,
                    multiplier=started.multiplier,
                    paytable_version=started.paytable_version,
                    status="awarded",
                    wallet_transfer_id="",
                    awarded_at=now,
                    credited_at=None,
                    transfer_key=key,
                    seat=a.seat,
                    tied_count=a.tied_count,
                    attempts=0,
                    last_error="",
                )
            )
            events.append(
                payout_events.PrizeAwarded(
                    tournament_id=tournament_id,
                    table_id=table_id,
                    place=a.place,
                    player_id=a.player_id,
                    entry_id=a.entry_id,
                    amount=_usd(a.amount_cents),
                    share_bps=a.amount_cents * 10_000 // pool if pool else 0,
                    tied_count=a.tied_count,
                    multiplier=started.multiplier,
                    paytable_version=started.paytable_version,
                    source_event_id=result.source_event_id,
                )
            )
        if events:
            self.store.append(
                conn,
                payout_stream(tournament_id),
                NO_STREAM,
                events,
                correlation_id=correlation_id or tournament_id,
                causation_id=result.source_event_id,
                occurred_at=now,
            )
        conn.execute(
            update(t.results)
            .where(t.results.c.tournament_id == tournament_id)
            .values(awarded_at=now)
        )
        return bool(events)

    def award_pending(self) -> int:
        """Award results whose start arrived in a concurrent transaction (each consumer saw
        only its own row); the number of tournaments awarded."""
        with self.engine.connect() as conn:
            ids = list(
                conn.execute(
                    select(t.results.c.tournament_id)
                    .join(
                        t.tournaments,
                        t.tournaments.c.tournament_id == t.results.c.tournament_id,
                    )
                    .where(t.results.c.awarded_at.is_(None))
                ).scalars()
            )
        done = 0
        for tid in ids:
            with self.engine.begin() as conn:
                done += self.award_if_ready(conn, tid, correlation_id=tid)
        return done

    # ------------------------------------------------------------------ crediting

    def awarded(self, limit: int = 200) -> list[tuple[str, int, str, int, str]]:
        """(tournament, place, player, amount, transfer key) of prizes not yet credited."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(
                    t.prizes.c.tournament_id,
                    t.prizes.c.place,
                    t.prizes.c.player_id,
                    t.prizes.c.amount_cents,
                    t.prizes.c.transfer_key,
                )
                .where(t.prizes.c.status == "awarded")
                .order_by(t.prizes.c.awarded_at, t.prizes.c.tournament_id, t.prizes.c.place)
                .limit(limit)
            ).all()
        return [
            (r.tournament_id, int(r.place), r.player_id, int(r.amount_cents), r.transfer_key)
            for r in rows
        ]

    def mark_credited(
        self,
        tournament_id: str,
        place: int,
        player_id: str,
        amount: int,
        key: str,
        transfer_id: str,
    ) -> bool:
        """awarded → credited with PrizeCredited, once. True when this call did it."""
        now = utc_now()
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(t.prizes)
                .where(
                    t.prizes.c.tournament_id == tournament_id,
                    t.prizes.c.place == place,
                    t.prizes.c.player_id == player_id,
                    t.prizes.c.status == "awarded",
                )
                .values(status="credited", wallet_transfer_id=transfer_id, credited_at=now)
            ).rowcount
            if changed != 1:
                return False
            self.store.append(
                conn,
                payout_stream(tournament_id),
                ANY,
                [
                    payout_events.PrizeCredited(
                        tournament_id=tournament_id,
                        place=place,
                        player_id=player_id,
                        amount=_usd(amount),
                        wallet_transfer_id=transfer_id,
                        idempotency_key=key,
                    )
                ],
                correlation_id=tournament_id,
                causation_id=key,
                occurred_at=now,
            )
            return True

    def note_failure(self, tournament_id: str, place: int, player_id: str, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(t.prizes)
                .where(
                    t.prizes.c.tournament_id == tournament_id,
                    t.prizes.c.place == place,
                    t.prizes.c.player_id == player_id,
                )
                .values(attempts=t.prizes.c.attempts + 1, last_error=error[:2000])
            )


class Crediter:
    """Credits awarded prizes through the wallet (see module doc); woken by the consumers."""

    def __init__(
        self,
        payouts: Payouts,
        wallet: WalletClient,
        *,
        interval: float = 1.0,
        metrics: PayoutMetrics | None = None,
    ) -> None:
        self.metrics = metrics or PayoutMetrics()
        self.payouts = payouts
        self.wallet = wallet
        self.interval = interval
        self.wake = asyncio.Event()
        self._lock = asyncio.Lock()

    async def credit(
        self, key: str, player_id: str, amount: int, place: int
    ) -> wallet_pb2.Transfer:
        """The wallet call of one prize (idempotent by ``key``): prize reserve → cash."""
        return await self.wallet.credit_prize(
            key, player_id, amount, memo=f"Electric Poker prize, place {place}"
        )

    async def run_once(self) -> int:
        """Credit every awarded prize; the number credited by this pass."""
        done = 0
        async with self._lock:
            await asyncio.to_thread(self.payouts.award_pending)
            for tid, place, player, amount, key in await asyncio.to_thread(self.payouts.awarded):
                try:
                    transfer = await self.credit(key, player, amount, place)
                except grpc.aio.AioRpcError as err:
                    log.warning(
                        "prize_credit.failed",
                        tournament_id=tid,
                        player_id=player,
                        code=err.code().name,
                        detail=err.details(),
                    )
                    await asyncio.to_thread(
                        self.payouts.note_failure,
                        tid,
                        place,
                        player,
                        f"{err.code().name}: {err.details()}",
                    )
                    continue
                if await asyncio.to_thread(
                    self.payouts.mark_credited,
                    tid,
                    place,
                    player,
                    amount,
                    key,
                    transfer.spec.transfer_id or key,
                ):
                    done += 1
                    self.metrics.credited.inc()
                    self.metrics.credited_cents.inc(amount)
        return done

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: a pass whenever woken, and at least every ``interval``."""
        while not stop.is_set():
            self.wake.clear()
            try:
                await self.run_once()
            except grpc.aio.AioRpcError as err:  # pragma: no cover - caught per prize
                log.warning("prize_credit.pass_failed", code=err.code().name)
            waiters = [asyncio.ensure_future(self.wake.wait()), asyncio.ensure_future(stop.wait())]
            try:
                await asyncio.wait(
                    waiters, timeout=self.interval, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                for w in waiters:
                    w.cancel()


class PayoutConsumers:
    """The two ConsumerWorkers; each awarding commit wakes the crediter."""

    def __init__(self, payouts: Payouts, bus: EventBus, on_award: Callable[[], None]) -> None:
        self._on_award = on_award
        self._awarded = False
        self.registration = ConsumerWorker(
            engine=payouts.engine,
            bus=bus,
            consumer=IdempotentConsumer("payout.registration-events"),
            topics=[REGISTRATION_TOPIC],
            effect=lambda conn, env: self._note(payouts.on_registration_event(conn, env)),
        )
        self.table = ConsumerWorker(
            engine=payouts.engine,
            bus=bus,
            consumer=IdempotentConsumer("payout.table-events"),
            topics=[TABLE_TOPIC],
            effect=lambda conn, env: self._note(payouts.on_table_event(conn, env)),
        )

    def _note(self, awarded: bool) -> None:
        self._awarded = self._awarded or awarded

    async def _handle(self, worker: ConsumerWorker, message: ReceivedMessage) -> None:
        await worker.handle(message)
        if self._awarded:
            self._awarded = False
            self._on_award()

    async def handle_registration(self, message: ReceivedMessage) -> None:
        """TournamentStarted only; other registration events are skipped unrecorded."""
        if message.header("event-type") == _STARTED:
            await self._handle(self.registration, message)

    async def handle_table(self, message: ReceivedMessage) -> None:
        """HandStarted and TournamentFinished only."""
        if message.header("event-type") in (_HAND, _FINISHED):
            await self._handle(self.table, message)

    async def run(self, stop: asyncio.Event) -> None:
        """Both subscriptions until ``stop``."""
        reg, tab = self.registration, self.table
        tasks = [
            asyncio.ensure_future(
                reg.bus.consume(
                    reg.topics,
                    group_id=reg.group_id,
                    handler=self.handle_registration,
                    stop=stop,
                )
            ),
            asyncio.ensure_future(
                tab.bus.consume(
                    tab.topics, group_id=tab.group_id, handler=self.handle_table, stop=stop
                )
            ),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

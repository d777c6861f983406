"""Payout's decisions: results → prizes (or a hold) → wallet credits, exactly once.

The table's tournament domain owns the prizes: TournamentFinished carries each finishing
place's prize. Payout pays those, after re-checking them against the pay table as an audit
control (``electric_domain.payout.audit``).

Whichever of TournamentStarted (registration) and TournamentFinished (table) is consumed
second decides, in its consumer's transaction (topics are not ordered with each other):

- the check agrees → one PrizeAwarded event (stream ``payout-<table>``) per paid player,
  and its ``payout_prizes`` row;
- the check disagrees → one PrizeCheckFailed event and the result marked held: nothing is
  awarded or credited for that tournament (the ``electric_payout_prize_check_failures_total``
  counter and the ``PrizeCheckFailed`` alert tell operators).

``payout_results.awarded_at`` / ``held_at`` make the decision happen once. The table id is
the tournament's identity (TournamentStarted and TournamentFinished both carry it).

The handlers write none of the rows of a decision or a credit themselves: they hand the
facts they decided (:mod:`electric_payout.facts`) to the projector
(``store.projections.project``, which writes the rows) and to the mapper (``codec.append``,
the only append), in one transaction; only the consumed facts (TournamentStarted,
TournamentFinished, HandStarted) and the credit attempts are written through ``store.repo``
(docs/payout.md, "Projections").

:class:`Crediter` then pays each awarded prize from ``house:prize_reserve`` to the player's
cash with the idempotency key ``prize-<table>-<place>-<player>`` as owed work
(``electric_platform.owed_work``); after the wallet answered, one transaction marks the
prize ``credited`` (the projector, only if it still was ``awarded``) and appends
PrizeCredited. A crash in between repeats the wallet call, which the wallet answers as a
replay: one transfer.
Credits run concurrently (``CREDIT_PARALLELISM`` calls in flight; issue 16), and the
"credited" transaction goes through the store's group commit (``EventStore.transact``), so
concurrent credits share commits; the finish-to-credit lag is the
``electric_payout_finish_to_credit_seconds`` histogram (metrics.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import wallet_pb2
from electric_clients.wallet import WalletClient
from electric_domain.payout import Award, Held, PlaceResult, Terms, settle
from electric_domain.tournament import TournamentConfig
from electric_eventlog import EventStore, causality, utc_now
from electric_platform.owed_work import OwedWork
from sqlalchemy import Connection, Engine

from electric_payout import codec
from electric_payout import facts as f
from electric_payout.codec import payout_stream
from electric_payout.metrics import PayoutMetrics
from electric_payout.store import projections, repo


@dataclass(frozen=True)
class Decision:
    """What a committed decision did (acted on after the commit)."""

    table_id: str
    #: Prizes awarded (0 when held).
    awarded: int
    #: True when the prize check failed and the tournament is held.
    held: bool


def _table_id(event_name: str, table_id: str) -> str:
    if not table_id:
        raise ValueError(f"{event_name} without a table_id: the table id is the identity")
    return table_id


def place_results(finished: table_events.TournamentFinished) -> list[PlaceResult]:
    """The result's places in the domain's terms (a place without ``prize`` has None)."""
    return [
        PlaceResult(
            place=p.place,
            seat=p.seat,
            player_id=p.player_id,
            entry_id=p.entry_id,
            tied_count=p.tied_count,
            eliminated_in_hand=p.eliminated_in_hand,
            prize_cents=p.prize.cents if p.HasField("prize") else None,
        )
        for p in finished.places
    ]


def terms_of(
    started: registration_events.TournamentStarted, places: Sequence[PlaceResult]
) -> Terms:
    """What TournamentStarted fixed (table size: announced, else the highest seat seen)."""
    size = started.table_size or max([len(started.seats), *(p.seat for p in places)], default=0)
    return Terms(
        pool_cents=started.prize_pool.cents,
        multiplier=started.multiplier,
        paytable_version=started.paytable_version,
        table_size=size,
        published_shares=tuple(p.share_bps for p in sorted(started.payouts, key=lambda p: p.place)),
    )


def _award(
    started: registration_events.TournamentStarted, a: Award, source_event_id: str, at: datetime
) -> f.PrizeAwarded:
    """The PrizeAwarded of one award (seat and buy-in: row context, not in the event)."""
    table_id = started.table_id
    pool = started.prize_pool.cents
    return f.PrizeAwarded(
        tournament_id=table_id,
        table_id=table_id,
        place=a.place,
        player_id=a.player_id,
        entry_id=a.entry_id,
        amount_cents=a.amount_cents,
        share_bps=a.amount_cents * 10_000 // pool if pool else 0,
        tied_count=a.tied_count,
        multiplier=started.multiplier,
        paytable_version=started.paytable_version,
        source_event_id=source_event_id,
        occurred_at=at,
        buy_in_cents=started.buy_in.cents,
        seat=a.seat,
    )


class Payouts:
    """Effects of the consumed events, the awarding decision and the credit bookkeeping."""

    def __init__(self, engine: Engine, store: EventStore, config: TournamentConfig) -> None:
        self.engine = engine
        self.store = store
        self.config = config

    # ------------------------------------------------------------------ consumed facts

    def on_started(
        self, conn: Connection, envelope: Envelope, started: registration_events.TournamentStarted
    ) -> Decision | None:
        """Remember the tournament; decide if its result is in."""
        table_id = _table_id("TournamentStarted", started.table_id)
        repo.add_tournament(
            conn,
            table_id=table_id,
            buy_in_cents=started.buy_in.cents,
            prize_pool_cents=started.prize_pool.cents,
            multiplier=started.multiplier,
            paytable_version=started.paytable_version,
            table_size=started.table_size or len(started.seats),
            started=started.SerializeToString(),
            at=utc_now(),
        )
        return self.decide(conn, table_id, correlation_id=envelope.correlation_id)

    def on_hand(self, conn: Connection, hand: table_events.HandStarted) -> None:
        """Remember the hand's button (tie remainders start left of it)."""
        repo.add_hand_button(conn, hand.table_id, hand.hand_number, hand.button_seat)

    def on_finished(
        self, conn: Connection, envelope: Envelope, finished: table_events.TournamentFinished
    ) -> Decision | None:
        """Remember the result; decide if the tournament's start is in."""
        table_id = _table_id("TournamentFinished", finished.table_id)
        repo.add_result(
            conn,
            table_id=table_id,
            finished=finished.SerializeToString(),
            source_event_id=envelope.event_id,
            at=utc_now(),
            correlation_id=envelope.correlation_id,
        )
        return self.decide(conn, table_id, correlation_id=envelope.correlation_id)

    # ------------------------------------------------------------------ deciding

    def decide(self, conn: Connection, table_id: str, *, correlation_id: str) -> Decision | None:
        """Award the published prizes, or hold them, once start and result are both known
        (once). None when there is nothing to decide (yet)."""
        result = repo.lock_undecided_result(conn, table_id)
        if result is None:
            return None
        first = codec.read_stream(self.store, conn, payout_stream(table_id), limit=1)
        if first:
            # Decided already: the log has the decision, the row does not (a restored dump
            # whose rows were older than the re-imported events, then a consumer group reset
            # delivering the result again; docs/chaos.md, section 5). The decision stands and
            # the row catches up; deciding again would conflict with NO_STREAM forever.
            projections.project_logged_decision(conn, first[0][1])
            return None
        tour = repo.get_tournament(conn, table_id)
        if tour is None:
            return None  # TournamentStarted not consumed yet: it will decide
        started = registration_events.TournamentStarted.FromString(tour.started)
        finished = table_events.TournamentFinished.FromString(result.finished)
        places = place_results(finished)
        outcome = settle(
            self.config,
            terms_of(started, places),
            places,
            repo.hand_buttons(conn, table_id),
            result_pool_cents=finished.prize_pool.cents,
            result_multiplier=finished.multiplier,
        )
        now = utc_now()
        correlation = correlation_id or result.correlation_id or table_id
        source = result.source_event_id
        held = isinstance(outcome, Held)
        decided: list[f.Fact]
        if isinstance(outcome, Held):
            decided = [
                f.PrizeCheckFailed(
                    tournament_id=table_id,
                    table_id=table_id,
                    discrepancies=outcome.discrepancies,
                    prize_pool_cents=started.prize_pool.cents,
                    multiplier=started.multiplier,
                    paytable_version=started.paytable_version,
                    source_event_id=source,
                    occurred_at=now,
                )
            ]
        else:
            decided = [_award(started, a, source, now) for a in outcome.awards]
        if not decided:
            projections.mark_awarded_without_prizes(conn, table_id, now)
            return Decision(table_id, 0, held=False)
        # The rows of the decision (the projector), then its events (the mapper): the
        # stream's first append (NO_STREAM), so a second decision conflicts.
        projections.project(conn, decided)
        codec.append(self.store, conn, decided, correlation_id=correlation, causation_id=source)
        return Decision(table_id, 0 if held else len(decided), held=held)

    def decide_pending(self) -> list[Decision]:
        """Decide results whose start arrived in a concurrent transaction (each consumer saw
        only its own row)."""
        with self.engine.connect() as conn:
            ids = repo.undecided_results(conn)
        out: list[Decision] = []
        for table_id in ids:
            with self.engine.begin() as conn:
                decision = self.decide(conn, table_id, correlation_id="")
            if decision is not None:
                out.append(decision)
        return out

    # ------------------------------------------------------------------ crediting

    def owed_credits(self, table_id: str | None = None) -> list[repo.OwedCredit]:
        """Prizes awarded and not yet credited."""
        with self.engine.connect() as conn:
            return repo.owed_credits(conn, table_id)

    def award_causes(self, table_ids: Iterable[str]) -> dict[tuple[str, int, str], Envelope]:
        """The PrizeAwarded envelope of each ``(table, place, player)`` of ``table_ids``: the
        event that owes the credit (its id and correlation id travel with the wallet call)."""
        out: dict[tuple[str, int, str], Envelope] = {}
        with self.engine.connect() as conn:
            for table_id in set(table_ids):
                for envelope, fact in codec.read_stream(self.store, conn, payout_stream(table_id)):
                    if isinstance(fact, f.PrizeAwarded):
                        out[(table_id, fact.place, fact.player_id)] = envelope
        return out

    def mark_credited(self, credit: repo.OwedCredit, transfer_id: str) -> bool:
        """awarded → credited with PrizeCredited, once. True when this call did it."""
        now = utc_now()

        credited = f.PrizeCredited(
            tournament_id=credit.table_id,
            place=credit.place,
            player_id=credit.player_id,
            amount_cents=credit.amount_cents,
            wallet_transfer_id=transfer_id,
            idempotency_key=credit.transfer_key,
            occurred_at=now,
        )

        def work(conn: Connection) -> bool:
            if not projections.project(conn, [credited]):
                return False  # credited already (the row says so): nothing to append
            codec.append(
                self.store,
                conn,
                [credited],
                # The owed-work runner binds the award's ids (PrizeCredit); the table id and
                # the transfer key only stand in for a credit run outside it.
                correlation_id=causality.correlation_id() or credit.table_id,
                causation_id=causality.causation_id() or credit.transfer_key,
            )
            return True

        # Group commit: concurrent credits of this process share one transaction/commit.
        return self.store.transact(work)

    def note_failure(self, credit: repo.OwedCredit, error: str) -> None:
        """Count a failed credit attempt."""
        with self.engine.begin() as conn:
            repo.note_credit_failure(conn, credit.table_id, credit.place, credit.player_id, error)


@dataclass(frozen=True)
class PrizeCredit:
    """One owed prize credit (an ``OwedCall``: credits do not block each other)."""

    credit: repo.OwedCredit
    blocking: bool = False
    #: Correlation id of the award (the tournament's), bound while the credit runs.
    correlation_id: str = ""
    #: Id of the PrizeAwarded that owes the credit.
    causation_id: str = ""

    @property
    def op_id(self) -> str:
        return self.credit.transfer_key

    @property
    def group(self) -> str:
        return self.credit.table_id


#: Wallet credit calls in flight at once (bounded: the wallet's group commit batches them).
CREDIT_PARALLELISM = 16


class Crediter:
    """Credits awarded prizes through the wallet as owed work (module doc); its
    ``before_pass`` decides results left undecided by concurrent consumers."""

    def __init__(
        self,
        payouts: Payouts,
        wallet: WalletClient,
        *,
        interval: float = 1.0,
        metrics: PayoutMetrics | None = None,
        parallelism: int = CREDIT_PARALLELISM,
    ) -> None:
        self.metrics = metrics or PayoutMetrics()
        self.payouts = payouts
        self.wallet = wallet
        # Credits of different prizes are independent (each has its own idempotency key):
        # up to ``parallelism`` wallet calls in flight, across tournaments and within one.
        self.work: OwedWork[PrizeCredit, wallet_pb2.Transfer] = OwedWork(
            "prize_credit", self, interval=interval, parallelism=parallelism
        )
        #: Set to make the background loop pass now (after an award).
        self.wake = self.work.wake

    async def credit(
        self, key: str, player_id: str, amount: int, place: int
    ) -> wallet_pb2.Transfer:
        """The wallet call of one prize (idempotent by ``key``): prize reserve → cash."""
        return await self.wallet.credit_prize(
            key, player_id, amount, memo=f"Electric Poker prize, place {place}"
        )

    async def run_once(self) -> int:
        """One pass; the number of prizes credited by it."""
        return (await self.work.run_pass()).done

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: a pass whenever woken, and at least every ``interval``."""
        await self.work.run(stop)

    # ------------------------------------------------------------------ OwedWorkSource

    def pending(self, group: str | None) -> list[PrizeCredit]:
        credits = self.payouts.owed_credits(group)
        causes = self.payouts.award_causes(c.table_id for c in credits)
        out = []
        for c in credits:
            cause = causes.get((c.table_id, c.place, c.player_id))
            ids = (cause.correlation_id, cause.event_id) if cause is not None else ("", "")
            out.append(PrizeCredit(c, correlation_id=ids[0], causation_id=ids[1]))
        return out

    def groups_waiting(self) -> Iterable[str]:
        return ()

    async def perform(self, call: PrizeCredit) -> wallet_pb2.Transfer:
        c = call.credit
        return await self.credit(c.transfer_key, c.player_id, c.amount_cents, c.place)

    def record_done(self, call: PrizeCredit, result: wallet_pb2.Transfer) -> bool:
        c = call.credit
        if not self.payouts.mark_credited(c, result.spec.transfer_id or c.transfer_key):
            return False
        self.metrics.prize_credited(c.table_id, c.amount_cents)
        return True

    def record_failure(self, call: PrizeCredit, error: str) -> None:
        self.payouts.note_failure(call.credit, error)

    async def settle(self, group: str) -> None:
        return None

    async def before_pass(self) -> None:
        for decision in await asyncio.to_thread(self.payouts.decide_pending):
            self.metrics.decided(decision.held)

    async def after_pass(self) -> None:
        return None

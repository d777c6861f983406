"""Payout's one mapper: a payout fact (:mod:`electric_payout.facts`) becomes a stored record
here and only here, and a stored record becomes a fact again here and only here.

* facts ↔ the protobuf messages of ``electric.payout.v1`` (``events.proto``,
  ``casino_events.proto``), the stream of each fact and the version its stream must have;
* :func:`append`: the only call of the event store's append in payout. The payload is
  serialised once by the event store (``electric_eventlog.registry.pack``, deterministic):
  those bytes are stored, hashed into the stream's chain and published to Kafka as they
  are. The messages are built field for field as the handlers built them before issue 25,
  so the published bytes did not change;
* :func:`decode` / :func:`read_stream` / :func:`read_all`: the only reads of payout's
  stored records (the rebuild, the credit's cause, a decision already logged). Every
  stored format is read here, so an older one is upgraded in this one place. There is one
  format so far (``electric.payout.v1`` since the first release); proto3 defaults fill
  absent fields (an amount stored without ``Money`` reads as 0 cents).

The consumed facts of other services (TournamentStarted, TournamentFinished, HandStarted,
the casino round outcomes) are not payout's records: their own services map them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from itertools import groupby

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import casino_events_pb2 as ce
from electric.payout.v1 import events_pb2 as pe
from electric_clients.convert import usd
from electric_domain.payout import Discrepancy, PrizeCheck
from electric_eventlog import ANY, NO_STREAM, EventStore, Expected
from electric_eventlog.codec import to_utc
from google.protobuf.message import Message
from sqlalchemy import Connection

from electric_payout import facts as f

_CHECK = {
    PrizeCheck.SEAT_PRIZE: pe.PRIZE_CHECK_SEAT_PRIZE,
    PrizeCheck.MISSING_PRIZE: pe.PRIZE_CHECK_MISSING_PRIZE,
    PrizeCheck.TOTAL: pe.PRIZE_CHECK_TOTAL,
    PrizeCheck.PRIZE_POOL: pe.PRIZE_CHECK_PRIZE_POOL,
    PrizeCheck.MULTIPLIER: pe.PRIZE_CHECK_MULTIPLIER,
    PrizeCheck.PAY_TABLE: pe.PRIZE_CHECK_PAY_TABLE,
}
_CHECK_OF = {v: k for k, v in _CHECK.items()}

EVENT_TYPES = (
    pe.PrizeAwarded,
    pe.PrizeCheckFailed,
    pe.PrizeCredited,
    ce.CasinoWinOwed,
    ce.CasinoWinCredited,
)
EVENT_TYPE_NAMES = frozenset(t.DESCRIPTOR.full_name for t in EVENT_TYPES)


# --------------------------------------------------------------------------- streams


def payout_stream(table_id: str) -> str:
    """Event stream of a tournament's payout."""
    return f"payout-{table_id}"


def casino_stream(round_id: str) -> str:
    """Event stream of a casino round's payout."""
    return f"payout-casino-{round_id}"


def stream_of(fact: f.Fact) -> str:
    """The stream a fact is appended to."""
    if isinstance(fact, f.CasinoWinOwed | f.CasinoWinCredited):
        return casino_stream(fact.round_id)
    return payout_stream(fact.tournament_id)


def expected_version(fact: f.Fact) -> Expected:
    """A decision (awards or a hold; a round's owed wins) is its stream's first append, so
    the event store refuses a second decision (NO_STREAM); a credit follows it (ANY: the
    row's state, checked by the projector in the same transaction, makes it once)."""
    if isinstance(fact, f.PrizeCredited | f.CasinoWinCredited):
        return ANY
    return NO_STREAM


# --------------------------------------------------------------------------- facts ↔ protobuf


def _discrepancy_to_pb(d: Discrepancy) -> pe.PrizeDiscrepancy:
    return pe.PrizeDiscrepancy(
        check=_CHECK[d.check],
        seat=d.seat,
        player_id=d.player_id,
        published=usd(d.published_cents),
        expected=usd(d.expected_cents),
        detail=d.detail,
    )


def to_pb(fact: f.Fact) -> Message:
    """The protobuf payload of a fact (its row context is not part of it)."""
    if isinstance(fact, f.PrizeAwarded):
        return pe.PrizeAwarded(
            tournament_id=fact.tournament_id,
            table_id=fact.table_id,
            place=fact.place,
            player_id=fact.player_id,
            entry_id=fact.entry_id,
            amount=usd(fact.amount_cents),
            share_bps=fact.share_bps,
            tied_count=fact.tied_count,
            multiplier=fact.multiplier,
            paytable_version=fact.paytable_version,
            source_event_id=fact.source_event_id,
        )
    if isinstance(fact, f.PrizeCheckFailed):
        return pe.PrizeCheckFailed(
            tournament_id=fact.tournament_id,
            table_id=fact.table_id,
            discrepancies=[_discrepancy_to_pb(d) for d in fact.discrepancies],
            prize_pool=usd(fact.prize_pool_cents),
            multiplier=fact.multiplier,
            paytable_version=fact.paytable_version,
            source_event_id=fact.source_event_id,
        )
    if isinstance(fact, f.PrizeCredited):
        return pe.PrizeCredited(
            tournament_id=fact.tournament_id,
            place=fact.place,
            player_id=fact.player_id,
            amount=usd(fact.amount_cents),
            wallet_transfer_id=fact.wallet_transfer_id,
            idempotency_key=fact.idempotency_key,
        )
    if isinstance(fact, f.CasinoWinOwed):
        return ce.CasinoWinOwed(
            round_id=fact.round_id,
            table_id=fact.table_id,
            game=fact.game,
            player_id=fact.player_id,
            bet_kind=fact.bet_kind,
            stake=usd(fact.stake_cents),
            win=usd(fact.win_cents),
            idempotency_key=fact.idempotency_key,
            source_event_id=fact.source_event_id,
        )
    return ce.CasinoWinCredited(
        round_id=fact.round_id,
        table_id=fact.table_id,
        game=fact.game,
        player_id=fact.player_id,
        bet_kind=fact.bet_kind,
        amount=usd(fact.amount_cents),
        wallet_transfer_id=fact.wallet_transfer_id,
        idempotency_key=fact.idempotency_key,
    )


def from_pb(msg: Message, at: datetime) -> f.Fact:
    """The fact of a stored payload (one of :data:`EVENT_TYPES`) that occurred at ``at``."""
    if isinstance(msg, pe.PrizeAwarded):
        return f.PrizeAwarded(
            msg.tournament_id,
            msg.table_id,
            msg.place,
            msg.player_id,
            msg.entry_id,
            msg.amount.cents,
            msg.share_bps,
            msg.tied_count,
            msg.multiplier,
            msg.paytable_version,
            msg.source_event_id,
            at,
        )
    if isinstance(msg, pe.PrizeCheckFailed):
        found = tuple(
            Discrepancy(
                _CHECK_OF[d.check],
                d.seat,
                d.player_id,
                d.published.cents,
                d.expected.cents,
                d.detail,
            )
            for d in msg.discrepancies
            # A check this release does not know (a newer writer) is not payout's to read.
            if d.check in _CHECK_OF
        )
        return f.PrizeCheckFailed(
            msg.tournament_id,
            msg.table_id,
            found,
            msg.prize_pool.cents,
            msg.multiplier,
            msg.paytable_version,
            msg.source_event_id,
            at,
        )
    if isinstance(msg, pe.PrizeCredited):
        return f.PrizeCredited(
            msg.tournament_id,
            msg.place,
            msg.player_id,
            msg.amount.cents,
            msg.wallet_transfer_id,
            msg.idempotency_key,
            at,
        )
    if isinstance(msg, ce.CasinoWinOwed):
        return f.CasinoWinOwed(
            msg.round_id,
            msg.table_id,
            msg.game,
            msg.player_id,
            msg.bet_kind,
            msg.stake.cents,
            msg.win.cents,
            msg.idempotency_key,
            msg.source_event_id,
            at,
        )
    if isinstance(msg, ce.CasinoWinCredited):
        return f.CasinoWinCredited(
            msg.round_id,
            msg.table_id,
            msg.game,
            msg.player_id,
            msg.bet_kind,
            msg.amount.cents,
            msg.wallet_transfer_id,
            msg.idempotency_key,
            at,
        )
    raise TypeError(f"not a payout event: {type(msg).__name__}")


# --------------------------------------------------------------------------- the store


def append(
    events: EventStore,
    conn: Connection,
    facts: Sequence[f.Fact],
    *,
    correlation_id: str,
    causation_id: str,
) -> None:
    """Append ``facts`` in ``conn``'s transaction: one append per run of facts of the same
    stream and moment (a decision's awards are one append, so NO_STREAM covers them all)."""
    for (stream, at), run in groupby(facts, key=lambda x: (stream_of(x), x.occurred_at)):
        batch = list(run)
        events.append(
            conn,
            stream,
            expected_version(batch[0]),
            [to_pb(x) for x in batch],
            correlation_id=correlation_id,
            causation_id=causation_id,
            occurred_at=at,
        )


def decode(events: EventStore, envelope: Envelope) -> f.Fact | None:
    """The fact of a stored record (upgraded from any older form: module doc); None for a
    record that is not a payout event."""
    if envelope.event_type not in EVENT_TYPE_NAMES:
        return None
    at = to_utc(envelope.occurred_at.ToDatetime(tzinfo=UTC))
    return from_pb(events.decode(envelope), at)


def read_stream(
    events: EventStore, conn: Connection, stream: str, *, limit: int | None = None
) -> list[tuple[Envelope, f.Fact]]:
    """The payout facts of one stream, in order, each with its envelope (ids, causality)."""
    out: list[tuple[Envelope, f.Fact]] = []
    for envelope in events.read_stream(conn, stream, limit=limit):
        fact = decode(events, envelope)
        if fact is not None:
            out.append((envelope, fact))
    return out


def read_all(events: EventStore, conn: Connection) -> Iterator[tuple[Envelope, f.Fact]]:
    """Every payout fact of the store, in global order, each with its envelope."""
    for envelope in events.iter_all(conn):
        fact = decode(events, envelope)
        if fact is not None:
            yield envelope, fact

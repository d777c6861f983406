"""The wallet's one mapper: a domain event becomes a stored record here and only here.

* domain events and transfer specs ↔ the protobuf messages of ``electric.wallet.v1``
  (``events.proto``, ``ledger.proto``), and the stream and expected version of each event;
* :func:`append` / :func:`prepare`: the only calls of the event store's append in the
  wallet (the one-by-one path and the group-commit batch, ``batch.py``). The payload is
  serialised once (``electric_eventlog.registry.pack``, deterministic): those bytes are
  stored, hashed into the stream's chain and published to Kafka as they are;
* :func:`decode`: the only read of a stored record back into a domain event (rebuilds).
  Every stored format is read here, so an older one is upgraded in this one place. There
  is one format so far (``electric.wallet.v1`` since the first release); proto3 defaults
  fill absent fields and a spec stored without a ``code`` reads as ``"transfer"``.

No SQL of its own (the event store runs it). The API's response messages are built in
:mod:`.api`; a transfer row keeps its spec through :func:`spec_to_pb` (store rows)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.wallet.v1 import events_pb2, ledger_pb2
from electric_eventlog.pgbatch import PreparedAppend
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection

from . import domain as d

EVENT_TYPES = (
    events_pb2.AccountOpened,
    events_pb2.TransferPending,
    events_pb2.TransferPosted,
    events_pb2.TransferVoided,
)
EVENT_TYPE_NAMES = frozenset(t.DESCRIPTOR.full_name for t in EVENT_TYPES)


# --------------------------------------------------------------------------- pieces


def leg_to_pb(leg: d.Leg) -> ledger_pb2.Leg:
    return ledger_pb2.Leg(
        debit_account_id=leg.debit, credit_account_id=leg.credit, amount=leg.amount
    )


def legs_to_pb(legs: Iterable[d.Leg]) -> list[ledger_pb2.Leg]:
    return [leg_to_pb(leg) for leg in legs]


def leg_from_pb(pb: ledger_pb2.Leg) -> d.Leg:
    return d.Leg(pb.debit_account_id, pb.credit_account_id, pb.amount)


def legs_from_pb(pbs: Iterable[ledger_pb2.Leg]) -> tuple[d.Leg, ...]:
    return tuple(leg_from_pb(pb) for pb in pbs)


def spec_to_pb(req: d.TransferRequest) -> ledger_pb2.TransferSpec:
    pb = ledger_pb2.TransferSpec(
        transfer_id=req.transfer_id,
        amount=req.amount,
        pending=req.pending,
        code=req.code,
        memo=req.memo,
    )
    if isinstance(req.debit, d.AccountSide):
        pb.debit_account_id = req.debit.account_id
    else:
        pb.debit_player_id = req.debit.player_id
    if isinstance(req.credit, d.AccountSide):
        pb.credit_account_id = req.credit.account_id
    else:
        pb.credit_player_winnings.player_id = req.credit.player_id
        pb.credit_player_winnings.stake_transfer_id = req.credit.stake_transfer_id
    return pb


def spec_from_pb(pb: ledger_pb2.TransferSpec) -> d.TransferRequest:
    """The domain request of a spec; raises :class:`domain.InvalidArgument` when a side is
    missing (the rest is validated by the domain)."""
    debit: d.DebitSide
    credit: d.CreditSide
    which_debit = pb.WhichOneof("debit")
    if which_debit == "debit_account_id":
        debit = d.AccountSide(pb.debit_account_id)
    elif which_debit == "debit_player_id":
        debit = d.PlayerFunds(pb.debit_player_id)
    else:
        raise d.InvalidArgument("spec.debit: set debit_account_id or debit_player_id")
    which_credit = pb.WhichOneof("credit")
    if which_credit == "credit_account_id":
        credit = d.AccountSide(pb.credit_account_id)
    elif which_credit == "credit_player_winnings":
        w = pb.credit_player_winnings
        credit = d.PlayerWinnings(w.player_id, w.stake_transfer_id)
    else:
        raise d.InvalidArgument("spec.credit: set credit_account_id or credit_player_winnings")
    return d.TransferRequest(
        transfer_id=pb.transfer_id,
        debit=debit,
        credit=credit,
        amount=pb.amount,
        pending=pb.pending,
        code=pb.code or "transfer",
        memo=pb.memo,
    )


# --------------------------------------------------------------------------- events


def event_to_pb(event: d.Event) -> Message:
    """The protobuf payload of a domain event."""
    if isinstance(event, d.AccountOpened):
        return events_pb2.AccountOpened(
            account_id=event.account_id,
            kind=ledger_pb2.AccountKind.ValueType(int(event.kind)),
            player_id=event.player_id,
        )
    if isinstance(event, d.TransferPending):
        return events_pb2.TransferPending(
            spec=spec_to_pb(event.request), legs=legs_to_pb(event.legs)
        )
    if isinstance(event, d.TransferPosted):
        return events_pb2.TransferPosted(
            spec=spec_to_pb(event.request),
            legs=legs_to_pb(event.legs),
            was_pending=event.was_pending,
            released_legs=legs_to_pb(event.released_legs),
        )
    return events_pb2.TransferVoided(
        transfer_id=event.transfer_id,
        released_legs=legs_to_pb(event.released_legs),
        reason=event.reason,
    )


def event_from_pb(payload: Message, occurred_at: datetime) -> d.Event:
    """The domain event of a stored payload (one of :data:`EVENT_TYPES`)."""
    at = d.utc(occurred_at)
    if isinstance(payload, events_pb2.AccountOpened):
        return d.AccountOpened(
            payload.account_id, d.AccountKind(payload.kind), payload.player_id, at
        )
    if isinstance(payload, events_pb2.TransferPending):
        return d.TransferPending(spec_from_pb(payload.spec), legs_from_pb(payload.legs), at)
    if isinstance(payload, events_pb2.TransferPosted):
        return d.TransferPosted(
            spec_from_pb(payload.spec),
            legs_from_pb(payload.legs),
            payload.was_pending,
            legs_from_pb(payload.released_legs),
            at,
        )
    if isinstance(payload, events_pb2.TransferVoided):
        return d.TransferVoided(
            payload.transfer_id, legs_from_pb(payload.released_legs), payload.reason, at
        )
    raise TypeError(f"not a wallet event: {type(payload).__name__}")


def stream_of(event: d.Event) -> str:
    """Stream id of an event: ``wallet-account-<id>`` or ``wallet-transfer-<id>``."""
    if isinstance(event, d.AccountOpened):
        return f"wallet-account-{event.account_id}"
    if isinstance(event, d.TransferVoided):
        return f"wallet-transfer-{event.transfer_id}"
    return f"wallet-transfer-{event.request.transfer_id}"


def expected_version(event: d.Event) -> int:
    """The version the event's stream must have: a creation expects a new stream (0), the
    resolution of a pending transfer expects its creation (1). So the event store itself
    refuses a second creation or a second resolution of the same transfer."""
    resolves = isinstance(event, d.TransferVoided) or (
        isinstance(event, d.TransferPosted) and event.was_pending
    )
    return 1 if resolves else 0


# --------------------------------------------------------------------------- the store


def append(
    events: EventStore,
    conn: Connection,
    facts: Sequence[d.Event],
    *,
    correlation_id: str,
    causation_id: str,
) -> None:
    """Append each fact to its stream in ``conn``'s transaction (one by one path)."""
    for event in facts:
        events.append(
            conn,
            stream_of(event),
            expected_version(event),
            [event_to_pb(event)],
            correlation_id=correlation_id,
            causation_id=causation_id,
            occurred_at=event.occurred_at,
        )


def prepare(
    events: EventStore, event: d.Event, *, correlation_id: str, causation_id: str
) -> PreparedAppend:
    """The same append as :func:`append`, encoded ahead for a batch's one insert."""
    return events.prepare(
        stream_of(event),
        expected_version(event),
        [event_to_pb(event)],
        correlation_id=correlation_id,
        causation_id=causation_id,
        occurred_at=event.occurred_at,
    )


def decode(events: EventStore, envelope: Envelope) -> d.Event | None:
    """The domain event of a stored record (upgraded from any older form: module doc);
    None for a record that is not a wallet event."""
    if envelope.event_type not in EVENT_TYPE_NAMES:
        return None
    return event_from_pb(events.decode(envelope), envelope.occurred_at.ToDatetime(tzinfo=UTC))


def read_all(events: EventStore, conn: Connection) -> Iterator[d.Event]:
    """Every wallet event of the store, in global order."""
    for envelope in events.iter_all(conn):
        event = decode(events, envelope)
        if event is not None:
            yield event

"""The wire form of the ledger's facts: domain events and transfer specs ↔ the protobuf
messages of ``electric.wallet.v1`` (``events.proto``, ``ledger.proto``), and the stream each
event is appended to. Used to append (handlers), to fold the log back (store projections)
and to keep a transfer's spec byte-for-byte (store rows). No I/O.

The API's response messages are built in :mod:`.api`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from electric.wallet.v1 import events_pb2, ledger_pb2
from google.protobuf.message import Message

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

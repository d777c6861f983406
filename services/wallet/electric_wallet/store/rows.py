"""Rows of the wallet's tables ↔ the ledger's values (accounts, transfers, statement lines).

A transfer row keeps the client's spec as its protobuf bytes (the idempotency content,
byte-for-byte) and the legs as JSON ``[[debit, credit, amount], …]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from electric.wallet.v1 import ledger_pb2

from .. import codec
from .. import domain as d


def legs_json(legs: Iterable[d.Leg]) -> str:
    return json.dumps([[leg.debit, leg.credit, leg.amount] for leg in legs])


def _legs_from_json(text: str) -> tuple[d.Leg, ...]:
    return tuple(d.Leg(str(a), str(b), int(n)) for a, b, n in json.loads(text))


def account_from_row(row: Any) -> d.Account:
    return d.Account(
        row.account_id,
        d.AccountKind(row.kind),
        row.player_id,
        int(row.posted),
        int(row.reserved),
        int(row.incoming),
    )


def transfer_from_row(row: Any) -> d.Transfer:
    spec = ledger_pb2.TransferSpec()
    spec.ParseFromString(bytes(row.spec))
    return d.Transfer(
        request=codec.spec_from_pb(spec),
        legs=_legs_from_json(row.legs),
        state=d.TransferState(row.state),
        created_at=d.utc(row.created_at),
        posted_legs=_legs_from_json(row.posted_legs),
        resolved_at=d.utc(row.resolved_at) if row.resolved_at is not None else None,
    )


def transfer_row(t: d.Transfer) -> dict[str, Any]:
    return {
        "transfer_id": t.transfer_id,
        "state": int(t.state),
        "spec": codec.spec_to_pb(t.request).SerializeToString(deterministic=True),
        "legs": legs_json(t.legs),
        "posted_legs": legs_json(t.posted_legs),
        "amount": t.amount,
        "posted_amount": t.posted_amount,
        "code": t.request.code,
        "created_at": t.created_at,
        "resolved_at": t.resolved_at,
    }


def entry_row(e: d.Entry) -> dict[str, Any]:
    return {
        "account_id": e.account_id,
        "player_id": e.player_id,
        "account_kind": int(e.account_kind),
        "transfer_id": e.transfer_id,
        "entry_type": e.entry_type,
        "amount": e.amount,
        "posted_after": e.posted_after,
        "available_after": e.available_after,
        "code": e.code,
        "memo": e.memo,
        "occurred_at": e.occurred_at,
    }


def entry_from_row(row: Any) -> d.Entry:
    return d.Entry(
        row.account_id,
        row.player_id,
        d.AccountKind(row.account_kind),
        row.transfer_id,
        int(row.entry_type),
        int(row.amount),
        int(row.posted_after),
        int(row.available_after),
        row.code,
        row.memo,
        d.utc(row.occurred_at),
        int(row.entry_id),
    )

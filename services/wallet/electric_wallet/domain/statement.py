"""The statement: one line per balance change of an account (``StatementEntry`` in
wallet.proto). Pure: the lines of a fact follow from the ledger state just before it, so
the store writes them with each command and a fold of the events rebuilds them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .accounts import Account, AccountKind
from .events import AccountOpened, Event, TransferPending, TransferPosted, TransferVoided, utc
from .ledger import Ledger, copy_account

#: Entry types (values of ``EntryType`` in wallet.proto).
HOLD, RELEASE, DEBIT, CREDIT, INCOMING = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Entry:
    """One statement line (see ``StatementEntry`` in wallet.proto)."""

    account_id: str
    player_id: str
    account_kind: AccountKind
    transfer_id: str
    entry_type: int
    amount: int
    posted_after: int
    available_after: int
    code: str
    memo: str
    occurred_at: datetime
    entry_id: int = 0


def entries_for(event: Event, before: Ledger) -> list[Entry]:
    """The statement lines an event adds, given the ledger state just before it. The
    state is not modified (the caller applies the event afterwards)."""
    if isinstance(event, AccountOpened):
        return []
    if isinstance(event, TransferVoided):
        req = before.transfers[event.transfer_id].request
    else:
        req = event.request
    # Only the accounts of the event's legs get a line: copying just those (not every
    # account of ``before``) keeps a batch's or a rebuild's lines linear in its events.
    legs = event.released_legs if isinstance(event, TransferVoided) else event.legs
    if isinstance(event, TransferPosted):
        legs = (*legs, *event.released_legs)
    shadow: dict[str, Account] = {}
    for leg in legs:
        for aid in (leg.debit, leg.credit):
            if aid not in shadow:
                shadow[aid] = copy_account(before.accounts[aid])
    out: list[Entry] = []

    def line(account_id: str, kind: int, amount: int) -> None:
        a = shadow[account_id]
        out.append(
            Entry(
                a.account_id,
                a.player_id,
                a.kind,
                req.transfer_id,
                kind,
                amount,
                a.posted,
                a.available,
                req.code,
                req.memo,
                utc(event.occurred_at),
            )
        )

    if isinstance(event, TransferPending):
        for leg in event.legs:
            shadow[leg.debit].reserved += leg.amount
            line(leg.debit, HOLD, -leg.amount)
            shadow[leg.credit].incoming += leg.amount
            line(leg.credit, INCOMING, leg.amount)
    elif isinstance(event, TransferPosted):
        for leg in event.legs:
            if event.was_pending:
                shadow[leg.debit].reserved -= leg.amount
                shadow[leg.credit].incoming -= leg.amount
            shadow[leg.debit].posted -= leg.amount
            line(leg.debit, DEBIT, -leg.amount)
            shadow[leg.credit].posted += leg.amount
            line(leg.credit, CREDIT, leg.amount)
        for leg in event.released_legs:
            shadow[leg.debit].reserved -= leg.amount
            line(leg.debit, RELEASE, leg.amount)
            shadow[leg.credit].incoming -= leg.amount
            line(leg.credit, INCOMING, -leg.amount)
    else:
        for leg in event.released_legs:
            shadow[leg.debit].reserved -= leg.amount
            line(leg.debit, RELEASE, leg.amount)
            shadow[leg.credit].incoming -= leg.amount
            line(leg.credit, INCOMING, -leg.amount)
    return out

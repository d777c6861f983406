"""Cancelling a table that has not started (``electric_domain.lobby.cancel``), in one
transaction: TableCancelled recorded once (its projection moves the table row to
``cancelled`` under its lock), the table's pending buy-in ops cancelled, one *unwind* op
owed per active entry (void the reservation, or refund a posted buy-in:
:mod:`.wallet_work`), and a spare open table for the tier if the cancelled one was the
tier's last.

Two callers: the operator's ``CancelTable`` RPC, and :mod:`.wallet_work` when the wallet
refuses a filled table's buy-in post for good (the reservation was voided or is missing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from electric.registration.v1 import events_pb2
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_eventlog import EventStore, utc_now
from sqlalchemy import Connection

from electric_registration import codec, fill, handlers, streams
from electric_registration.store import repo, seating, tiers, wallet_ops

OPERATOR = codec.OPERATOR
BUY_IN_FAILED = codec.BUY_IN_FAILED


@dataclass
class Cancelled:
    """Outcome of a cancel."""

    table_id: str
    #: False when the table was already cancelled (nothing done).
    cancelled_now: bool
    reason: str
    #: Players to notify.
    players: set[str] = field(default_factory=set)


def cancel_table(
    store: EventStore,
    config: TournamentConfig,
    *,
    table_id: str,
    reason: events_pb2.TableCancelReason.ValueType,
    detail: str,
    cancelled_by: str,
    correlation_id: str,
) -> Cancelled:
    """Cancel ``table_id`` exactly once (module doc); ``TableNotFound`` /
    ``TableNotCancellable`` refuse it."""
    now = utc_now()

    def work(conn: Connection) -> Cancelled:
        table = seating.get_table(conn, table_id)
        if table is None:
            raise lobby.TableNotFound(table_id)
        tiers.lock(conn, table.tier_id)  # serialise with seat changes of the tier
        table = seating.get_table(conn, table_id, lock=True)
        assert table is not None
        if not lobby.check_cancellable(table_id, table.status, table.started_at is not None):
            return Cancelled(table_id, False, seating.cancel_reason(conn, table_id))
        tier = tiers.get(conn, table.tier_id)
        assert tier is not None
        entries = seating.active_entries(conn, table_id)
        text = (detail or "").strip()[:200] or (
            "cancelled by an operator" if reason == OPERATOR else "a buy-in could not be posted"
        )
        event = codec.table_cancelled(
            table_id,
            reason=reason,
            detail=text,
            previous_status=table.status,
            entries=[(e.entry_id, e.player_id, e.seat, e.wallet_transfer_id) for e in entries],
            cancelled_by=cancelled_by,
        )
        # The players are read before the projector cancels their entries.
        players = repo.table_players(conn, [table_id])
        [stored] = streams.record_table(
            store,
            conn,
            table_id,
            table.stream_version,
            [event],
            correlation_id=correlation_id,
            at=now,
        )
        wallet_ops.cancel_pending(conn, table_id)
        for op in lobby.cancellation_ops(
            [(e.entry_id, e.wallet_transfer_id, e.player_id) for e in entries],
            buy_in_cents=tier.buy_in_cents,
        ):
            owed = fill.owed_op(
                table_id, op, correlation_id=stored.correlation_id, causation_id=stored.event_id
            )
            wallet_ops.add(conn, owed, now)
        if tiers.active(conn, tier.tier_id) and seating.open_table_count(conn, tier.tier_id) == 0:
            handlers.open_table(conn, store, config, tier, correlation_id=correlation_id, at=now)
        return Cancelled(table_id, True, text, players)

    # Locks the tier, then appends: through the group commit (handlers module doc).
    return store.transact(work)

"""Filling a table: the multiplier draw revealed, the tournament's terms prepared, the
buy-ins' collection owed (part of the seating transaction, see :mod:`.handlers`).

Registration is the only place the Prize Pool Multiplier is drawn
(``electric_domain.tournament.fairness.draw_multiplier`` over the seed committed when the
table opened); TableFilled and TournamentStarted carry it to everyone else.
"""

from __future__ import annotations

from electric_clients import accounts
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.fairness import (
    SEED_BYTES,
    commitment,
    draw_multiplier,
    initial_button_index,
)
from electric_eventlog import EventStore, utc_now
from sqlalchemy import Connection

from electric_registration import codec, streams
from electric_registration.store import projections, projector, seating, wallet_ops
from electric_registration.store import settings as player_settings

#: Wallet account id of each house account the lobby's settlement names.
ACCOUNT_IDS = {
    lobby.Account.NONE: "",
    lobby.Account.ESCROW: accounts.ESCROW,
    lobby.Account.RAKE: accounts.RAKE,
    lobby.Account.PRIZE_RESERVE: accounts.PRIZE_RESERVE,
}


class SeedLost(lobby.LobbyError):
    """The table's stored multiplier seed does not match the commitment published when it
    opened. The seed is secret until the fill and in no event, so a restore from a dump
    taken before the table opened loses it (the rebuild writes ``''``): the multiplier can
    never be drawn and the table can never fill. An operator must cancel it (CancelTable
    gives every buy-in back). ``difference`` is the very line the restore's comparison
    (``projections.rebuild_and_compare``) reports for the table: its ``NEEDS_CANCEL``
    ending (``SEED_LOST``) names the loss, as in docs/chaos.md (backup and restore)."""

    def __init__(self, table_id: str, table_name: str) -> None:
        self.table_id = table_id
        self.difference = f"table {table_id}.{projections.SEED_LOST}"
        super().__init__(
            f"{self.difference} (SEED_LOST): table {table_name!r} cannot fill, its secret "
            "multiplier seed was lost in a restore; it must be cancelled (CancelTable gives "
            "every buy-in back). Nothing was registered"
        )


def _stored_seed(seed_hex: str, committed: str) -> bytes | None:
    """The table's multiplier seed, or None when it is not the one committed to."""
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        return None
    if len(seed) != SEED_BYTES or commitment(seed) != committed:
        return None
    return seed


def owed_op(
    table_id: str, op: lobby.WalletOp, *, correlation_id: str = "", causation_id: str = ""
) -> wallet_ops.OwedOp:
    """A lobby wallet op as the row that owes it (with the causality of the decision: its
    correlation id and the id of the event that owes the op)."""
    return wallet_ops.OwedOp(
        op_id=op.op_id,
        table_id=table_id,
        entry_id=op.entry_id,
        seq=op.seq,
        kind=op.kind.value,
        transfer_id=op.transfer_id,
        from_account=ACCOUNT_IDS[op.source],
        # An unwind gives the buy-in back to a player: the player id stands in the row.
        to_account=op.player_id if op.kind is lobby.OpKind.UNWIND else ACCOUNT_IDS[op.target],
        amount_cents=op.amount_cents,
        code=op.code,
        correlation_id=correlation_id,
        causation_id=causation_id,
    )


# The tournament's levels and prizes as the events carry them (built by the mapper).
levels_for = codec.levels_for
payouts_for = codec.payouts_for


def fill_table(
    conn: Connection,
    store: EventStore,
    config: TournamentConfig,
    table_id: str,
    tier: lobby.Tier,
    *,
    correlation_id: str,
) -> int:
    """The last seat was taken: reveal the seed and the drawn multiplier (TableFilled),
    confirm the entries, prepare TournamentStarted and owe the wallet work that collects the
    buy-ins. TournamentStarted itself is appended once that work is done
    (``handlers.start_if_paid``), so no tournament starts on buy-ins that were not collected.
    ``tier``: the table's tier. Returns the multiplier.

    Raises :class:`SeedLost` (the caller's transaction then stores nothing) when the
    table's seed is not the one committed to."""
    now = utc_now()
    table = seating.get_table(conn, table_id)
    assert table is not None
    entries = seating.active_entries(conn, table_id)
    seed = _stored_seed(table.seed_hex, table.commitment)
    if seed is None:
        raise SeedLost(table_id, table.table_name)
    draw = draw_multiplier(seed, config.pay_table)
    pool, payouts = payouts_for(config, draw.multiplier, tier.buy_in_cents)
    names = player_settings.display_names(conn, [e.player_id for e in entries])
    seats = [
        codec.seat_assignment(e.seat, e.player_id, e.entry_id, names[e.player_id]) for e in entries
    ]
    filled = codec.table_filled(
        table_id,
        seats,
        multiplier=draw.multiplier,
        seed_hex=draw.seed_hex,
        commitment=draw.commitment,
        pool_cents=pool,
        paytable_version=config.version,
    )
    started = codec.tournament_started(
        filled,
        config,
        tier,
        table_name=table.table_name,
        table_size=table.seats,
        payouts=payouts,
        first_button_seat=seats[initial_button_index(seed, len(seats))].seat,
    )
    # The prepared TournamentStarted is in no event until the buy-ins are posted: the
    # projector gets it withheld and keeps it (with its prizes) in the table's row.
    [stored] = streams.record_table(
        store,
        conn,
        table_id,
        table.stream_version,
        [filled],
        correlation_id=correlation_id,
        at=now,
        withheld=projector.Withheld(prepared=started.SerializeToString()),
    )
    for op in lobby.buy_in_settlement(
        [(e.entry_id, e.wallet_transfer_id) for e in entries],
        buy_in_cents=tier.buy_in_cents,
        rake_cents=tier.rake_cents,
    ):
        owed = owed_op(
            table_id, op, correlation_id=stored.correlation_id, causation_id=stored.event_id
        )
        wallet_ops.add(conn, owed, utc_now())
    return draw.multiplier

"""Registration's one projector: the one fold of its own sit-and-go and settings events
into the rows it reads (``registration_tables``, ``registration_entries``,
``registration_player_settings``).

:func:`changes_for` is the fold: what one stored event changes, as data (:class:`Put`,
:class:`Set`, :class:`SetEntries`, :class:`Unknown`). It has two sinks:

* :func:`project` writes the changes with SQL, live, in the append's transaction
  (``streams.record``: the mapper appends, then this writes). The handlers write none of
  these rows themselves;
* :class:`.projections.Fold` applies the same changes to rows in memory, to rebuild the
  tables after a restore and to compare them with the log.

Two inputs are in no event, so the live path passes them as :class:`Withheld`:

* the multiplier seed of a table that opens (secret until TableFilled reveals it; only its
  SHA-256 is in TableOpened), and
* the TournamentStarted prepared at the fill (appended only once the buy-ins are posted;
  it also gives ``positions_paid`` and ``payouts_json``).

Without them (a rebuild) the fold marks those columns :class:`Unknown`: a rebuild keeps
them from the existing row, a comparison does not compare them (``projections``: the
``NEEDS_CANCEL`` checks report a lost one).

Columns fed by the table service's events (hand number, turn, ``finished``) are written by
:mod:`..consumers`, not here (they are not in registration's log); a cancel clears the turn
as it always did. The casino rows are not projected live yet (docs/registration.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as ev
from electric_domain.lobby import default_display_name
from electric_domain.lobby.profile import SWITCHES
from google.protobuf.message import Message
from sqlalchemy import Connection, Table, case, insert, update

from electric_registration.store import tables as t

Row = dict[str, Any]

#: Where each table's rows live and their key column.
TABLES: dict[str, tuple[Table, str]] = {
    "tables": (t.tables, "table_id"),
    "entries": (t.entries, "entry_id"),
    "settings": (t.player_settings, "player_id"),
}
#: The columns the prepared TournamentStarted gives (:class:`Withheld`).
PREPARED = ("tournament_started", "positions_paid", "payouts_json")
#: What a never-filled table has in the columns the fill sets.
UNFILLED: Row = {
    "multiplier": 0,
    "prize_pool_cents": 0,
    "positions_paid": 0,
    "payouts_json": "[]",
    "tournament_started": None,
    "filled_at": None,
    "started_at": None,
    "cancelled_at": None,
    "cancel_reason": "",
}


@dataclass(frozen=True)
class Withheld:
    """What the live path knows beyond the event (module doc)."""

    #: TableOpened: the secret seed, hex.
    seed_hex: str | None = None
    #: TableFilled: the serialized TournamentStarted prepared at the fill.
    prepared: bytes | None = None


@dataclass(frozen=True)
class Put:
    """Insert a row."""

    table: str
    row: Row


@dataclass(frozen=True)
class Set:
    """Update the row ``key`` of ``table``."""

    table: str
    key: str
    values: Row


@dataclass(frozen=True)
class SetEntries:
    """Move the table's entries in one of ``statuses`` to ``status``."""

    table_id: str
    statuses: tuple[str, ...]
    status: str


@dataclass(frozen=True)
class RunningIfFilled:
    """A status value: ``running`` if the row is ``filled``, else its status unchanged
    (TournamentStarted; the table service may already have reported the table running or
    finished). Part of the same update, so a start stays one statement."""


RUNNING_IF_FILLED = RunningIfFilled()


@dataclass(frozen=True)
class Unknown:
    """The events do not say these columns of a table (module doc): nothing is written."""

    table_id: str
    columns: tuple[str, ...]


Change = Put | Set | SetEntries | Unknown


def _at(envelope: Envelope) -> datetime:
    return envelope.occurred_at.ToDatetime(tzinfo=UTC)


def prepared_columns(started: bytes) -> Row:
    """The columns a prepared (or appended) TournamentStarted gives a table."""
    e = ev.TournamentStarted.FromString(started)
    return {
        "tournament_started": started,
        "positions_paid": len(e.payouts),
        "payouts_json": json.dumps([[p.share_bps, p.amount.cents] for p in e.payouts]),
    }


def changes_for(envelope: Envelope, event: Message, withheld: Withheld | None) -> list[Change]:
    """What ``event`` (stored as ``envelope``) changes in the rows; [] for an event whose
    rows this projector does not write (the casino's). ``withheld``: module doc."""
    at, version = _at(envelope), envelope.stream_version
    w = withheld or Withheld()
    if isinstance(event, ev.PlayerSettingsChanged):
        return [_settings(event, at)]
    if isinstance(event, ev.TableOpened):
        row: Row = {
            "table_id": event.table_id,
            "tier_id": event.tier_id,
            "table_name": event.table_name,
            "status": "registering",
            "seats": event.seats,
            "players_registered": 0,
            "multiplier_seed": w.seed_hex or "",
            "multiplier_seed_commitment": event.multiplier_seed_commitment,
            "paytable_version": event.paytable_version,
            "stream_version": version,
            "opened_at": at,
            **UNFILLED,
        }
        unknown = [Unknown(event.table_id, ("multiplier_seed",))] if w.seed_hex is None else []
        return [Put("tables", row), *unknown]
    if isinstance(event, ev.PlayerRegistered):
        entry = {
            "entry_id": event.entry_id,
            "player_id": event.player_id,
            "table_id": event.table_id,
            "seat": event.seat,
            "status": "reserved",
            "wallet_transfer_id": event.wallet_transfer_id,
            "request_id": event.request_id,
            "registered_at": at,
        }
        players = {"players_registered": event.players_registered, "stream_version": version}
        return [Put("entries", entry), Set("tables", event.table_id, players)]
    if isinstance(event, ev.PlayerUnregistered):
        players = {"players_registered": event.players_registered, "stream_version": version}
        return [
            Set("entries", event.entry_id, {"status": "unregistered"}),
            Set("tables", event.table_id, players),
        ]
    if isinstance(event, ev.TableFilled):
        filled: Row = {
            "status": "filled",
            "multiplier": event.multiplier,
            "prize_pool_cents": event.prize_pool.cents,
            "multiplier_seed": event.multiplier_seed,
            "stream_version": version,
            "filled_at": at,
        }
        if w.prepared is not None:
            filled |= prepared_columns(w.prepared)
        return [
            Set("tables", event.table_id, filled),
            *([Unknown(event.table_id, PREPARED)] if w.prepared is None else []),
            SetEntries(event.table_id, ("reserved",), "confirmed"),
        ]
    if isinstance(event, ev.TournamentStarted):
        started = {
            "status": RUNNING_IF_FILLED,
            "stream_version": version,
            "started_at": at,
            **prepared_columns(event.SerializeToString()),
        }
        return [Set("tables", event.table_id, started)]
    if isinstance(event, ev.TableCancelled):
        cancelled = {
            "status": "cancelled",
            "cancel_reason": event.detail[:500],
            "cancelled_at": at,
            "ended_at": at,
            "stream_version": version,
            "turn_seat": 0,
            "turn_deadline": None,
        }
        return [
            Set("tables", event.table_id, cancelled),
            SetEntries(event.table_id, ("reserved", "confirmed"), "cancelled"),
        ]
    return []


def _settings(e: ev.PlayerSettingsChanged, at: datetime) -> Change:
    """PlayerSettingsChanged carries the whole state; a shown name equal to the default is
    stored as ``''`` (as ``lobby.apply_update`` keeps it)."""
    name = "" if e.display_name == default_display_name(e.player_id) else e.display_name
    values: Row = {
        "display_name": name,
        **{k: int(getattr(e, k)) for k in SWITCHES},
        "version": e.version,
        "updated_at": at,
    }
    if e.version == 1:
        return Put("settings", {"player_id": e.player_id, **values})
    return Set("settings", e.player_id, values)


def project(
    conn: Connection,
    stored: Sequence[Envelope],
    events: Sequence[Message],
    withheld: Withheld | None = None,
) -> None:
    """Write the rows of ``events`` just appended as ``stored`` (the live sink: one
    statement per change, in ``conn``'s transaction)."""
    for envelope, event in zip(stored, events, strict=True):
        for change in changes_for(envelope, event, withheld):
            _write(conn, change)


def _write(conn: Connection, change: Change) -> None:
    if isinstance(change, Put):
        conn.execute(insert(TABLES[change.table][0]).values(**change.row))
    elif isinstance(change, Set):
        table, key = TABLES[change.table]
        values = {
            k: case((table.c.status == "filled", "running"), else_=table.c.status)
            if isinstance(v, RunningIfFilled)
            else v
            for k, v in change.values.items()
        }
        conn.execute(update(table).where(table.c[key] == change.key).values(**values))
    elif isinstance(change, SetEntries):
        e = t.entries.c
        conn.execute(
            update(t.entries)
            .where(e.table_id == change.table_id, e.status.in_(change.statuses))
            .values(status=change.status)
        )
    # Unknown: nothing to write (module doc).

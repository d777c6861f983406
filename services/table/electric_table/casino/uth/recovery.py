"""The UTH auto-void rule for a round that cannot be replayed (a crash left its stream or
its withheld deck seed inconsistent): it cannot complete consistently, so it is voided
automatically from its rows — every reservation still standing is refunded once
(``CasinoRoundVoided``, ``voided_by = auto``, one ``refund`` result per reservation, no
domain record since the domain state is unknown), the round row becomes ``voided`` and its
players are owed the result (AckResult). The table then goes on with a new round.

A live table whose round in memory may differ from its stream (``broken``: a change neither
stored nor reloaded) is repaired by its driver: the round re-read, or voided as above when it
cannot be replayed (:func:`repair`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from electric.table.v1 import casino_events_pb2 as cev
from electric_eventlog import EventStore
from electric_eventlog.fencing import Fence, FencedError
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from electric_table.casino import repo
from electric_table.casino.uth import records as uth_records
from electric_table.journal import append_round
from electric_table.refusals import TableMoved

if TYPE_CHECKING:
    from electric_table.casino.uth.live import LiveTable
    from electric_table.casino.uth.tables import UthTables

log = logging.getLogger(__name__)

#: Why a table is broken when its unreplayable round could not be voided either.
NOT_VOIDED = "round cannot be replayed nor voided"

#: Reason of a UTH round voided because it could not be replayed.
UNREPLAYABLE_REASON = "auto-void: the round could not be replayed consistently after a restart"


def void_unreplayable(
    engine: Engine, store: EventStore, round_id: str, fence: Fence | None = None
) -> list[str]:
    """Void the open round ``round_id`` from its rows (module doc); returns the bet ids whose
    reservations are now owed a void (empty if the round was not open). With ``fence`` (the
    table's, ``partitions`` ownership) only while still its owner (else ``FencedError``)."""
    with engine.begin() as conn:
        if fence is not None:
            fence.check(conn)
        row = repo.get_round(conn, round_id)
        if row is None or row.status != repo.OPEN:
            return []
        bets = repo.bets(conn, round_id)
        standing = [b for b in bets if b.owed_op in ("", repo.INTENT)]
        players: dict[str, list[cev.CasinoBetResult]] = {}
        for b in standing:
            players.setdefault(b.player_id, []).append(
                cev.CasinoBetResult(
                    bet_id=b.bet_id,
                    spot=b.spot,
                    stake_cents=b.amount_cents,
                    outcome="refund",
                    returned_cents=b.amount_cents,
                )
            )
        msg = cev.CasinoRoundVoided(
            round_id=round_id,
            table_id=row.table_id,
            game=uth_records.GAME,
            reason=UNREPLAYABLE_REASON,
            players=[cev.CasinoPlayerResult(player_id=p, results=r) for p, r in players.items()],
            voided_by="auto",
        )
        # The round row becomes voided and its players are owed the result: the journal's
        # projector writes both from the CasinoRoundVoided.
        append_round(store, conn, round_id, row.stream_version, [msg])
        repo.owe(conn, {b.bet_id: repo.VOID for b in bets})
    return [b.bet_id for b in standing]


async def repair(tables: UthTables, t: LiveTable) -> bool:
    """Make the broken ``t`` whole again from the store (its driver, under the table's lock):
    its round re-read, or voided from its rows when it cannot be replayed. True when it is
    whole; False while the void fails (still broken); a database still away raises (the
    driver logs it and tries again); ``TableMoved`` when the table is another instance's."""
    try:
        await tables._reload(t)
    except SQLAlchemyError:
        raise
    except Exception as exc:  # the open round's stream cannot be replayed
        why = str(exc) or type(exc).__name__
        if t.unreplayable != why:
            log.error("uth.round_unreplayable", extra={"table_id": t.table_id, "error": why})
        t.unreplayable = why
        if not await auto_void(tables, t):
            return False
    t.broken = t.unreplayable = ""
    log.warning("uth.table_repaired", extra={"table_id": t.table_id, "version": t.version})
    t.notify()
    return True


async def auto_void(tables: UthTables, t: LiveTable) -> bool:
    """``t``'s open round cannot be replayed: void it from its rows (:func:`void_unreplayable`)
    and re-read the table. False when that fails (``t`` stays or becomes broken; its driver
    tries again); ``TableMoved`` when its fence was taken (the table is dropped here)."""
    try:
        row = await asyncio.to_thread(_latest_round, tables.engine, t.table_id)
        if row is not None and row.status == repo.OPEN:
            rid, fence = row.round_id, t.fence
            await asyncio.to_thread(void_unreplayable, tables.engine, tables.store, rid, fence)
            tables.base.metrics.voided.labels(uth_records.GAME).inc()
            await tables.base.run_owed(row.round_id)
        await tables._reload(t)
    except FencedError as exc:
        tables.moved(t)
        raise TableMoved(f"UTH table {t.table_id} moved to another instance; retry") from exc
    except Exception as exc:
        why = f"{NOT_VOIDED}: {exc}"
        if not t.broken.startswith(NOT_VOIDED):  # (the driver's tries again: said once)
            log.error("uth.auto_void_failed", extra={"table_id": t.table_id, "error": why})
        tables._broke(t, why)
        return False
    return True


def _latest_round(engine: Engine, table_id: str) -> repo.RoundRow | None:
    with engine.connect() as conn:
        return repo.latest_round(conn, table_id)

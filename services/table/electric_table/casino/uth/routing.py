"""CasinoTableService calls of a UTH table reach its owner (``partitions`` ownership).

As for TableService (the one router, ``electric_table.host.routing``, with this game's
:class:`UthDirectory`): the instance that receives a call for a
UTH table it does not host forwards it to the owner named by the table's fence row
(resource ``casino-table-<id>``, taken under the owner's advertised address) and relays the
answer. Forwarded: PlaceBets, GetCasinoTable, WatchCasinoTable (by table id) and, for UTH
rounds, Decide, AckResult and VoidRound (round id → table through the round row). Served
locally: every THB call (THB rounds need no owner), GetRound and ListUnfinishedRounds (they
read the database), and a call for an unknown table or round (NOT_FOUND here as there).
Statuses as for tables: owner unreachable or table moving → UNAVAILABLE, retry; a
forwarded call never hops twice; a forwarded WatchCasinoTable ends UNAVAILABLE when the
owner drops the table, and the client reconnects.
"""

from __future__ import annotations

from typing import Any

from electric.table.v1 import casino_pb2
from electric_eventlog import fencing
from sqlalchemy import Engine

from electric_table.casino import repo
from electric_table.casino.uth.api import is_uth_round
from electric_table.casino.uth.ownership import UthOwnership, uth_resource
from electric_table.casino.uth.tables import UTH_TABLE, UthTables
from electric_table.host.forwarding import Route, by_field
from electric_table.host.routing import Router


class UthDirectory:
    """Where a live UTH table is served (module doc)."""

    def __init__(self, uth_ownership: UthOwnership, uth: UthTables, engine: Engine) -> None:
        self.uth_ownership = uth_ownership
        self.uth = uth
        self.engine = engine

    def serves(self, table_id: str) -> bool:
        # Not a UTH table name: served here (the local answer is INVALID_ARGUMENT).
        return not UTH_TABLE.match(table_id) or self.uth_ownership.owns(table_id)

    def owner_row(self, table_id: str) -> tuple[str | None, bool]:
        with self.engine.connect() as conn:
            held = fencing.current(conn, uth_resource(table_id))
        exists = held is not None or self.uth._known(table_id)
        return (None if held is None else held[1]), exists

    def settled(self, table_id: str) -> bool:
        return False  # a live UTH table never finishes: only its owner serves it

    def table_of(self, round_id: str) -> str | None:
        """The UTH table of ``round_id`` (None: not a known UTH round, served here)."""
        if not is_uth_round(round_id):
            return None
        with self.engine.connect() as conn:
            row = repo.get_round(conn, round_id)
        return None if row is None else row.table_id


def casino_routes(router: Router, directory: UthDirectory) -> dict[str, Route]:
    """The forwarding routes of CasinoTableService over ``router``: the calls of a UTH
    table by its id, a UTH round's by the table of its round row (``directory``); a watch,
    and every call right after a table opens, waits for a table that is being started."""
    service = "/" + casino_pb2.DESCRIPTOR.services_by_name["CasinoTableService"].full_name
    by_table = by_field("table_id")

    def by_round(request: Any) -> str | None:
        return directory.table_of(str(request.round_id))

    routes = {
        f"{service}/{m}": Route(router, by_table, wait=True)
        for m in ("PlaceBets", "GetCasinoTable", "WatchCasinoTable")
    }
    for m in ("Decide", "AckResult", "VoidRound"):
        routes[f"{service}/{m}"] = Route(router, by_round, wait=True, blocking=True)
    return routes


__all__ = ["UthDirectory", "casino_routes"]

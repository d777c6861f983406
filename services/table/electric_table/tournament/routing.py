"""The tournament tables' :class:`~electric_table.host.routing.Directory` and the forwarding
routes of TableService (docs/scaling.md §3 "Routing"): a table's owner is named by the fence
row of its stream, it exists when its read-model row does, and it is settled once finished
or invalid. Every TableService method names one table (``table_id``)."""

from __future__ import annotations

from electric.table.v1 import table_pb2
from electric_eventlog import fencing
from sqlalchemy import Engine

from electric_table.host.forwarding import Route, by_field
from electric_table.host.routing import Router
from electric_table.journal import table_stream
from electric_table.store import repo
from electric_table.tournament.ownership import TournamentOwnership


class TournamentDirectory:
    """Where a tournament table is served (module doc)."""

    def __init__(self, ownership: TournamentOwnership, engine: Engine) -> None:
        self.ownership = ownership
        self.engine = engine

    def serves(self, table_id: str) -> bool:
        return self.ownership.serves(table_id)

    def owner_row(self, table_id: str) -> tuple[str | None, bool]:
        with self.engine.connect() as conn:
            held = fencing.current(conn, table_stream(table_id))
            exists = held is not None or repo.get_table(conn, table_id) is not None
        return (None if held is None else held[1]), exists

    def settled(self, table_id: str) -> bool:
        with self.engine.connect() as conn:
            row = repo.get_table(conn, table_id)
        live = (repo.TableStatus.STARTING, repo.TableStatus.RUNNING)
        return row is not None and row.status not in live


def table_routes(router: Router) -> dict[str, Route]:
    """The forwarding routes of TableService over ``router``: every method names one table
    (``table_id``), so every call is answered by that table's owner. A watch waits for a
    table that is being started (WatchTable right after the table filled)."""
    service = table_pb2.DESCRIPTOR.services_by_name["TableService"]
    by_table = by_field("table_id")
    return {
        f"/{service.full_name}/{m.name}": Route(router, by_table, wait=m.server_streaming)
        for m in service.methods
    }

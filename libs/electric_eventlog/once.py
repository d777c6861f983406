"""Writing a row once: the projections and records a handler writes when an event or a
command may arrive again (a redelivered message, a retried call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Table, insert, select


def insert_once(
    conn: Connection, table: Table, key: Mapping[str, Any], values: Mapping[str, Any]
) -> bool:
    """Insert the row ``key`` + ``values`` into ``table`` unless a row with ``key`` (column
    name → value) is there already; True when it was inserted. A read then an insert in the
    caller's transaction: the first write of the key wins, later ones change nothing (the
    table's unique key on ``key`` is the backstop for two writers racing)."""
    columns = table.c
    match = [columns[name] == value for name, value in key.items()]
    if conn.execute(select(columns[next(iter(key))]).where(*match)).first() is not None:
        return False
    conn.execute(insert(table).values({**key, **values}))
    return True

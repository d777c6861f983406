"""The casino migrations (payout_0004, registration_0004) create exactly the tables declared
in each service's ``store/tables.py``, and go down and up again (SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from electric_eventlog import create_engine, migrate, upgrade
from electric_eventlog.migrate import downgrade
from electric_payout.store import tables as payout_tables
from electric_registration.store import tables as registration_tables
from sqlalchemy import MetaData, inspect

CASES = [
    (
        "payout",
        payout_tables.VERSIONS_DIR,
        payout_tables.metadata,
        "payout_0003",
        {"payout_casino_wins", "payout_casino_rounds"},
    ),
    (
        "registration",
        registration_tables.VERSIONS_DIR,
        registration_tables.metadata,
        "registration_0003",
        {"registration_casino_tables", "registration_casino_sessions"},
    ),
]


@pytest.mark.parametrize(("service", "versions", "metadata", "previous", "mine"), CASES)
def test_casino_migrations_match_tables(
    tmp_path: Path, service: str, versions: Path, metadata: MetaData, previous: str, mine: set[str]
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    migrate(engine)
    vt = f"alembic_version_{service}"
    upgrade(engine, versions_dir=versions, version_table=vt, target_metadata=metadata)
    with engine.connect() as conn:
        diffs = [
            d
            for d in compare_metadata(MigrationContext.configure(conn), metadata)
            if any(name in repr(d) for name in mine)
        ]
        assert diffs == []
        assert mine <= set(inspect(conn).get_table_names())
    downgrade(engine, versions_dir=versions, version_table=vt, revision=previous)
    with engine.connect() as conn:
        assert not mine & set(inspect(conn).get_table_names())
    upgrade(engine, versions_dir=versions, version_table=vt, target_metadata=metadata)
    with engine.connect() as conn:
        assert mine <= set(inspect(conn).get_table_names())
    engine.dispose()

"""Run Alembic migrations programmatically: the event log's own, and any service's.

Each component has its own version table, so histories never mix:

    migrate(engine)                                   # eventlog tables
    upgrade(engine, versions_dir=WALLET_VERSIONS,     # the wallet's own tables
            version_table="alembic_version_wallet")

A service's ``versions_dir`` holds plain Alembic revision files (``revision``,
``down_revision``, ``upgrade()``); this package's ``env.py`` runs them, so services need no
``alembic.ini`` or ``env.py`` of their own.

Concurrent starts: on PostgreSQL every upgrade and downgrade first takes the transaction-level
advisory lock :data:`MIGRATION_LOCK_KEY` (``pg_advisory_xact_lock``), held until its
transaction commits. Several instances starting at once on a fresh database therefore run
the migrations one after the other: the first creates the tables and its version row, the
others then find the version table at head and do nothing (no ``DuplicateTable`` or
``UniqueViolation``). One key for every component, because they share tables (every service
runs the event log's migrations on its database). SQLite needs no lock: a write transaction
excludes every other writer of the file.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, MetaData, text

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
EVENTLOG_VERSIONS_DIR = MIGRATIONS_DIR / "versions"
EVENTLOG_VERSION_TABLE = "alembic_version_eventlog"
#: The PostgreSQL advisory lock key every migration run holds (the first 8 bytes of
#: SHA-256("electric.migrations") as a signed 64-bit integer; any fixed value works, it only
#: has to be the same in every process and differ from other advisory locks).
MIGRATION_LOCK_KEY = 0x3C11C69B5E6578D1


def lock_migrations(conn: Connection) -> None:
    """Wait for and take the migration lock inside ``conn``'s transaction (PostgreSQL; a no-op
    elsewhere). Released when that transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})


def _config(versions_dir: Path, version_table: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("version_locations", str(versions_dir))
    config.set_main_option("path_separator", "os")
    config.attributes["version_table"] = version_table
    return config


def upgrade(
    engine: Engine,
    *,
    versions_dir: Path | str,
    version_table: str,
    revision: str = "heads",
    target_metadata: MetaData | None = None,
) -> None:
    """Upgrade the revisions in ``versions_dir`` to ``revision``, tracked in ``version_table``.

    Runs in one transaction (on PostgreSQL the DDL is transactional: all or nothing), under
    the migration lock (:func:`lock_migrations`), so concurrent callers migrate once.
    """
    config = _config(Path(versions_dir), version_table)
    config.attributes["target_metadata"] = target_metadata
    with engine.begin() as conn:
        lock_migrations(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(
    engine: Engine, *, versions_dir: Path | str, version_table: str, revision: str
) -> None:
    """Downgrade the revisions in ``versions_dir`` to ``revision`` (e.g. ``"base"``)."""
    config = _config(Path(versions_dir), version_table)
    with engine.begin() as conn:
        lock_migrations(conn)
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


def migrate(engine: Engine, revision: str = "heads") -> None:
    """Create or upgrade the event log's tables (idempotent; safe on every start)."""
    upgrade(
        engine,
        versions_dir=EVENTLOG_VERSIONS_DIR,
        version_table=EVENTLOG_VERSION_TABLE,
        revision=revision,
    )

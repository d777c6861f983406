"""Run Alembic migrations programmatically: the event log's own, and any service's.

Each component has its own version table, so histories never mix:

    migrate(engine)                                   # eventlog tables
    upgrade(engine, versions_dir=WALLET_VERSIONS,     # the wallet's own tables
            version_table="alembic_version_wallet")

A service's ``versions_dir`` holds plain Alembic revision files (``revision``,
``down_revision``, ``upgrade()``); this package's ``env.py`` runs them, so services need no
``alembic.ini`` or ``env.py`` of their own.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, MetaData

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
EVENTLOG_VERSIONS_DIR = MIGRATIONS_DIR / "versions"
EVENTLOG_VERSION_TABLE = "alembic_version_eventlog"


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

    Runs in one transaction (on PostgreSQL the DDL is transactional: all or nothing).
    """
    config = _config(Path(versions_dir), version_table)
    config.attributes["target_metadata"] = target_metadata
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(
    engine: Engine, *, versions_dir: Path | str, version_table: str, revision: str
) -> None:
    """Downgrade the revisions in ``versions_dir`` to ``revision`` (e.g. ``"base"``)."""
    config = _config(Path(versions_dir), version_table)
    with engine.begin() as conn:
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

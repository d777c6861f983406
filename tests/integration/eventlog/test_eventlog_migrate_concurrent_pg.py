"""Migrations safe to run concurrently (issue 17 item 4): several instances starting at once
on a fresh PostgreSQL database migrate it exactly once, under the advisory lock of
``electric_eventlog.migrate``.

Each "instance" is a Python process doing what ``open_event_path`` does at start-up (the
event log's migrations, then the service's own), all released at the same instant. (Threads
do not reproduce the race: Alembic's environment is process-global.)"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from electric_eventlog import EventStore, create_engine, migrate, upgrade
from electric_eventlog.migrate import EVENTLOG_VERSION_TABLE, MIGRATION_LOCK_KEY
from electric_eventlog.model import NO_STREAM
from electric_eventlog.schema import metadata as eventlog_metadata
from electric_eventlog.testing import event
from electric_table.store.tables import VERSIONS_DIR as TABLE_VERSIONS
from electric_table.store.tables import metadata as table_metadata
from electric_wallet.store.tables import VERSIONS_DIR as WALLET_VERSIONS
from sqlalchemy import inspect, text

pytestmark = pytest.mark.integration

INSTANCES = 4

#: One instance: import and connect, report ready, wait for "go" on stdin, then migrate like
#: open_event_path. (Without the lock this fails in 3 of 4 processes with UniqueViolation on
#: alembic_version_eventlog: checked by replacing lock_migrations with a no-op.)
INSTANCE_SCRIPT = """
import sys
from electric_eventlog import create_engine, migrate, upgrade
import alembic.command
url, versions, version_table = sys.argv[1:4]
engine = create_engine(url)
engine.connect().close()
print("ready", flush=True)
sys.stdin.readline()
migrate(engine)
upgrade(engine, versions_dir=versions, version_table=version_table)
engine.dispose()
"""


def _start_instance(url: str, versions: Path, version_table: str) -> None:
    engine = create_engine(url)
    try:
        migrate(engine)
        upgrade(engine, versions_dir=versions, version_table=version_table)
    finally:
        engine.dispose()


def test_instances_starting_together_migrate_a_fresh_database_once(fresh_pg_url: str) -> None:
    services = [
        (TABLE_VERSIONS, "alembic_version_table"),
        (WALLET_VERSIONS, "alembic_version_wallet"),
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INSTANCE_SCRIPT, fresh_pg_url, str(versions), table],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for versions, table in (services[i % len(services)] for i in range(INSTANCES))
    ]
    try:
        for proc in procs:  # a barrier: every process imported and connected
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:  # released together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    failed = [out for proc, out in zip(procs, outputs, strict=True) if proc.returncode != 0]
    assert failed == [], failed[0][-2000:]

    engine = create_engine(fresh_pg_url)
    try:
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
            versions = {
                table: conn.execute(text(f"SELECT version_num FROM {table}")).scalars().all()
                for table in (
                    EVENTLOG_VERSION_TABLE,
                    "alembic_version_table",
                    "alembic_version_wallet",
                )
            }
            head = conn.execute(text("SELECT count(*) FROM eventlog_head")).scalar()
        assert set(eventlog_metadata.tables) <= names
        assert set(table_metadata.tables) <= names
        # One version row per history (exactly-once migration), the head row once.
        assert all(len(rows) == 1 for rows in versions.values()), versions
        assert head == 1
        stored = EventStore(engine, producer="migr").append_in_new_tx(
            "m-1", NO_STREAM, [event("x")]
        )
        assert stored[0].global_position == 1
    finally:
        engine.dispose()


def test_a_migration_waits_for_the_lock_holder(fresh_pg_url: str) -> None:
    """The lock is really taken: while another session holds it, migrate() does not run."""
    holder = create_engine(fresh_pg_url)
    done = threading.Event()
    failure: list[BaseException] = []

    def migrate_now() -> None:
        try:
            _start_instance(fresh_pg_url, TABLE_VERSIONS, "alembic_version_table")
        except BaseException as exc:
            failure.append(exc)
        finally:
            done.set()

    try:
        with holder.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            thread = threading.Thread(target=migrate_now)
            thread.start()
            time.sleep(1.5)
            assert not done.is_set(), "migrate() ran while another session held the lock"
            tables = set(inspect(conn).get_table_names())
            assert EVENTLOG_VERSION_TABLE not in tables
        # Lock released at commit: the waiting migration now completes.
        assert done.wait(60)
        thread.join(10)
        assert failure == []
        with holder.connect() as conn:
            assert EVENTLOG_VERSION_TABLE in set(inspect(conn).get_table_names())
    finally:
        holder.dispose()

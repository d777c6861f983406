"""Group commit on PostgreSQL only: the batch connection is kept between batches instead of
pre-pinging one per batch, so a connection that died while idle (a restarted server, an
administrator's kill) must cost nothing but a reconnect."""

from __future__ import annotations

import psycopg
import pytest
from electric_eventlog import EventStore, create_engine, migrate
from electric_eventlog.model import NO_STREAM
from electric_eventlog.testing import event
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.integration


def test_a_killed_batch_connection_is_replaced_without_an_error(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url)
    try:
        migrate(engine)
        store = EventStore(engine, producer="groupsvc")
        store.append_in_new_tx("kill-1", NO_STREAM, [event("a")])
        pid = store.transact(lambda conn: conn.exec_driver_sql("SELECT pg_backend_pid()").scalar())
        dsn = make_url(fresh_pg_url).set(drivername="postgresql")
        with psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        stored = store.append_in_new_tx("kill-2", NO_STREAM, [event("b")])
        assert stored[0].global_position == 2
        again = store.transact(
            lambda conn: conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        )
        assert again != pid
    finally:
        engine.dispose()

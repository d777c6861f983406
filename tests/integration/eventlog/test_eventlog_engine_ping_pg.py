"""The PostgreSQL engine pings a pooled connection at checkout only after it sat idle
(``electric_eventlog.engine``): a connection killed while idle is replaced before the caller
sees it; one used moments ago is handed out without the extra round trip."""

from __future__ import annotations

import time

import psycopg
from electric_eventlog import create_engine
from sqlalchemy import Engine
from sqlalchemy.engine import make_url


def _kill(url: str, pid: int) -> None:
    dsn = make_url(url).set(drivername="postgresql")
    with psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def _pid(engine: Engine) -> int:
    with engine.connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    assert isinstance(pid, int)
    return pid


def _counting_pings(engine: Engine) -> list[object]:
    """The connections the engine pings from now on."""
    pings: list[object] = []
    original = engine.dialect.do_ping

    def counting_ping(dbapi_connection: object) -> bool:
        pings.append(dbapi_connection)
        return original(dbapi_connection)

    engine.dialect.do_ping = counting_ping  # type: ignore[method-assign]
    return pings


def test_a_connection_killed_while_idle_is_replaced_at_checkout(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url, ping_after_idle=0.05, pool_size=1, max_overflow=0)
    try:
        pid = _pid(engine)
        _kill(fresh_pg_url, pid)
        time.sleep(0.1)
        assert _pid(engine) != pid  # pinged, found dead, replaced: no error reached us
    finally:
        engine.dispose()


def test_a_connection_used_moments_ago_is_not_pinged(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url, ping_after_idle=60.0, pool_size=1, max_overflow=0)
    pings = _counting_pings(engine)
    try:
        first = _pid(engine)
        for _ in range(5):
            assert _pid(engine) == first
        assert pings == []
    finally:
        engine.dispose()


def test_an_idle_connection_is_pinged_once_per_idle_spell(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url, ping_after_idle=0.05, pool_size=1, max_overflow=0)
    pings = _counting_pings(engine)
    try:
        _pid(engine)
        time.sleep(0.1)
        _pid(engine)
        _pid(engine)
        assert len(pings) == 1
    finally:
        engine.dispose()

"""Real PostgreSQL round trip through SQLAlchemy 2 + psycopg 3 (no fakes)."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from tests.support.infra import fresh_database

pytestmark = pytest.mark.integration


def test_postgres_table_insert_select(fresh_pg_url: str) -> None:
    assert make_url(fresh_pg_url).drivername == "postgresql+psycopg"
    engine = sa.create_engine(fresh_pg_url)
    metadata = sa.MetaData()
    wallets = sa.Table(
        "wallets",
        metadata,
        sa.Column("player_id", sa.Text, primary_key=True),
        sa.Column("balance_cents", sa.BigInteger, nullable=False),
    )
    try:
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(
                wallets.insert(),
                [
                    {"player_id": "alice", "balance_cents": 12_345},
                    {"player_id": "bob", "balance_cents": 9_007_199_254_740_993},
                ],
            )
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(wallets.c.player_id, wallets.c.balance_cents).order_by(
                    wallets.c.player_id
                )
            ).all()
            version = conn.execute(sa.text("show server_version_num")).scalar_one()
    finally:
        engine.dispose()
    # Integers beyond 2**53 survive exactly: no float anywhere on the money path.
    assert [tuple(r) for r in rows] == [("alice", 12_345), ("bob", 9_007_199_254_740_993)]
    assert int(version) >= 150000


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_fresh_databases_are_isolated_and_dropped(postgres_url: str) -> None:
    with fresh_database(postgres_url) as first, fresh_database(postgres_url) as second:
        first_name = make_url(first).database
        assert first_name and first_name != make_url(second).database
        # Left open on purpose: the DROP at teardown must not wait for it (WITH (FORCE)).
        lingering = psycopg.connect(_libpq(first))
        lingering.execute("create table t (x int)")
        lingering.commit()
        with psycopg.connect(_libpq(second)) as other:
            tables = other.execute(
                "select count(*) from pg_tables where schemaname = 'public'"
            ).fetchone()
        assert tables == (0,)
    with psycopg.connect(_libpq(postgres_url)) as conn:
        left = conn.execute(
            "select count(*) from pg_database where datname = %s", (first_name,)
        ).fetchone()
    assert left == (0,)
    with pytest.raises(psycopg.OperationalError):
        lingering.execute("select 1")
    lingering.close()

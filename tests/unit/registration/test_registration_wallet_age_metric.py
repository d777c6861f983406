"""The wallet-work age gauge behind the WalletWorkPendingTooLong alert (issue 11, Security 3):
how long the oldest owed wallet call has waited, 0 when nothing is owed; done and cancelled
ops do not count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from electric_registration.metrics import RegistrationMetrics
from electric_registration.store import tables as t
from electric_registration.store import wallet_ops
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, update

AGE = "electric_registration_wallet_ops_oldest_pending_age_seconds"


def _op(op_id: str) -> wallet_ops.OwedOp:
    return wallet_ops.OwedOp(op_id, "t1", "e1", 1, "post", op_id, "", "", 0, "buy_in")


def test_oldest_pending_wallet_op_age(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+pysqlite:///{tmp_path}/reg.db")
    t.metadata.create_all(engine)
    registry = CollectorRegistry()
    RegistrationMetrics(registry).watch(engine)
    assert registry.get_sample_value(AGE) == 0.0
    now = datetime.now(UTC)
    with engine.begin() as conn:
        wallet_ops.add(conn, _op("old"), now - timedelta(seconds=400))
        wallet_ops.add(conn, _op("new"), now - timedelta(seconds=5))
    age = registry.get_sample_value(AGE)
    assert age is not None and 400 <= age < 460
    with engine.begin() as conn:
        assert wallet_ops.mark(conn, "old", done=True, error="", at=now)
    age = registry.get_sample_value(AGE)
    assert age is not None and 5 <= age < 60
    with engine.begin() as conn:
        conn.execute(update(t.wallet_ops).values(status="cancelled"))
        # A cancelled op is never marked done afterwards (a stale pass changes nothing).
        assert not wallet_ops.mark(conn, "new", done=True, error="", at=now)
    assert registry.get_sample_value(AGE) == 0.0
    engine.dispose()

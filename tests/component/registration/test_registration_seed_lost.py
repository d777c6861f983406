"""A Register that would fill a table whose secret multiplier seed a restore lost (issue 28):
refused FAILED_PRECONDITION naming the table and the ``SEED_LOST`` ending the restore's
comparison reports (docs/chaos.md, backup and restore), logged, and nothing changes: no
event, the table still waits with its players, the caller's reservation given back. Before,
the fill raised a plain error ("seed must be 32 bytes" for the restore's empty seed) and the
caller got an internal error, its buy-in held until the sweeper voided it minutes later."""

from __future__ import annotations

import logging

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.registration.v1 import registration_pb2
from electric_clients.errors import error_detail
from electric_registration.store import projections
from electric_registration.store import tables as t
from sqlalchemy import update

from tests.support.reg_harness import OPS, Stack, eventually

BUY_IN = 100


@pytest.mark.parametrize("stored", ["", "ab" * 32], ids=["rebuilt-empty", "other-seed"])
async def test_a_fill_without_its_seed_is_refused_naming_the_loss(
    stack: Stack, stored: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    for p in ("p1", "p2", "p3"):
        await stack.deposit(p, 500)
    (entry,) = (await stack.register("p1")).entries
    await stack.register("p2")
    table_id = entry.table_id
    # What the restore leaves (projections.rebuild_from_events): the unrevealed seed was
    # only in the lost row.
    with stack.engine("registration").begin() as conn:
        conn.execute(
            update(t.tables).where(t.tables.c.table_id == table_id).values(multiplier_seed=stored)
        )
    events_before = stack.registration_events(table_id)

    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.register("p3")
    err = info.value
    assert err.code() is grpc.StatusCode.FAILED_PRECONDITION, err
    named = f"table {table_id}.{projections.SEED_LOST}"
    assert named.endswith(projections.NEEDS_CANCEL)
    assert named in (err.details() or "") and "SEED_LOST" in (err.details() or "")
    detail = errors_pb2.ErrorInfo()
    assert error_detail(err, detail)
    assert detail.reason == errors_pb2.ERROR_REASON_WRONG_STATE
    assert dict(detail.metadata) == {
        "table_id": table_id,
        "needs_cancel": "SEED_LOST",
        "difference": named,
    }
    logged = [
        r.msg
        for r in caplog.records
        if isinstance(r.msg, dict) and r.msg.get("event") == "register.seed_lost"
    ]
    assert logged and logged[0]["table_id"] == table_id and logged[0]["needs_cancel"] == named

    # Nothing changed: no event, the table still waits with its two players, p3 holds no
    # entry and no reservation.
    assert stack.registration_events(table_id) == events_before
    (mine,) = await stack.my_tables("p1")
    assert mine.status == registration_pb2.TABLE_STATUS_REGISTERING
    assert mine.players_registered == 2
    assert await stack.my_tables("p3") == []

    async def given_back() -> bool:
        b = await stack.balance("p3")
        return (b.cash, b.reserved) == (500, 0)

    await eventually(given_back)

    # The ending it names is the way out: the operator cancels the table, the players who
    # waited get their buy-ins back, and the next Register opens a new table.
    done = await stack.reg.CancelTable(
        registration_pb2.CancelTableRequest(table_id=table_id, reason="seed lost"), metadata=OPS
    )
    assert done.cancelled_now
    (again,) = (await stack.register("p3")).entries
    assert again.table_id != table_id

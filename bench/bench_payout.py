"""Payout crediting benchmark (issue 16 item 3): how fast a backlog of owed prize credits
is worked off, one call at a time versus with bounded parallelism.

The owed-work runner (``electric_platform.owed_work.OwedWork``, what payout's ``Crediter``
uses) works off ``PRIZES`` owed credits of ``PRIZES // 3`` tournaments that became owed at
the same instant (a burst of finished tournaments). Each call is a simulated wallet RPC
(``WALLET_MS`` of latency, the wallet itself is benchmarked in ``bench_wallet``), then the
real bookkeeping: a ``PrizeCredited``-sized event appended through the event store's group
commit on PostgreSQL (scratch database). Reported: credits/s and the p50/p99 lag from
"owed" to "credited" (the part of TournamentFinished → PrizeCredited that payout owns).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psycopg
from electric_eventlog import ANY, EventStore, create_engine, migrate
from electric_platform.owed_work import OwedWork
from google.protobuf import wrappers_pb2
from sqlalchemy.engine import make_url

from bench import Row

AREA = "payout"
PRIZES = int(os.environ.get("BENCH_PAYOUT_PRIZES", "240"))
WALLET_MS = 5.0
PARALLELISM = 16
DEFAULT_URL = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"


@dataclass(frozen=True)
class _Credit:
    op_id: str
    group: str
    blocking: bool = False


class _Source:
    def __init__(self, store: EventStore, tag: str) -> None:
        self.store = store
        self.owed = {f"{tag}-{i}": _Credit(f"{tag}-{i}", f"{tag}-t{i // 3}") for i in range(PRIZES)}
        self.start = time.perf_counter()
        self.lags: list[float] = []

    def pending(self, group: str | None) -> Sequence[_Credit]:
        return [c for c in self.owed.values() if group is None or c.group == group]

    def groups_waiting(self) -> Iterable[str]:
        return ()

    async def perform(self, call: _Credit) -> str:
        await asyncio.sleep(WALLET_MS / 1000)
        return call.op_id

    def record_done(self, call: _Credit, result: str) -> bool:
        self.store.append_in_new_tx(
            f"payout-{call.group}", ANY, [wrappers_pb2.StringValue(value=f"credited {result}")]
        )
        self.owed.pop(call.op_id, None)
        self.lags.append((time.perf_counter() - self.start) * 1000)
        return True

    def record_failure(self, call: _Credit, error: str) -> None:
        raise AssertionError(error)

    async def settle(self, group: str) -> None:
        return None

    async def before_pass(self) -> None:
        return None

    async def after_pass(self) -> None:
        return None


def _work_off(store: EventStore, parallelism: int) -> tuple[float, float, float]:
    """(credits/s, p50 lag ms, p99 lag ms) of one pass over a fresh backlog."""
    source = _Source(store, f"p{parallelism}-{uuid.uuid4().hex[:6]}")
    work: OwedWork[_Credit, str] = OwedWork("bench_credit", source, parallelism=parallelism)
    start = time.perf_counter()
    outcome = asyncio.run(work.run_pass())
    elapsed = time.perf_counter() - start
    if outcome.done != PRIZES or source.owed:
        raise AssertionError(f"credited {outcome.done} of {PRIZES}")
    lags = sorted(source.lags)
    return PRIZES / elapsed, statistics.median(lags), lags[int(len(lags) * 0.99) - 1]


def run() -> list[Row]:
    url = make_url(os.environ.get("DATABASE_URL", DEFAULT_URL))
    if url.get_backend_name() != "postgresql":
        return [Row(AREA, "skipped", 0, "-", note="DATABASE_URL is not PostgreSQL")]
    url = url.set(drivername="postgresql+psycopg")
    scratch = f"bench_payout_{uuid.uuid4().hex[:10]}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{scratch}"')
    try:
        engine = create_engine(url.set(database=scratch).render_as_string(hide_password=False))
        store = EventStore(engine, producer="payout")
        try:
            migrate(engine)
            serial = _work_off(store, 1)
            parallel = _work_off(store, PARALLELISM)
        finally:
            store.group.close()
            engine.dispose()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
    note = f"{PRIZES} owed at once, wallet call {WALLET_MS:.0f} ms simulated"
    return [
        Row(
            AREA,
            f"prize credits, parallelism {PARALLELISM}",
            parallel[0],
            "credits/s",
            "parallelism 1",
            serial[0],
            note,
        ),
        Row(AREA, "owed->credited lag p50", parallel[1], "ms", "parallelism 1", serial[1], note),
        Row(AREA, "owed->credited lag p99", parallel[2], "ms", "parallelism 1", serial[2], note),
    ]

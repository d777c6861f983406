"""Casino bots in the scale e2e (issue 17, opt-in): UTH bots at ``uth-1`` (and a few THB
bots) play through the table fleet while an instance is killed with SIGKILL and another
joins. ``ELECTRIC_E2E_SCALE_UTH_BOTS`` (default 0: off, so the default suite's time does
not grow) sets how many UTH bots play.

The live UTH table is owned by the partition of ``casino-table-uth-1`` (docs/scaling.md
"Casino tables"): every rebalance (the kill, the join) drops it and its new owner rebuilds
it under a new fence epoch; the bots' calls through any instance are forwarded to the
owner. Checked from the table database afterwards: no round is both settled and voided,
none was resolved twice, at most the table's latest round is still open, the fence epoch of
the table moved at least once, and every reservation of an ended round was posted or
voided (its owed wallet call done).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter

import sqlalchemy as sa
from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import Targets
from electric_eventlog import EventStore, create_engine
from electric_eventlog import schema as es
from electric_table.casino import repo
from electric_table.journal import casino_stream
from electric_table.store import tables as tt

from tests.support.auth import ISSUER_KEY

UTH_BOTS = int(os.environ.get("ELECTRIC_E2E_SCALE_UTH_BOTS", "0"))
THB_BOTS = 2 if UTH_BOTS else 0
TABLE = "uth-1"
#: Short UTH windows for the table processes (the casino e2e's).
UTH_WINDOWS = {
    "ELECTRIC_TABLE_UTH_GREEN_MS": "1500",
    "ELECTRIC_TABLE_UTH_YELLOW_MS": "300",
    "ELECTRIC_TABLE_UTH_DECISION_MS": "1500",
    "ELECTRIC_TABLE_UTH_PAUSE_MS": "200",
}


def casino_env() -> dict[str, str]:
    """Environment of the table processes when casino bots play."""
    return dict(UTH_WINDOWS) if UTH_BOTS else {}


def casino_runner(registration: str, table: str, wallet: str) -> CasinoRunner | None:
    """The casino bots (None when ``ELECTRIC_E2E_SCALE_UTH_BOTS`` is 0)."""
    if not UTH_BOTS:
        return None
    return CasinoRunner(
        CasinoRunnerConfig(
            targets=Targets(registration, table, wallet),
            key=ISSUER_KEY,
            thb_bots=THB_BOTS,
            uth_bots=UTH_BOTS,
            uth_table=TABLE,
            player_prefix=f"scu{uuid.uuid4().hex[:6]}",
        )
    )


def uth_rounds_played(runner: CasinoRunner) -> int:
    return runner.stats.games["uth"].rounds + runner.stats.games["uth"].voided


async def play_on(runner: CasinoRunner, after: int, more: int, timeout: float) -> int:
    """Wait until the UTH bots saw ``more`` rounds end after ``after`` (the kill), counted
    per bot (a round three bots played counts three); returns how many they saw."""
    began = time.monotonic()
    while uth_rounds_played(runner) < after + more:
        assert time.monotonic() - began < timeout, (
            f"UTH rounds stalled after the kill: {runner.stats}"
        )
        await asyncio.sleep(0.5)
    return uth_rounds_played(runner) - after


def uth_owner(db_url: str) -> str:
    """The address the fence row of the UTH table names (its owner), "" if never taken."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            f = es.fences.c
            owner = conn.execute(
                sa.select(f.owner).where(f.resource == f"casino-table-{TABLE}")
            ).scalar()
        return str(owner or "")
    finally:
        engine.dispose()


def check_uth_rounds(db_url: str, timeout: float = 60.0) -> dict[str, int]:
    """The table database's UTH rounds after the run (module doc); returns counts."""
    engine = create_engine(db_url)
    store = EventStore(engine, producer="probe")
    try:
        deadline = time.monotonic() + timeout
        while True:  # the owed post/void calls of the last settlements may still run
            with engine.connect() as conn:
                c = tt.casino_rounds.c
                rounds = conn.execute(
                    sa.select(c.round_id, c.status).where(c.table_id == TABLE)
                ).all()
                owed = [
                    b for r in rounds if r.status != repo.OPEN for b in repo.bets(conn, r.round_id)
                ]
                f = es.fences.c
                epoch = conn.execute(
                    sa.select(f.epoch).where(f.resource == f"casino-table-{TABLE}")
                ).scalar()
            pending = [b.bet_id for b in owed if not b.op_done]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert not pending, f"owed wallet calls never done: {pending[:5]}"
        open_rounds = [r.round_id for r in rounds if r.status == repo.OPEN]
        assert len(open_rounds) <= 1, open_rounds
        ends: Counter[str] = Counter()
        with engine.connect() as conn:
            for r in rounds:
                kinds = Counter(
                    type(store.decode(e)).__name__
                    for e in store.read_stream(conn, casino_stream(r.round_id))
                )
                settled, voided = kinds["CasinoRoundSettled"], kinds["CasinoRoundVoided"]
                assert settled + voided <= 1, (r.round_id, kinds)
                if voided:
                    assert r.status == repo.VOIDED, (r.round_id, r.status)
                elif settled:
                    assert r.status == repo.SETTLED, (r.round_id, r.status)
                elif r.status != repo.OPEN:  # ended without a seat in play: nothing to settle
                    assert r.status == repo.SETTLED and not kinds["CasinoSeatSettled"], (
                        r.round_id,
                        kinds,
                    )
                ends["settled" if settled else "voided" if voided else r.status] += 1
        assert epoch is not None and int(epoch) >= 2, f"{TABLE} never moved: epoch {epoch}"
        return {**ends, "epoch": int(epoch), "bets": len(owed)}
    finally:
        engine.dispose()

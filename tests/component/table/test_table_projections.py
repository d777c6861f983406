"""Issue 18 item 4: the table service's read models are a fold of its events. Real rows
come from a real table ServiceHost (tournaments played by bots; THB and UTH rounds with a
real wallet); with the host stopped, ``rebuild_and_compare`` finds nothing, names every
corrupted row, and ``rebuild_projections`` restores the very rows (columns the events do not
carry excepted, see electric_table.projections)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2
from electric_eventlog import EventStore, create_engine
from electric_platform.eventpath import inprocess_bus
from electric_table.projections import rebuild_and_compare, rebuild_projections
from electric_table.store import tables as t
from sqlalchemy import Engine, delete, insert, select, update

from tests.component.table.test_table_service_grpc import running_env, until
from tests.support import wallet_kit
from tests.support.backends import Backend
from tests.support.casino_setup import registration_event, until_seated
from tests.support.table_casino_kit import betting, md, seat, table_host, windows
from tests.support.table_kit import Bot, registration_messages, wait_table

PLAYERS = ("ann", "ben", "cat")
PROJECTIONS = (t.tables, t.seats, t.casino_rounds, t.casino_uth_players)
#: Columns from the writer's clock, not from an event (not compared, not rebuilt).
CLOCK = {t.casino_rounds.name: "created_at", t.casino_uth_players.name: "created_at"}


@pytest.fixture
def engine(backend: Backend) -> Iterator[Engine]:
    e = create_engine(backend.url)
    try:
        yield e
    finally:
        e.dispose()


def dump(engine: Engine, *, clock: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection row (sorted), without the clock columns unless ``clock``."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in PROJECTIONS:
            cols = [c for c in table.c if clock or c.name != CLOCK.get(table.name)]
            out[table.name] = sorted(tuple(r) for r in conn.execute(select(*cols)))
    return out


def stacks_of(engine: Engine, table_id: str) -> set[int]:
    with engine.connect() as conn:
        return set(conn.scalars(select(t.seats.c.stack).where(t.seats.c.table_id == table_id)))


def check_round_trip(engine: Engine, corrupt: Any, expected: list[str]) -> None:
    """Consistent; ``corrupt`` makes exactly the ``expected`` differences (by prefix);
    the rebuild brings back the rows."""
    events = EventStore(engine, producer="table")
    assert rebuild_and_compare(engine, events) == []
    before = dump(engine)
    with engine.begin() as conn:
        corrupt(conn)
    diffs = rebuild_and_compare(engine, events)
    assert sorted(d.split(":")[0] for d in diffs) == sorted(expected), diffs
    assert rebuild_projections(engine, events) > 0
    assert rebuild_and_compare(engine, events) == []
    after = dump(engine, clock=False)
    for table in PROJECTIONS:
        keep = [i for i, c in enumerate(table.c) if c.name != CLOCK.get(table.name)]
        want = sorted(tuple(r[i] for i in keep) for r in before[table.name])
        assert after[table.name] == want, table.name
    # A rebuild of consistent tables changes nothing at all (clock columns kept).
    settled = dump(engine)
    rebuild_projections(engine, events)
    assert dump(engine) == settled


async def test_tournament_tables_rebuild_from_events(
    tmp_path: Path, backend: Backend, engine: Engine
) -> None:
    finished, live, invalid = (str(uuid.uuid4()) for _ in range(3))
    async with running_env(tmp_path, DATABASE_URL=backend.url) as env:
        # Nobody acts at ``live``: timeouts fold its hands, long levels keep it running.
        for table_id, timer, level in ((finished, 1000, 600), (live, 300, 600_000)):
            messages, _ = registration_messages(
                table_id, PLAYERS, action_timer_ms=timer, time_bank_ms=0, level_ms=level
            )
            await inprocess_bus().publish(messages)
            await wait_table(env.stub, table_id, PLAYERS[0])
        # One seat cannot be played: the table exists, status ``invalid``, no hands.
        messages, _ = registration_messages(invalid, PLAYERS[:1])
        await inprocess_bus().publish(messages)
        await wait_table(env.stub, invalid, PLAYERS[0])
        bots = [Bot(p, finished, seed=i + 1).play(env.target) for i, p in enumerate(PLAYERS)]
        await asyncio.wait_for(asyncio.gather(*bots), 240)
        await until(lambda: len(stacks_of(engine, live)) > 1, timeout=60)  # a hand ended
    with engine.connect() as conn:
        status = dict(conn.execute(select(t.tables.c.table_id, t.tables.c.status)).all())
    assert status == {finished: "finished", live: "running", invalid: "invalid"}

    def corrupt(conn: Any) -> None:
        tc, sc = t.tables.c, t.seats.c
        conn.execute(update(t.tables).where(tc.table_id == finished).values(status="running"))
        conn.execute(update(t.tables).where(tc.table_id == invalid).values(status="starting"))
        conn.execute(
            update(t.tables).where(tc.table_id == live).values(stream_version=tc.stream_version - 1)
        )
        conn.execute(update(t.seats).where(sc.table_id == live, sc.seat == 2).values(stack=1))
        conn.execute(delete(t.seats).where(sc.table_id == finished, sc.seat == 3))
        row = conn.execute(select(t.tables).where(tc.table_id == live)).mappings().one()
        conn.execute(insert(t.tables).values({**row, "table_id": "ghost"}))

    check_round_trip(
        engine,
        corrupt,
        [
            f"table_tables['{finished}']",
            f"table_tables['{live}']",
            f"table_tables['{invalid}']",
            "table_tables['ghost']",
            f"table_seats['{live}', 2]",
            f"table_seats['{finished}', 3]",
        ],
    )


async def test_casino_rounds_rebuild_from_events(
    tmp_path: Path, backend: Backend, engine: Engine
) -> None:
    A = casino_pb2
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet:
        for p in ("alice", "bob", "carol"):
            await wallet_kit.deposit(wallet, p, 50_000)
        async with table_host(tmp_path, wallet, windows(1500, 300, 600), backend.url) as env:
            # THB: one round settled and acknowledged, one left open.
            await registration_event(
                reg_casino.CasinoSeatTaken(
                    table_id="thb-1", game="thb", player_id="alice", seat=1, session_id="s"
                ),
                "thb-1",
            )
            await until_seated(env.handlers.engine, "thb-1", "alice")
            dealt = await env.casino.Deal(
                A.DealRequest(request_id="d1", table_id="thb-1", ante_cents=500),
                metadata=md("alice"),
            )
            thb_done = dealt.round.round_id
            await env.casino.Decide(
                A.DecideRequest(
                    request_id="f1", round_id=thb_done, decision=A.CASINO_DECISION_FOLD
                ),
                metadata=md("alice"),
            )
            await env.casino.AckResult(A.AckResultRequest(round_id=thb_done), metadata=md("alice"))
            await env.casino.Deal(
                A.DealRequest(request_id="d2", table_id="thb-1", ante_cents=500),
                metadata=md("alice"),
            )
            # UTH: bob and carol bet in the first round (timeouts decide), bob acknowledges.
            await seat(env, ["bob", "carol", "dan"])
            v = await env.wait("bob", lambda v: betting(v) and v.seated == 3)
            uth_first = v.round_id
            await env.bet("bob", A.CASINO_BET_ACTION_ANTE, 500)
            await env.bet("carol", A.CASINO_BET_ACTION_ANTE, 1000)
            await env.wait("bob", lambda v: v.round_id != uth_first, timeout=30)
            await env.casino.AckResult(A.AckResultRequest(round_id=uth_first), metadata=md("bob"))
    with engine.connect() as conn:
        rounds = {r.round_id: r for r in conn.execute(select(t.casino_rounds))}
        players = {
            (r.round_id, r.player_id): bool(r.acknowledged)
            for r in conn.execute(select(t.casino_uth_players))
        }
    assert rounds[thb_done].status == "settled" and rounds[thb_done].acknowledged
    assert rounds[uth_first].status == "settled"
    assert {r.status for r in rounds.values() if r.game == "thb"} == {"settled", "open"}
    assert players == {(uth_first, "bob"): True, (uth_first, "carol"): False}
    thb_open = next(r for r in rounds.values() if r.game == "thb" and r.status == "open")

    def corrupt(conn: Any) -> None:
        rc, uc = t.casino_rounds.c, t.casino_uth_players.c
        conn.execute(update(t.casino_rounds).where(rc.round_id == uth_first).values(status="open"))
        conn.execute(
            update(t.casino_rounds)
            .where(rc.round_id == thb_open.round_id)
            .values(acknowledged=True)
        )
        conn.execute(delete(t.casino_rounds).where(rc.round_id == thb_done))
        conn.execute(
            update(t.casino_uth_players).where(uc.player_id == "bob").values(acknowledged=False)
        )
        conn.execute(delete(t.casino_uth_players).where(uc.player_id == "carol"))

    check_round_trip(
        engine,
        corrupt,
        [
            f"table_casino_rounds['{uth_first}']",
            f"table_casino_rounds['{thb_open.round_id}']",
            f"table_casino_rounds['{thb_done}']",
            f"table_casino_uth_players['{uth_first}', 'bob']",
            f"table_casino_uth_players['{uth_first}', 'carol']",
        ],
    )

    # An open round's row cannot come back: its deck seed was never published.
    events = EventStore(engine, producer="table")
    with engine.begin() as conn:
        conn.execute(delete(t.casino_rounds).where(t.casino_rounds.c.round_id == thb_open.round_id))
    rebuild_projections(engine, events)
    (lost,) = rebuild_and_compare(engine, events)
    assert lost.startswith(f"table_casino_rounds['{thb_open.round_id}']: missing and not rebuild")

"""Issue 18 item 4: registration's read models rebuilt from its event log
(``electric_registration.store.projections``), as the restore procedure does.

The real wallet and registration services (reg_harness) hold realistic rows: player
settings, a table filled, started and finished (the table's events from a fake table
producer), an unregistered entry, a cancelled table, open tables, casino seats taken and
released. Then the projections equal a fold of the events; corrupted rows are named by
the comparison; the rebuild restores exactly the rows there were. On SQLite and on
PostgreSQL (a fresh database per service on the test server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.common.v1 import tournament_pb2
from electric.registration.v1 import casino_events_pb2 as casino_ev
from electric.registration.v1 import casino_pb2, casino_pb2_grpc, registration_pb2
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import EventStore
from electric_eventlog import schema as eventlog
from electric_registration.store import projections
from electric_registration.store import tables as t
from sqlalchemy import Engine, Table, delete, func, insert, select, update

from tests.support.reg_harness import (
    OPS,
    FakeTable,
    Stack,
    eventually,
    finished_event,
    fresh_databases,
    md,
    running_stack,
)

pytestmark = pytest.mark.timeout(300)

#: The projection tables and their keys (what the module rebuilds).
PROJECTIONS: dict[str, tuple[Table, tuple[str, ...]]] = {
    "tables": (t.tables, ("table_id",)),
    "entries": (t.entries, ("entry_id",)),
    "settings": (t.player_settings, ("player_id",)),
    "casino_tables": (t.casino_tables, ("table_id",)),
    "casino_sessions": (t.casino_sessions, ("session_id",)),
}


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.integration),
    ]
)
def urls(request: pytest.FixtureRequest) -> Iterator[dict[str, str] | None]:
    if request.param == "sqlite":
        yield None
        return
    postgres_url = str(request.getfixturevalue("postgres_url"))
    with fresh_databases(postgres_url, "regproj_", ("wallet", "registration")) as made:
        yield made


@pytest.fixture
async def stack(tmp_path: Path, urls: dict[str, str] | None) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, urls, payout=False) as s:
        yield s


def _value(v: Any) -> Any:
    if isinstance(v, datetime) and v.tzinfo is None:
        return v.replace(tzinfo=UTC)
    if isinstance(v, memoryview):
        return bytes(v)
    return v


def _contents(engine: Engine) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    """Every row of every projection table by key."""
    out: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    with engine.connect() as conn:
        for name, (table, key) in PROJECTIONS.items():
            out[name] = {
                tuple(r[k] for k in key): {c: _value(v) for c, v in r.items()}
                for r in conn.execute(select(table)).mappings()
            }
    return out


def _registration_events(engine: Engine) -> int:
    store = EventStore(engine, producer="registration")
    with engine.connect() as conn:
        return sum(
            1 for e in store.iter_all(conn) if e.event_type.startswith("electric.registration.")
        )


async def _settled(stack: Stack) -> None:
    """No wallet work owed any more (the rows stop changing)."""

    async def none_pending() -> bool:
        with stack.engine("registration").connect() as conn:
            n = conn.execute(
                select(func.count())
                .select_from(t.wallet_ops)
                .where(t.wallet_ops.c.status == "pending")
            ).scalar_one()
        return int(n) == 0

    await eventually(none_pending, timeout=30)


async def _table_status(stack: Stack, table_id: str, status: str) -> None:
    async def reached() -> bool:
        with stack.engine("registration").connect() as conn:
            got = conn.execute(
                select(t.tables.c.status).where(t.tables.c.table_id == table_id)
            ).scalar_one()
        return bool(got == status)

    await eventually(reached, timeout=20)


async def _drive(stack: Stack) -> dict[str, str]:
    """Realistic rows in every projection; the ids the test corrupts."""
    # Player settings: a chosen name, a switch only (the default name), a second change.
    for player, request in (
        ("p1", registration_pb2.UpdatePlayerSettingsRequest(display_name="Ace", sound_fx=False)),
        ("p2", registration_pb2.UpdatePlayerSettingsRequest(four_color_deck=True)),
        ("p1", registration_pb2.UpdatePlayerSettingsRequest(muck_losing_hands=True)),
    ):
        await stack.reg.UpdatePlayerSettings(request, metadata=md(player))
    # A table filled, started and finished (its play from the table's events).
    entries = {}
    for p in ("p1", "p2", "p3"):
        await stack.deposit(p, 500)
        entries[p] = (await stack.register(p)).entries[0]
    played = entries["p1"].table_id
    started = await stack.tournament_started(played)
    fake = FakeTable(stack.urls["table"], stack.bus)
    try:
        await fake.emit(
            played,
            table_events.TableStarted(
                table_id=played,
                starting_stack=1500,
                seats=[
                    tournament_pb2.SeatAssignment(seat=e.seat, player_id=p)
                    for p, e in entries.items()
                ],
            ),
            table_events.HandStarted(
                table_id=played,
                hand_number=1,
                stacks=[table_events.SeatStack(seat=e.seat, stack=1500) for e in entries.values()],
            ),
            finished_event(
                played,
                [
                    (place, entries[p].seat, p, entries[p].entry_id, 1, 3)
                    for place, p in ((1, "p2"), (2, "p1"), (3, "p3"))
                ],
                started.multiplier,
                started.prize_pool.cents,
                {entries["p2"].seat: started.prize_pool.cents},
            ),
        )
        await _table_status(stack, played, "finished")
    finally:
        fake.close()
    # An entry withdrawn, a table cancelled with its entries, a table left registering.
    for p in ("q1", "q2", "q3"):
        await stack.deposit(p, 500)
    gone = (await stack.register("q2", tier="electric-100")).entries[0]
    await stack.reg.Unregister(
        registration_pb2.UnregisterRequest(request_id="u1", entry_id=gone.entry_id),
        metadata=md("q2"),
    )
    cancelled = (await stack.register("q1", tier="electric-100")).entries[0].table_id
    await stack.reg.CancelTable(
        registration_pb2.CancelTableRequest(table_id=cancelled, reason="maintenance"),
        metadata=OPS,
    )
    waiting = (await stack.register("q3", tier="electric-100")).entries[0]
    # Casino: UTH seats (one released), a private THB table.
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{stack.hosts['registration'].grpc_port}")
    stack.channels.append(channel)
    casino = casino_pb2_grpc.CasinoLobbyServiceStub(channel)
    uth = casino_ev.CASINO_GAME_CODE_UTH
    for p in ("c1", "c2"):
        await casino.JoinCasinoTable(
            casino_pb2.JoinCasinoTableRequest(game=uth, table_id="uth-1"), metadata=md(p)
        )
    await casino.JoinCasinoTable(
        casino_pb2.JoinCasinoTableRequest(game=casino_ev.CASINO_GAME_CODE_THB), metadata=md("c3")
    )
    await casino.LeaveCasinoTable(
        casino_pb2.LeaveCasinoTableRequest(table_id="uth-1"), metadata=md("c1")
    )
    await _settled(stack)
    return {
        "played": played,
        "cancelled": cancelled,
        "waiting": waiting.table_id,
        "entry": entries["p3"].entry_id,
        "withdrawn": gone.entry_id,
    }


def _check(engine: Engine) -> list[str]:
    return projections.rebuild_and_compare(engine, EventStore(engine, producer="registration"))


def _rebuild(engine: Engine) -> int:
    return projections.rebuild_projections(engine, EventStore(engine, producer="registration"))


async def test_projections_equal_the_fold_name_corruption_and_are_rebuilt(stack: Stack) -> None:
    ids = await _drive(stack)
    engine = stack.engine("registration")
    before = _contents(engine)
    # The drive reached every state the fold knows.
    statuses = {r["status"] for r in before["tables"].values()}
    assert statuses >= {"registering", "finished", "cancelled"}
    assert {r["status"] for r in before["entries"].values()} == {
        "reserved",
        "confirmed",
        "unregistered",
        "cancelled",
    }
    assert len(before["settings"]) == 2 and len(before["casino_sessions"]) == 2
    assert len(before["casino_tables"]) == 2
    assert _check(engine) == []

    seed = before["tables"][(ids["waiting"],)]["multiplier_seed"]
    [c2] = [r for r in before["casino_sessions"].values() if r["player_id"] == "c2"]
    with engine.begin() as conn:
        conn.execute(delete(t.entries).where(t.entries.c.entry_id == ids["entry"]))
        conn.execute(
            update(t.entries)
            .where(t.entries.c.entry_id == ids["withdrawn"])
            .values(wallet_transfer_id="forged")
        )
        conn.execute(
            update(t.tables)
            .where(t.tables.c.table_id == ids["cancelled"])
            .values(status="registering", players_registered=2)
        )
        conn.execute(
            update(t.tables)
            .where(t.tables.c.table_id == ids["waiting"])
            .values(multiplier_seed="00" * 32)
        )
        conn.execute(delete(t.player_settings).where(t.player_settings.c.player_id == "p2"))
        conn.execute(
            update(t.casino_sessions).where(t.casino_sessions.c.player_id == "c2").values(seat=7)
        )
        conn.execute(
            update(t.casino_tables)
            .where(t.casino_tables.c.table_id == "uth-1")
            .values(owner_id="mallory")
        )
        conn.execute(
            insert(t.casino_tables).values(
                table_id="thb-9",
                game="thb",
                number=9,
                owner_id="ghost",
                opened_at=datetime.now(UTC),
            )
        )
    diffs = _check(engine)
    want = [
        f"entry {ids['entry']}: in the events, missing from the projection",
        f"entry {ids['withdrawn']}.wallet_transfer_id: events say 'buyin-{ids['withdrawn']}', "
        "projection has 'forged'",
        f"table {ids['cancelled']}.status: events say 'cancelled', projection has 'registering'",
        f"table {ids['cancelled']}.players_registered: events say 1, projection has 2",
        f"table {ids['waiting']}.{projections.SEED_LOST}",
        "player settings p2: in the events, missing from the projection",
        "casino table uth-1.owner_id: events say '', projection has 'mallory'",
        "casino table thb-9: in the projection, not in the events",
        f"casino session {c2['session_id']}.seat: events say 2, projection has 7",
    ]
    for line in want:
        assert line in diffs, (line, diffs)
    assert len(diffs) == len(want), diffs

    # The unrevealed seed is not in the log: the rebuild keeps the stored one.
    with engine.begin() as conn:
        conn.execute(
            update(t.tables)
            .where(t.tables.c.table_id == ids["waiting"])
            .values(multiplier_seed=seed)
        )
    assert _rebuild(engine) == _registration_events(engine)
    assert _check(engine) == []
    assert _contents(engine) == before

    # A dump taken between a fill and its start, the row lost: what the fill prepared is in
    # no event (here: the log cut before TournamentStarted). Reported, not invented.
    played = ids["played"]
    with engine.begin() as conn:
        cut = conn.execute(
            select(eventlog.events.c.global_position).where(
                eventlog.events.c.stream_id == f"registration-table-{played}",
                eventlog.events.c.event_type == "electric.registration.v1.TournamentStarted",
            )
        ).scalar_one()
        conn.execute(delete(eventlog.outbox).where(eventlog.outbox.c.global_position == cut))
        conn.execute(delete(eventlog.events).where(eventlog.events.c.global_position == cut))
        conn.execute(delete(t.entries).where(t.entries.c.table_id == played))
        conn.execute(delete(t.tables).where(t.tables.c.table_id == played))
    _rebuild(engine)
    assert _check(engine) == [f"table {played}.{projections.START_LOST}"]


async def test_rebuild_from_nothing_restores_every_derivable_column(stack: Stack) -> None:
    ids = await _drive(stack)
    engine = stack.engine("registration")
    before = _contents(engine)
    with engine.begin() as conn:
        for name in ("entries", "tables", "settings", "casino_sessions", "casino_tables"):
            conn.execute(delete(PROJECTIONS[name][0]))
    diffs = _check(engine)
    assert len(diffs) == sum(len(rows) for rows in before.values()), diffs
    assert _rebuild(engine) > 0
    after = _contents(engine)

    # What the events cannot give (module doc) is lost with the rows; all the rest is back.
    # Seeds never revealed: the open tables' and the one cancelled before it filled.
    unrevealed = {k for k, r in before["tables"].items() if r["filled_at"] is None}
    assert (ids["cancelled"],) in unrevealed
    assert (ids["waiting"],) in unrevealed
    assert sorted(_check(engine)) == sorted(
        f"table {k[0]}.{projections.SEED_LOST}" for k in unrevealed
    )
    played = after["tables"][(ids["played"],)]
    assert (played["status"], played["current_hand_number"], played["finished_at"]) == (
        "running",
        0,
        None,
    )
    lost = {"tables": {*projections.CONSUMER_COLUMNS, "status", "ended_at", "multiplier_seed"}}
    lost["casino_tables"] = set(projections.CASINO_TABLE_TIMES)
    lost["casino_sessions"] = set(projections.CASINO_SESSION_TIMES)

    def derivable(contents: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, rows in contents.items():
            out[name] = {
                k: {c: v for c, v in r.items() if c not in lost.get(name, set())}
                for k, r in rows.items()
            }
        return out

    assert derivable(after) == derivable(before)
    revealed = [k for k in before["tables"] if k not in unrevealed]
    for k in revealed:
        assert after["tables"][k]["multiplier_seed"] == before["tables"][k]["multiplier_seed"]
    for k, r in after["tables"].items():
        if k != (ids["played"],):
            assert (r["status"], r["ended_at"]) == (
                before["tables"][k]["status"],
                before["tables"][k]["ended_at"],
            )
    # The casino times fall back to the events' times (a moment after the rows' own).
    for name, cols in (
        ("casino_tables", projections.CASINO_TABLE_TIMES),
        ("casino_sessions", projections.CASINO_SESSION_TIMES),
    ):
        for k, r in after[name].items():
            for c in cols:
                assert abs((r[c] - before[name][k][c]).total_seconds()) < 5

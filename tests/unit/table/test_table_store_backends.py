"""The table service's store (``electric_table.store.repo``) on SQLite and PostgreSQL
(``backend_engine``): the read model of a table — written by the projector from the table's
events (``store.projector.project``) — round-trips and moves forward, a command's recorded
outcome answers its retry (one row per table, player and request id), deck seeds are kept
once per hand and the first multiplier seed wins."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from electric.common.v1 import money_pb2, tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric_eventlog import migrate, upgrade
from electric_table.store import projector, repo
from electric_table.store.tables import VERSIONS_DIR, metadata
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _migrated(engine: Engine) -> Engine:
    migrate(engine)
    for _ in range(2):  # idempotent
        upgrade(
            engine,
            versions_dir=VERSIONS_DIR,
            version_table="alembic_version_table",
            target_metadata=metadata,
        )
    return engine


def _seats(*players: str) -> list[repo.SeatRow]:
    return [repo.SeatRow(i + 1, p, f"e-{p}", p.title(), 1_500) for i, p in enumerate(players)]


def _project(conn: Connection, table_id: str, version: int, event: Message, at: datetime) -> None:
    """The projector's rows of ``event``, the table's ``version``-th."""
    envelope = Envelope(stream_id=f"table-{table_id}", stream_version=version)
    envelope.occurred_at.FromDatetime(at)
    projector.project(conn, [envelope], [event])


def _insert(engine: Engine, table_id: str, *players: str, minute: int = 0) -> None:
    started = tev.TableStarted(
        table_id=table_id,
        table_name=f"Table {table_id}",
        seats=[
            tournament_pb2.SeatAssignment(
                seat=s.seat, player_id=s.player_id, entry_id=s.entry_id, display_name=s.display_name
            )
            for s in _seats(*players)
        ],
        starting_stack=1_500,
        multiplier=5,
        prize_pool=money_pb2.Money(cents=2_500),
        buy_in=money_pb2.Money(cents=500),
        domain=tev.DomainRecord(type="tournament.TournamentStarted"),  # a playable table
    )
    with engine.begin() as conn:
        _project(conn, table_id, 1, started, T0.replace(minute=minute))


def test_table_read_model_round_trips_and_moves_forward(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    _insert(engine, "t-1", "ava", "bo", "cy")
    _insert(engine, "t-2", "dee", "eli", "fay", minute=1)
    with engine.connect() as conn:
        got = repo.get_table(conn, "t-1")
        assert repo.get_table(conn, "nope") is None
    assert got == repo.TableRow(
        table_id="t-1",
        table_name="Table t-1",
        status=repo.TableStatus.STARTING,
        multiplier=5,
        prize_pool_cents=2_500,
        buy_in_cents=500,
        stream_version=1,
        seats=tuple(_seats("ava", "bo", "cy")),
    )

    with engine.begin() as conn:
        _project(conn, "t-1", 6, tev.HandStarted(table_id="t-1", hand_number=1), T0)
        stacks = [tev.SeatStack(seat=1, stack=1_000), tev.SeatStack(seat=3, stack=2_000)]
        _project(conn, "t-1", 7, tev.HandEnded(table_id="t-1", stacks=stacks), T0)
        _project(conn, "t-2", 9, tev.TournamentFinished(table_id="t-2"), T0)
    with engine.connect() as conn:
        t1 = repo.get_table(conn, "t-1")
        t2 = repo.get_table(conn, "t-2")
        live = repo.live_table_ids(conn)
    assert t1 is not None and t2 is not None
    assert (t1.status, t1.stream_version) == (repo.TableStatus.RUNNING, 7)
    assert [s.stack for s in t1.seats] == [1_000, 1_500, 2_000]
    assert (t2.status, t2.stream_version) == (repo.TableStatus.FINISHED, 9)
    assert [s.stack for s in t2.seats] == [1_500] * 3  # no stacks given: unchanged
    assert live == ["t-1"]

    # A table id is taken once.
    with pytest.raises(IntegrityError):
        _insert(engine, "t-1", "gus")
    with engine.connect() as conn:
        again = repo.get_table(conn, "t-1")
    assert again is not None and [s.player_id for s in again.seats] == ["ava", "bo", "cy"]


def test_recorded_request_answers_its_retry_once(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    _insert(engine, "t-1", "ava", "bo")

    def record(conn: Connection, request_id: str, code: str, player: str = "ava") -> None:
        repo.insert_request(
            conn,
            table_id="t-1",
            player_id=player,
            request_id=request_id,
            rpc="Act",
            code=code,
            message="" if code == "OK" else "not your turn",
            stream_version=3,
            at=T0,
        )

    with engine.begin() as conn:
        assert repo.get_request(conn, "t-1", "ava", "r-1") is None
        record(conn, "r-1", "OK")
        record(conn, "r-2", "FAILED_PRECONDITION")
        record(conn, "r-1", "OK", player="bo")  # same id, other player: its own record
    with engine.connect() as conn:
        assert repo.get_request(conn, "t-1", "ava", "r-1") == repo.RequestRow("Act", "OK", "", 3)
        assert repo.get_request(conn, "t-1", "ava", "r-2") == repo.RequestRow(
            "Act", "FAILED_PRECONDITION", "not your turn", 3
        )
        assert repo.get_request(conn, "t-1", "bo", "r-1") is not None
        assert repo.get_request(conn, "t-2", "ava", "r-1") is None

    # The same (table, player, request id) cannot be recorded twice; the first stays.
    with pytest.raises(IntegrityError), engine.begin() as conn:
        record(conn, "r-1", "ABORTED")
    with engine.connect() as conn:
        assert repo.get_request(conn, "t-1", "ava", "r-1") == repo.RequestRow("Act", "OK", "", 3)


def test_deck_seeds_once_per_hand_and_first_multiplier_seed_wins(
    backend_engine: Engine,
) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        repo.insert_deck_seed(conn, "t-1", 1, "aa" * 32)
        repo.insert_deck_seed(conn, "t-1", 2, "bb" * 32)
        repo.insert_deck_seed(conn, "t-2", 1, "cc" * 32)
        assert repo.get_multiplier_seed(conn, "t-1") is None
        repo.put_multiplier_seed(conn, "t-1", "11" * 32, 5)
        repo.put_multiplier_seed(conn, "t-1", "22" * 32, 10)  # a replay: ignored
    with pytest.raises(IntegrityError), engine.begin() as conn:
        repo.insert_deck_seed(conn, "t-1", 2, "dd" * 32)
    with engine.connect() as conn:
        assert repo.deck_seeds(conn, "t-1") == {1: "aa" * 32, 2: "bb" * 32}
        assert repo.deck_seeds(conn, "t-2") == {1: "cc" * 32}
        assert repo.deck_seeds(conn, "t-3") == {}
        assert repo.get_multiplier_seed(conn, "t-1") == "11" * 32


def test_player_settings_keep_the_newest_version(backend_engine: Engine) -> None:
    engine = _migrated(backend_engine)
    with engine.begin() as conn:
        assert repo.put_player_settings(conn, "ava", repo.PlayerSettings(False, True, 2))
        assert not repo.put_player_settings(conn, "ava", repo.PlayerSettings(True, True, 1))
        assert repo.put_player_settings(conn, "ava", repo.PlayerSettings(True, False, 2))
        assert repo.put_player_settings(conn, "bo", repo.PlayerSettings())
    with engine.connect() as conn:
        assert repo.player_settings(conn, ["ava", "bo", "cy"]) == {
            "ava": repo.PlayerSettings(True, False, 2),
            "bo": repo.PlayerSettings(True, True, 0),
        }

"""Live UTH domain events → table casino events → domain events: replay (and the bets'
reservation ids) is exact, settlement owes post/void per reservation, the deck seed is
withheld; one open THB round per table and player is enforced by the database."""

from __future__ import annotations

import contextlib
import random
from datetime import UTC, datetime

import electric_domain.casino.uth.events as uth
import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as cev
from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.errors import Rejected
from electric_domain.casino.uth.round import ACTIONS, UthRound
from electric_eventlog import migrate, upgrade
from electric_table.casino import repo
from electric_table.casino.uth import records as uth_records
from electric_table.store import projector
from electric_table.store.tables import VERSIONS_DIR, metadata
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

CFG = load_config()
T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
PLAYERS = ["ann", "ben", "cat", "dan"]


def play(seed: int) -> tuple[UthRound, uth_records.UthBook, list[Message], uth_records.Batch]:
    """A random round played command by command, each batch translated as the service does."""
    rng = random.Random(seed)
    u = CFG.uth
    r = UthRound.open(
        CFG,
        round_id="uth-r-1",
        game_number="20261201-000000-UTH1-1",
        deck_seed=rng.randbytes(32),
        at=0,
        previous_bets={"ann": (("ante", 500), ("trips", 100))},
    )
    book = uth_records.UthBook(table_id="uth-1")
    msgs: list[Message] = []
    last = book.translate(r.history)
    msgs += last.msgs
    at = 1
    commands: list[uth.Command] = [uth.TakeSeat(p, at) for p in PLAYERS]
    for _ in range(14):
        seat = rng.randrange(len(PLAYERS))
        commands.append(
            rng.choice(
                [
                    uth.PlaceBet(
                        seat, "ante", rng.choice([u.ante_min_cents, 2 * u.ante_min_cents]), at
                    ),
                    uth.PlaceBet(seat, "trips", u.trips_min_cents, at),
                    uth.Undo(seat, at),
                    uth.Double(seat, at),
                    uth.Repeat(seat, at),
                ]
            )
        )
    commands += [uth.Void("test", at)] if rng.random() < 0.1 else []
    batches: list[uth_records.Batch] = []
    start = len(r.history)

    def run(cmd: uth.Command, request_id: str) -> None:
        nonlocal start
        with contextlib.suppress(Rejected):
            r.handle(cmd)
        batch = book.translate(r.history[start:], request_id=request_id)
        start = len(r.history)
        batches.append(batch)
        msgs.extend(batch.msgs)

    for i, cmd in enumerate(commands):
        if not r.finished:
            run(cmd, f"req-{i}")
    at = u.betting_ms
    while not r.finished:
        s = r.state
        deciding = [i for i in range(len(s.seats)) if r.legal(i)]
        if deciding and rng.random() < 0.7:
            seat = rng.choice(deciding)
            run(uth.Decide(seat, rng.choice(list(ACTIONS[s.phase])), at), f"d-{at}")
        else:
            at = r.next_wakeup_at() or at
            run(uth.Tick(at), "")
        at += 1
    return r, book, msgs, batches[-1]


@pytest.mark.parametrize("seed", range(30))
def test_replay_from_the_published_records_is_exact(seed: int) -> None:
    r, book, msgs, last = play(seed)
    wire = [type(m).FromString(m.SerializeToString()) for m in msgs]
    again = uth_records.UthBook(table_id="uth-1")
    events = []
    for m in wire:
        got = uth_records.decode(m, r.state.seed_hex)
        if got is not None:
            again.feed(*got)
            events.append(got[0])
    assert events == r.history
    assert UthRound.replay(CFG, events).state == r.state
    assert again.stacks == book.stacks and again.play == book.play
    started = wire[0]
    assert isinstance(started, cev.CasinoRoundStarted) and started.domain.redacted
    assert r.state.seed_hex not in started.SerializeToString().hex()
    placed = {m.bet_id for m in wire if isinstance(m, cev.CasinoBetPlaced)}
    live = {x.bet_id for seat in range(len(PLAYERS)) for x in book.live(seat)}
    assert live <= placed
    if r.state.voided:
        assert last.status == repo.VOIDED
        return
    assert last.status == repo.SETTLED
    settled = [m for m in wire if isinstance(m, cev.CasinoRoundSettled)]
    in_play = [i for i, x in enumerate(r.state.seats) if x.in_play]
    assert len(settled) == (1 if in_play else 0)
    for seat in in_play:
        results = {res.spot: res.outcome.value for res in r.state.settled[seat]}  # type: ignore[attr-defined]
        for x in book.live(seat):
            want = repo.POST if results[x.spot] in ("win", "lose") else repo.VOID
            assert last.ops[x.bet_id] == want


def test_undo_owes_void_on_the_undone_reservations() -> None:
    r = UthRound.open(
        CFG, round_id="uth-r-2", game_number="n", deck_seed=bytes(32), at=0, players=["ann"]
    )
    book = uth_records.UthBook(table_id="uth-1")
    book.translate(r.history)
    placed = book.translate(r.handle(uth.PlaceBet(0, "ante", 500, 1)), request_id="a")
    assert [(b.spot, b.amount_cents) for b in placed.new_bets] == [("ante", 500), ("blind", 500)]
    again = uth_records.UthBook(table_id="uth-1")
    again.round_id, again.players = "uth-r-2", ["ann"]
    assert again.new_ids(0, (("ante", 500),), "a") == [b.bet_id for b in placed.new_bets]
    undone = book.translate(r.handle(uth.Undo(0, 2)))
    assert undone.ops == {b.bet_id: repo.VOID for b in placed.new_bets}
    other = book.translate(r.handle(uth.PlaceBet(0, "ante", 500, 3)), request_id="a")
    assert {b.bet_id for b in other.new_bets}.isdisjoint({b.bet_id for b in placed.new_bets})


def test_one_open_thb_round_per_table_and_player(backend_engine: Engine) -> None:
    migrate(backend_engine)
    upgrade(
        backend_engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=metadata,
    )

    def start(conn: Connection, rid: str, game: str, player: str) -> None:
        """A round's row, as the projector writes it from its CasinoRoundStarted."""
        started = cev.CasinoRoundStarted(
            round_id=rid, table_id=f"{game}-1", game=game, player_id=player, game_number=rid
        )
        project(conn, rid, 1, started)

    def project(conn: Connection, rid: str, version: int, event: Message) -> None:
        envelope = Envelope(stream_id=f"casino-{rid}", stream_version=version)
        projector.project(conn, [envelope], [event], projector.Withheld("", T0))

    with backend_engine.begin() as conn:
        start(conn, "t0", "thb", "ann")
        project(conn, "t0", 2, cev.CasinoRoundSettled(round_id="t0", game="thb"))
        start(conn, "t1", "thb", "ann")
        start(conn, "u1", "uth", "")
        start(conn, "u2", "uth", "")  # live UTH rounds are shared
    with pytest.raises(IntegrityError), backend_engine.begin() as conn:
        start(conn, "t2", "thb", "ann")
    with backend_engine.begin() as conn:
        project(conn, "t1", 3, cev.CasinoRoundSettled(round_id="t1", game="thb"))
        start(conn, "t2", "thb", "ann")
    with backend_engine.connect() as conn:
        statuses = {rid: repo.get_round(conn, rid) for rid in ("t0", "t1", "t2", "u1")}
    assert {rid: (r.status, r.stream_version) for rid, r in statuses.items() if r} == {
        "t0": (repo.SETTLED, 2),
        "t1": (repo.SETTLED, 3),
        "t2": (repo.OPEN, 1),
        "u1": (repo.OPEN, 1),
    }

"""A casino session is not expired while registration's table-topic consumer lags (issue 28
item 5): a chaos run expired six active THB players whose bets were still in the consumer's
backlog. Idle time is judged against the consumer's progress (``activity.known_until``):
with a backlog, only up to the latest event the consumer has read; caught up, up to now.

Real pieces: registration's TableStatusConsumer (with the casino activity handlers) on an
in-process bus, the event-log collector's lag, the lobby's sweeper with an injected clock.
The table service's CasinoBetPlaced is appended to a table store and published on the bus.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from electric.table.v1 import casino_events_pb2 as tc
from electric_domain.casino.common.config import load_config as load_casino_config
from electric_domain.lobby.casino import CasinoGame
from electric_eventlog import (
    ANY,
    EventStore,
    InProcessBus,
    create_engine,
    envelope_message,
    migrate,
)
from electric_platform.eventmetrics import EventLogCollector
from electric_registration.casino.activity import known_until, register_activity
from electric_registration.casino.lobby import CasinoLobby, ExpirySweeper
from electric_registration.consumers import SOURCE_TOPIC, TableStatusConsumer

from tests.support.casino_setup import FakeClock, registration_engine


async def _scenario(tmp_path: Path) -> None:
    clock = FakeClock()
    engine = registration_engine(tmp_path / "reg.db")
    lobby = CasinoLobby(
        engine, EventStore(engine, producer="registration"), load_casino_config(), clock=clock
    )
    joined = lobby.join(CasinoGame.THB, "alice")
    table_id = joined.session.table_id
    bus = InProcessBus()
    consumer = TableStatusConsumer(engine, bus, lambda _tables: None)
    register_activity(consumer.worker)
    collector = EventLogCollector()
    collector.add_consumer(consumer.worker)
    sweeper = ExpirySweeper(
        lobby, known_until=known_until(consumer.worker, lambda: collector.lag(consumer.worker))
    )
    plain = ExpirySweeper(lobby)  # the wall clock alone (what expired the players before)

    # 19 minutes in, alice bets: the table service stores it and publishes it, but
    # registration's consumer has not read it yet (it lags).
    clock.advance(minutes=19)
    table_engine = create_engine(f"sqlite:///{tmp_path / 'table.db'}")
    migrate(table_engine)
    table_store = EventStore(table_engine, producer="table", clock=lambda: clock())
    bet = tc.CasinoBetPlaced(
        round_id="r-1", table_id=table_id, player_id="alice", bet_id="b-1", spot="ante",
        amount_cents=100,
    )  # fmt: skip
    envelopes = table_store.append_in_new_tx("casino-round-r-1", ANY, [bet])
    await bus.publish([envelope_message(SOURCE_TOPIC, e) for e in envelopes])
    assert collector.lag(consumer.worker) == 1

    # 25 minutes in: by the wall clock alice has been idle 25 minutes, but her bet is in
    # the backlog: nothing is read yet, so the sweep waits.
    clock.advance(minutes=6)
    assert await sweeper.run_once() == [] and sweeper.deferred == 1
    # (the wall clock alone would release her now: idle since the join, 25 > 20 minutes)
    assert lobby.next_expiry() is not None and lobby.next_expiry() <= clock()
    assert lobby.next_expiry() is not None

    # The consumer catches up: her activity at minute 19 is recorded; still not idle.
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.worker.run(stop))
    for _ in range(200):
        if collector.lag(consumer.worker) == 0 and consumer.worker.applied >= 1:
            break
        await asyncio.sleep(0.02)
    assert consumer.worker.progress_at is not None
    assert await sweeper.run_once() == []
    assert await plain.run_once() == []  # caught up, the wall clock agrees

    # 40 minutes in (21 idle since her bet) and caught up: expired.
    clock.advance(minutes=15)
    released = await sweeper.run_once()
    assert [s.player_id for s in released] == ["alice"]
    stop.set()
    await task
    engine.dispose()
    table_engine.dispose()


def test_a_session_is_not_expired_while_the_activity_consumer_lags(tmp_path: Path) -> None:
    asyncio.run(_scenario(tmp_path))


def test_known_until_follows_the_consumer() -> None:
    """The rule itself: caught up → now; behind → the latest event read; behind with nothing
    read, or lag unknown → no expiry yet."""

    class Worker:
        progress_at: datetime | None = None

    worker = Worker()
    lag: list[int | None] = [3]
    until = known_until(worker, lambda: lag[0])  # type: ignore[arg-type]
    now = datetime(2026, 12, 6, 12, 0)
    assert until(now) is None
    worker.progress_at = datetime(2026, 12, 6, 11, 40)
    assert until(now) == worker.progress_at
    lag[0] = None
    assert until(now) is None
    lag[0] = 0
    assert until(now) == now

"""Registration and payout decode no per-action table event (issue 26 item 1).

The whole platform in this loop (in-process bus, SQLite) plays a tournament with bots. Every
``ConsumerWorker`` counts the envelopes it decoded by event type (``decoded``). The table
topic carries every blind, action, turn, card and pot, but:

- registration's ``registration.table-status`` decodes only TableStarted, the table's
  summaries (TableProgress), eliminations and the result, and My Tables still ends right
  (the winner's row: finished, place 1, the whole prize);
- payout's ``payout.table-events`` decodes only HandStarted (the button) and the result;
- both passed over the per-action events by their header (``ignored``).

On the old consumer (registration decoding BlindPosted, ActionTaken, TurnStarted …) the
first assertion fails.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import events_pb2 as tev
from electric_eventlog.consumer import ConsumerWorker

from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(300)

#: What each table-topic consumer may decode.
NEEDS = {
    "registration.table-status": {
        tev.TableStarted,
        tev.TableProgress,
        tev.PlayerEliminated,
        tev.TournamentFinished,
    },
    "payout.table-events": {tev.HandStarted, tev.TournamentFinished},
}
PER_ACTION = {tev.BlindPosted, tev.ActionTaken, tev.TurnStarted, tev.HandEngineEvent}


def _name(cls: Any) -> str:
    return str(cls.DESCRIPTOR.full_name)


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[ConsumerWorker]:
    """Every ConsumerWorker built while the test runs."""
    built: list[ConsumerWorker] = []
    original = ConsumerWorker.__init__

    def init(self: ConsumerWorker, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(ConsumerWorker, "__init__", init)
    return built


def test_table_topic_consumers_decode_only_what_they_need(
    tmp_path: Path, workers: list[ConsumerWorker]
) -> None:
    async def play() -> list[registration_pb2.MyTable]:
        async with embedded_platform(tmp_path) as platform:
            runner = platform.bot_runner(seed=26, player_prefix="dec", until_finished=1)
            stats = await asyncio.wait_for(runner.run(), timeout=240)
            assert stats.tables_finished and not stats.errors, stats
            stub = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
            everything = registration_pb2.MY_TABLES_FILTER_ALL
            for _ in range(100):  # the consumer applies the result a moment after the bots end
                rows: list[registration_pb2.MyTable] = []
                for a in runner.assignments:
                    got = await stub.ListMyTables(
                        registration_pb2.ListMyTablesRequest(status_filter=everything),
                        metadata=platform.md(a.player_id),
                    )
                    rows.extend(got.tables)
                finished = [r for r in rows if r.status == registration_pb2.TABLE_STATUS_FINISHED]
                if finished and all(r.finishing_place for r in finished):
                    return finished
                await asyncio.sleep(0.1)
            raise AssertionError(f"My Tables never showed a finished table: {rows}")

    rows = asyncio.run(play())
    by_name = {w.consumer.name: w for w in workers}
    per_action = {_name(c) for c in PER_ACTION}
    for consumer, needs in NEEDS.items():
        worker = by_name[consumer]
        decoded = set(worker.decoded)
        assert decoded <= {_name(c) for c in needs}, (consumer, decoded - {_name(c) for c in needs})
        assert not decoded & per_action, (consumer, decoded & per_action)
        assert worker.ignored > 0, consumer  # the per-action events came, and were passed over
    registration = by_name["registration.table-status"]
    assert registration.decoded[_name(tev.TableProgress)] > 10
    # My Tables ends right from the summaries and the result alone: a finished table's rows
    # hold places 1..3, and the winner holds every chip (the last summary's stacks).
    by_table: dict[str, list[registration_pb2.MyTable]] = {}
    for r in rows:
        by_table.setdefault(r.table_id, []).append(r)
    full = [t for t in by_table.values() if len(t) == 3]
    assert full, by_table
    for table in full:
        assert sorted(r.finishing_place for r in table) == [1, 2, 3], table
        stacks = sorted(r.my_stack for r in table)
        assert stacks[:2] == [0, 0] and stacks[2] > 0, table
        assert all(r.turn_seat == 0 and not r.my_turn for r in table), table

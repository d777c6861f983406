"""The text client draws a whole tournament from WatchTable and WatchMyTables alone, and what
it drew equals the table's stored events.

Bots play one tournament over gRPC against the four services in this process; the text
client follows the Multi-Table Bar as one of the seated players and draws the table from its
first hand. Every action (seat, kind, chips), pot award and finishing place it drew is
compared with the events decoded from the table service's own event store (not with the
client's parsing of the stream).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_bots.tui import (
    DrawnAction,
    DrawnAward,
    DrawnPlace,
    TableRenderer,
    follow_my_tables,
)
from electric_table.journal import table_stream

from tests.support.platform_kit import Platform, embedded_platform
from tests.support.table_kit import decode_stream

pytestmark = pytest.mark.timeout(360)


def stored_events(platform: Platform, table_id: str) -> list[Any]:
    store = platform.table_manager.store
    with store.engine.connect() as conn:
        return [m for _, m in decode_stream(store.read_stream(conn, table_stream(table_id)))]


def replay(events: list[Any]) -> tuple[list[DrawnAction], list[DrawnAward], list[DrawnPlace]]:
    """Actions, pot awards and places as the stored events record them."""
    actions = [
        DrawnAction(
            m.hand_number,
            m.action_seq,
            m.seat,
            table_pb2.ActionType.Name(m.action).removeprefix("ACTION_TYPE_"),
            m.amount_added,
            m.street_bet,
        )
        for m in events
        if isinstance(m, tev.ActionTaken)
    ]
    awards = [
        DrawnAward(m.hand_number, m.pot_index, w.seat, w.amount)
        for m in events
        if isinstance(m, tev.PotAwarded)
        for w in m.winners
    ]
    places = [
        DrawnPlace(p.place, p.seat, p.player_id, p.prize.cents)
        for m in events
        if isinstance(m, tev.TournamentFinished)
        for p in m.places
    ]
    return actions, awards, places


#: Tournaments the bots play (each drawn whole and compared).
TOURNAMENTS = 2


async def test_text_client_draws_whole_tournaments_as_the_events_replay(tmp_path: Path) -> None:
    async with embedded_platform(tmp_path) as platform:
        runner = platform.bot_runner(
            until_finished=TOURNAMENTS,
            seed=5,
            player_prefix="tui",
            mix=(("random", 3), ("tag", 1)),  # loose players: short tournaments
        )
        watcher = "tui-1"
        lines: list[str] = []
        stop = asyncio.Event()
        drawing = asyncio.create_task(
            follow_my_tables(
                platform.channel("registration"),
                platform.channel("table"),
                lambda: platform.md(watcher),
                lines.append,
                stop=stop,
                tables=TOURNAMENTS,
            )
        )
        stats = await asyncio.wait_for(runner.run(), timeout=240)
        assert len(stats.tables_finished) == TOURNAMENTS and not stats.errors, stats
        renderers: dict[str, TableRenderer] = await asyncio.wait_for(drawing, timeout=60)
        stop.set()
        stored = {tid: stored_events(platform, tid) for tid in stats.tables_finished}

    text = "\n".join(lines)
    print("\n" + text[:6000])
    assert set(renderers) == set(stored)
    for table_id, events in stored.items():
        drawn = renderers[table_id].drawn
        actions, awards, places = replay(events)
        assert actions and awards and len(places) == 3
        print(f"{table_id[:8]}: {len(actions)} actions, {len(awards)} pot awards replayed")
        assert drawn.actions == actions
        assert drawn.awards == awards
        assert drawn.places == places
        # The watcher was seated: every hand's deck seed was revealed and matched.
        hands = [m.hand_number for m in events if isinstance(m, tev.HandStarted)]
        assert drawn.seeds_verified == hands
        # The Multi-Table Bar showed the watcher's finishing place at this table.
        mine = next(p for p in places if p.player_id == watcher)
        name = next(m.table_name for m in events if isinstance(m, tev.TableStarted))
        assert any(
            line.startswith(f"MTB │ [{name}]") and f"finished {mine.place}" in line
            for line in lines
        ), name
    # Every drawn record is on screen: one header per hand, one line per award share.
    assert text.count(" wins ") == sum(len(r.drawn.awards) for r in renderers.values())
    assert text.count("=== Tournament over after") == TOURNAMENTS

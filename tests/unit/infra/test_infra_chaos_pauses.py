"""tests/chaos/pauses.py: a chaos run's longest pauses, told apart by who was waiting."""

from __future__ import annotations

from tests.chaos.pauses import describe, longest_pauses, stream_kind

T0 = 1_765_000_000.0  # 2025-12-06T05:46:40Z


def ev(stream: str, kind: str, at: float) -> tuple[str, str, float]:
    return stream, f"electric.table.v1.{kind}", T0 + at


def test_kinds_of_stream() -> None:
    assert stream_kind("table-828284b9") == "tournament_table"
    assert stream_kind("casino-uth-r-0a1b") == "uth_round"
    assert stream_kind("casino-5f3e") == "thb_round"
    assert stream_kind("wallet-acct-1") is None


def test_a_thb_round_waiting_for_its_player_is_the_players_time() -> None:
    # dealt, then the bot came back 500 s later (drained, or an unfinished round resumed):
    # no player waited for the house
    events = [
        ev("casino-t1", "CasinoRoundStarted", 0),
        ev("casino-t1", "CasinoHoleCardsDealt", 0),
        ev("casino-t1", "CasinoDecisionMade", 500),
        ev("casino-t1", "CasinoBoardDealt", 512),  # the house took 12 s to deal the turn
    ]
    got = longest_pauses(events)["thb_round"]
    assert got["player"]["seconds"] == 500
    assert (got["player"]["after"], got["player"]["before"]) == (
        "CasinoHoleCardsDealt",
        "CasinoDecisionMade",
    )
    assert got["house"]["seconds"] == 12
    assert got["house"]["before"] == "CasinoBoardDealt"


def test_clocked_games_are_the_houses_whatever_ends_the_gap() -> None:
    # a UTH decision taken 40 s after the window opened: the window is 15 s, so the house
    # paused; likewise an Act 90 s after the turn started at a tournament table
    events = [
        ev("casino-uth-r-1", "CasinoDecisionWindowOpened", 0),
        ev("casino-uth-r-1", "CasinoDecisionMade", 40),
        ev("table-a", "TurnStarted", 100),
        ev("table-b", "TurnStarted", 101),
        ev("table-a", "ActionTaken", 190),
        ev("table-b", "ActionTaken", 102),
    ]
    got = longest_pauses(events)
    assert set(got["uth_round"]) == {"house"}
    assert got["uth_round"]["house"]["seconds"] == 40
    # a result acknowledged long after the round ended is the player's time, even at UTH
    ended = [
        ev("casino-uth-r-2", "CasinoRoundEnded", 0),
        ev("casino-uth-r-2", "CasinoResultAcknowledged", 3000),
    ]
    assert set(longest_pauses(ended)["uth_round"]) == {"player"}
    assert got["tournament_table"]["house"] == {
        "seconds": 90,
        "stream": "table-a",
        "after": "TurnStarted",
        "before": "ActionTaken",
        "began": "2025-12-06T05:48:20+00:00",
    }


def test_streams_are_not_mixed_and_others_are_left_out() -> None:
    events = [
        ev("table-a", "HandStarted", 0),
        ev("table-b", "HandStarted", 50),  # another table: no gap of table-a
        ev("wallet-x", "Posted", 60),
        ev("wallet-x", "Posted", 900),
        ev("table-a", "CardsDealt", 1),
    ]
    got = longest_pauses(events)
    assert list(got) == ["tournament_table"]
    assert got["tournament_table"]["house"]["seconds"] == 1


def test_summary_lines_name_both_sides() -> None:
    events = [
        ev("casino-t1", "CasinoHoleCardsDealt", 0),
        ev("casino-t1", "CasinoDecisionMade", 30),
        ev("casino-t1", "CasinoBoardDealt", 31),
    ]
    lines = describe(longest_pauses(events))
    assert lines[0].startswith("longest pause a player saw (thb_round): 1.0s on casino-t1")
    assert "waited for a player (thb_round): 30.0s" in lines[1]
    assert "CasinoHoleCardsDealt → CasinoDecisionMade" in lines[1]

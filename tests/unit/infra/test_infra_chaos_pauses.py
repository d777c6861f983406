"""tests/chaos/pauses.py: a chaos run's longest pauses, told apart by what ended them."""

from __future__ import annotations

from tests.chaos.pauses import describe, longest_pauses, stream_kind

T0 = 1_765_000_000.0  # 2025-12-06T05:46:40Z


def ev(stream: str, kind: str, at: float) -> tuple[str, str, float]:
    return stream, f"electric.table.v1.{kind}", T0 + at


def test_kinds_of_stream() -> None:
    assert stream_kind("table-828284b9") == "tournament_table"
    assert stream_kind("casino-uth-r-0a1b") == "uth_round"
    assert stream_kind("casino-thb-r-5f3e") == "thb_round"
    assert stream_kind("casino-table-uth-1") is None  # registration's, not a round
    assert stream_kind("wallet-acct-1") is None


def test_clocked_games_wait_for_the_house_whatever_ends_the_gap() -> None:
    # a UTH decision taken 40 s after its 15 s window opened: the house paused; likewise an
    # Act 90 s after the turn started at a tournament table (bots think 2 s at most)
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
    assert got["tournament_table"]["house"] == {
        "seconds": 90,
        "stream": "table-a",
        "after": "TurnStarted",
        "before": "ActionTaken",
        "began": "2025-12-06T05:48:20+00:00",
    }


def test_a_late_acknowledgement_and_a_void_are_told_apart() -> None:
    # a UTH result acknowledged 3,000 s after the round ended (the bot's leftovers at the
    # end of its play): nobody waited; a THB round voided by the sweep after its Decide
    # failed for good; a THB Decide answered 25 s after the Deal (a failover): the house's
    events = [
        ev("casino-uth-r-2", "CasinoRoundEnded", 0),
        ev("casino-uth-r-2", "CasinoResultAcknowledged", 3000),
        ev("casino-thb-r-1", "CasinoHoleCardsDealt", 0),
        ev("casino-thb-r-1", "CasinoRoundVoided", 130),
        ev("casino-thb-r-2", "CasinoHoleCardsDealt", 0),
        ev("casino-thb-r-2", "CasinoDecisionMade", 25),
        ev("casino-thb-r-2", "CasinoBoardDealt", 25),  # same append, same time
    ]
    got = longest_pauses(events)
    assert set(got["uth_round"]) == {"ack"}
    assert got["uth_round"]["ack"]["seconds"] == 3000
    assert got["thb_round"]["void"]["seconds"] == 130
    assert got["thb_round"]["house"]["seconds"] == 25
    assert got["thb_round"]["house"]["before"] == "CasinoDecisionMade"


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


def test_summary_lines_name_each_side() -> None:
    events = [
        ev("casino-thb-r-1", "CasinoHoleCardsDealt", 0),
        ev("casino-thb-r-1", "CasinoDecisionMade", 30),
        ev("casino-thb-r-1", "CasinoResultAcknowledged", 31),
    ]
    lines = describe(longest_pauses(events))
    assert lines[0] == (
        "longest pause a player waited for the house (thb_round): 30.0s on casino-thb-r-1, "
        "CasinoHoleCardsDealt → CasinoDecisionMade, from 2025-12-06T05:46:40+00:00"
    )
    assert lines[1].startswith("longest pause before a result was acknowledged (thb_round): 1.0s")

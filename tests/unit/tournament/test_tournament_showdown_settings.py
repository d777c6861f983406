"""Show or muck at showdown from the players' settings (issue 11 gap 6; seed 000 rule 10
"The Showdown" and the settings "Muck Winning Hands" / "Muck Losing Hands"). The exact rule
is in docs/tournament-rules.md "Showdown: show or muck"; each test names its clause."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from electric_domain.holdem import HandMucked, HandShown
from electric_domain.tournament.engine_adapter import DeckEscrowed, WinnerShown
from electric_domain.tournament.events import Event, ShowSettings

from tests.support.tournament_table import Table, hand_events

# Hand 1: button seat 2, SB seat 0, BB seat 1; after the flop seat 0 acts first, and with no
# bet on the river seat 0 (first left of the button) shows first.
BOARD = "Qd9c5s3h8d"
HOLE = {0: "AsAh", 1: "7c2d", 2: "KsKh"}  # seat 0 best, seat 2 second, seat 1 worst
MUCK = ShowSettings()
SHOW_LOSING = ShowSettings(muck_losing=False)
SHOW_WINNING = ShowSettings(muck_winning=False)


@pytest.fixture
def table() -> Iterator[Table]:
    tb = Table()
    yield tb
    tb.check_replay()  # the settings are in the hand's events: replay decides the same


def _check_down(table: Table, settings: tuple[ShowSettings, ...]) -> list[Event]:
    ev = table.deal(1_000, HOLE, BOARD, settings)
    return ev + table.passive(2_000)


def _shown(ev: list[Event]) -> list[int]:
    return [e.player for e in hand_events(ev, HandShown)]


def test_defaults_first_shows_then_only_better_hands(table: Table) -> None:
    """rule 10: with no bet on the river the first seat left of the dealer shows first; the
    others show only with a better hand — beaten hands are mucked (both settings on)."""
    ev = _check_down(table, (MUCK, MUCK, MUCK))
    assert _shown(ev) == [0]
    assert sorted(e.player for e in hand_events(ev, HandMucked)) == [1, 2]


def test_muck_losing_off_shows_a_beaten_hand(table: Table) -> None:
    """Muck Losing Hands off: a hand the rules let the player muck is shown instead."""
    ev = _check_down(table, (MUCK, SHOW_LOSING, MUCK))
    assert _shown(ev) == [0, 1]  # still in the showdown order
    assert [e.player for e in hand_events(ev, HandMucked)] == [2]
    escrow = hand_events(ev, DeckEscrowed)[0]
    assert escrow.show_beaten == (1,)  # recorded in the hand's events


def test_first_to_show_shows_regardless_of_muck_losing(table: Table) -> None:
    """rule 10: the first player to show (here: first left of the dealer, with the worst
    hand) must show even with Muck Losing Hands on; later better hands show too."""
    hole = {0: "7c2d", 1: "AsAh", 2: "KsKh"}
    ev = table.deal(1_000, hole, BOARD, (MUCK, MUCK, MUCK)) + table.passive(2_000)
    assert _shown(ev) == [0, 1]
    assert [e.player for e in hand_events(ev, HandMucked)] == [2]


def test_winning_hand_is_shown_at_showdown_even_with_muck_winning_on(table: Table) -> None:
    """rule 10: a hand that can win must be shown to win; Muck Winning Hands only applies
    where the rules allow a muck (a hand won without a showdown)."""
    hole = {0: "7c2d", 1: "KsKh", 2: "AsAh"}
    ev = table.deal(1_000, hole, BOARD, (MUCK, MUCK, MUCK)) + table.passive(2_000)
    assert _shown(ev) == [0, 1, 2]


def test_uncontested_winner_shows_only_with_muck_winning_off(table: Table) -> None:
    """Muck Winning Hands off: the player who wins without a showdown shows the hand; on
    (the default) it stays hidden."""
    table.deal(1_000, HOLE, BOARD, (MUCK, MUCK, MUCK))
    table.act(2, "fold", 2_000)
    ev = table.act(0, "fold", 3_000)  # the big blind (seat 1) wins uncontested
    assert not hand_events(ev, WinnerShown)
    assert table.t.view(0, 3_000).seats[1].hole_cards == ()
    table.deal(6_000, HOLE, BOARD, (MUCK, MUCK, SHOW_WINNING))  # button 0, SB 1, BB 2
    table.act(0, "fold", 7_000)
    ev = table.act(1, "fold", 8_000)  # seat 2 wins uncontested and shows
    shown = hand_events(ev, WinnerShown)
    assert [(w.seat, len(w.cards)) for w in shown] == [(2, 2)]
    assert len(table.t.view(0, 8_000).seats[2].hole_cards) == 2  # others see them
    assert table.t.view(None, 8_000).seats[2].hole_cards != ()


def test_all_in_exposure_ignores_the_settings(table: Table) -> None:
    """rule: all-in with no further betting possible — every hand is exposed, whatever
    the settings (docs/holdem-rules.md "Showdown")."""
    table.deal(1_000, HOLE, BOARD, (MUCK, MUCK, MUCK))
    table.act(2, "all_in", 2_000)
    table.act(0, "call", 3_000)
    ev = table.act(1, "call", 4_000)
    assert sorted(_shown(ev)) == [0, 1, 2]
    assert not hand_events(ev, HandMucked)

"""Hand-history export of a player all-in from the ante alone (posts nothing else, never acts),
in hands played by our engine: 3-handed in every position, heads-up both ways, two such
players at one table. pokerkit lists them among the players of both formats, replays the
PHH to the recorded stacks and reads the PokerStars text back (antes as posted, a short ante
counted like any chip). When both blind posters are all-in from the ante no blind is posted
at all, and pokerkit's PokerStars parser cannot build the game (it takes the minimum bet from
the blinds posted): that hand alone fails, at that hand; its PHH still replays."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest
from electric.common.v1 import tournament_pb2
from electric.table.v1 import events_pb2 as tev
from electric_audit.export import phhs_document, pokerstars_document
from electric_audit.hands import Hand, replay_hand
from electric_audit.pokerstars import pokerstars_text
from electric_audit.validate import ante_parser, validate_documents
from electric_domain.holdem import HoldemHand
from pokerkit.notation import HandHistory

ANTE = 5


def _hand(k: int, stacks: list[int], button: int) -> Hand:
    """A hand played by the engine (everyone checks or calls down), recorded."""
    h = HoldemHand.start(stacks, button, 5, 10, ANTE, seed=bytes([k + 1]) * 32)
    while not h.is_complete:
        la = h.legal_actions()
        assert la is not None
        h.check() if la.can_check else h.call()
    seats = tuple(i + 1 for i in range(len(stacks)))
    return Hand(
        table_id=f"table-a{k}",
        table_name=f"Table {k}",
        number=k + 1,
        started=tev.HandStarted(
            deck_commitment="ab" * 32,
            level=tournament_pb2.BlindLevel(level=3, small_blind=5, big_blind=10, ante=ANTE),
        ),
        started_at=datetime(2026, 12, 1, 9, 0, k, tzinfo=UTC),
        location=f"store:table.db stream table-a{k} version 1 position 1",
        roster={s: (f"player-{s}", f"Player {s}") for s in seats},
        buy_in_cents=100,
        events=list(h.events),
        seats=seats,
        ended=tev.HandEnded(
            deck_seed="cd" * 32,
            stacks=[tev.SeatStack(seat=s, stack=h.stacks[i]) for i, s in enumerate(seats)],
        ),
    )


#: (stacks by seat, button index): a stack of at most the ante is all-in from the ante.
CASES = [
    ([3, 500, 500], 0),  # the button
    ([500, 3, 500], 0),  # the small blind
    ([500, 500, 3], 0),  # the big blind
    ([500, 500, 5], 0),  # exactly the ante
    ([3, 500], 0),  # heads-up, the button (small blind)
    ([500, 3], 0),  # heads-up, the big blind
    ([500, 4, 500, 2], 1),  # two of them
]


@pytest.fixture(scope="module")
def hands() -> list[Hand]:
    return [_hand(k, stacks, button) for k, (stacks, button) in enumerate(CASES)]


def test_they_export_and_pokerkit_reads_both_formats(hands: list[Hand]) -> None:
    for hand in hands:
        assert replay_hand(hand).ok, hand.hand_id
    result = validate_documents(hands, phhs_document(hands), pokerstars_document(hands))
    assert result.failures == []
    assert result.phh_checked == result.text_checked == len(hands)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pokerkit_lists_them_and_replays_them_to_their_stacks(hands: list[Hand]) -> None:
    for hand, (stacks, _) in zip(hands, CASES, strict=True):
        short = {f"Player {i + 1}" for i, s in enumerate(stacks) if s <= ANTE}
        (phh,) = HandHistory.loads_all(phhs_document([hand]))
        assert short <= set(phh.players)
        finishing = list(list(phh)[-1].stacks)
        recorded = {hand.roster[s.seat][1]: s.stack for s in hand.ended.stacks}
        assert finishing == [recorded[p] for p in phh.players]
        (text,) = ante_parser()(pokerstars_text(hand), error_status=True)
        assert short <= set(text.players)
        for name in short:
            assert f"{name}: posts the ante {stacks[int(name.split()[1]) - 1]} and is all-in" in (
                pokerstars_text(hand)
            )


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_short_ante_is_live_money_not_dead() -> None:
    """Why the validator replays the text with ``ante_trimming_status`` on: with pokerkit's
    default every ante is dead money in the main pot, and a player all-in for 3 of a 5 ante
    who wins would collect the others' whole antes."""
    # the button all-in for 3, in the first deal where they win the main pot
    hand = next(h for k in range(30, 90) if (h := _hand(k, [3, 500, 500], 0)).ended.stacks[0].stack)
    (text,) = ante_parser()(pokerstars_text(hand), error_status=True)
    recorded = {hand.roster[s.seat][1]: s.stack for s in hand.ended.stacks}
    want = [recorded[p] for p in text.players]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dead = list(list(text)[-1].stacks)
        text.ante_trimming_status = True
        live = list(list(text)[-1].stacks)
    assert live == want and dead != want


def test_no_blind_posted_fails_that_hand_alone(hands: list[Hand]) -> None:
    both = _hand(20, [500, 2, 3], 0)  # small and big blind all-in from the ante
    assert replay_hand(both).ok
    document = [hands[0], both, hands[2]]
    result = validate_documents(document, phhs_document(document), pokerstars_document(document))
    assert len(result.failures) == 1, result.failures
    assert result.failures[0].startswith(f"hand {both.hand_id} (PokerStars text): pokerkit")
    assert "minimum" in result.failures[0]
    assert result.phh_checked == result.text_checked == 3  # its PHH and the others pass

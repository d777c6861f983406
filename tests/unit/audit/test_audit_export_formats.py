"""Hand-history export: PHH and PokerStars-style text of hands played by our engine, read back
by pokerkit (an independent parser) — every hand, with and without antes, 2 to 6 players,
all-ins and side pots — and a tampered text or record is caught."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from electric.common.v1 import tournament_pb2
from electric.table.v1 import events_pb2 as tev
from electric_audit import hands as audit_hands
from electric_audit.export import phh_text, phhs_document, pokerstars_document
from electric_audit.hands import Hand, replay_hand
from electric_audit.pokerstars import pokerstars_text
from electric_audit.validate import ante_parser, validate_documents
from electric_domain.holdem import HoldemHand
from electric_domain.phh import replay_text
from pokerkit.notation import HandHistory, PokerStarsParser


def _play(k: int, rng: random.Random, ante: int) -> HoldemHand:
    n = rng.randint(2, 6)
    stacks = [rng.choice((15, 60, 400, 2000)) for _ in range(n)]
    h = HoldemHand.start(stacks, rng.randrange(n), 5, 10, ante, seed=bytes([k % 256]) * 32)
    while not h.is_complete:
        la = h.legal_actions()
        assert la is not None
        r = rng.random()
        if la.can_raise and r < 0.3:
            h.raise_to(la.min_raise_to) if not la.is_bet else h.bet(la.min_raise_to)
        elif la.can_raise and r < 0.4:
            h.all_in()
        elif la.can_fold and r < 0.5:
            h.fold()
        else:
            h.check() if la.can_check else h.call()
    return h


def _hand(k: int, h: HoldemHand) -> Hand:
    """A recorded hand as the table stream would give it (seats 2, 4, ...: not 1..n)."""
    n = h.config.players
    seats = tuple(2 * i + 2 for i in range(n))
    return Hand(
        table_id=f"table-{k}",
        table_name=f"Table {k}",
        number=k + 1,
        started=tev.HandStarted(
            deck_commitment="ab" * 32,
            level=tournament_pb2.BlindLevel(level=3, small_blind=5, big_blind=10, ante=2),
        ),
        started_at=datetime(2026, 12, 1, 8, 30, k % 60, tzinfo=UTC),
        location=f"store:table.db stream table-{k} version 1 position 1",
        roster={s: (f"player-{s}", f"Player {s}") for s in seats},
        buy_in_cents=500,
        events=list(h.events),
        seats=seats,
        ended=tev.HandEnded(
            deck_seed="cd" * 32,
            stacks=[tev.SeatStack(seat=s, stack=h.stacks[i]) for i, s in enumerate(seats)],
        ),
    )


@pytest.fixture(scope="module")
def played() -> list[Hand]:
    rng = random.Random(11)
    return [_hand(k, _play(k, rng, ante=(0, 2)[k % 2])) for k in range(240)]


def test_every_hand_replays_through_our_engine(played: list[Hand]) -> None:
    for hand in played:
        assert replay_hand(hand).ok, hand.hand_id


def test_pokerkit_reads_both_formats_of_every_hand(played: list[Hand]) -> None:
    result = validate_documents(played, phhs_document(played), pokerstars_document(played))
    assert result.failures == []
    assert result.phh_checked == result.text_checked == len(played)


def test_pokerkits_own_pokerstars_parser_reads_hands_without_antes(played: list[Hand]) -> None:
    no_antes = [h for h in played if h.events[0].config.ante == 0]  # type: ignore[union-attr]
    assert len(no_antes) >= 100
    result = validate_documents(
        no_antes, phhs_document(no_antes), pokerstars_document(no_antes), PokerStarsParser()
    )
    assert result.failures == [] and result.text_checked == len(no_antes)


def test_pokerkits_own_parser_misses_ante_lines(played: list[Hand]) -> None:
    """Why the validator sets the ante pattern: without it pokerkit replays ante hands
    without their antes, so the stacks (or the legality of later actions) are wrong."""
    with_antes = [h for h in played if h.events[0].config.ante > 0][:40]  # type: ignore[union-attr]
    plain = validate_documents(
        with_antes, phhs_document(with_antes), pokerstars_document(with_antes), PokerStarsParser()
    )
    assert plain.failures
    fixed = validate_documents(
        with_antes, phhs_document(with_antes), pokerstars_document(with_antes)
    )
    assert fixed.failures == []


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_phh_metadata_and_pokerkit_fields(played: list[Hand]) -> None:
    hand = played[1]
    hh = HandHistory.loads(phh_text(hand))
    n = len(hand.seats)
    assert hh.hand == hand.number and hh.table == hand.table_name
    assert hh.currency == "USD" and (hh.day, hh.month, hh.year) == (1, 12, 2026)
    assert sorted(hh.seats) == sorted(hand.seats) and len(hh.players) == n
    assert hh.user_defined_fields["_hand_id"] == hand.hand_id
    assert hh.user_defined_fields["_player_ids"] == [hand.roster[s][0] for s in hh.seats]
    text = pokerstars_text(hand)
    assert text.startswith("PokerStars Hand #") and "Hold'em No Limit" in text
    (ps,) = ante_parser()(text, error_status=True)
    assert ps.players == hh.players and list(ps.starting_stacks) == list(hh.starting_stacks)


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("a starting stack", lambda t: t.replace(" in chips)", "1 in chips)", 1)),
        ("a folded hand", lambda t: t.replace(": folds\n", ": checks\n", 1)),
        ("a collected amount", lambda t: t.replace(" collected (", " collected (1", 1)),
        ("a dealt card", lambda t: t.replace("*** FLOP *** [", "*** FLOP *** [2c 2d 2h] [", 1)),
    ],
)
def test_a_changed_text_is_caught(played: list[Hand], what: str, change: object) -> None:
    assert callable(change)
    caught = 0
    for hand in played[:60]:
        text = pokerstars_text(hand)
        tampered = change(text)
        if tampered == text:
            continue
        result = validate_documents([hand], phh_text(hand), tampered)
        assert not result.ok, (what, tampered)
        caught += 1
    assert caught >= 5, what


def test_a_changed_record_fails_the_replay(played: list[Hand]) -> None:
    hand = played[3]
    assert hand.ended is not None
    hand.ended.stacks[0].stack += 1
    verdict = replay_hand(hand)
    assert not verdict.ok and "HandEnded gives seat" in verdict.reason
    hand.ended.stacks[0].stack -= 1
    assert replay_hand(hand).ok


def test_the_record_codec_is_the_table_services() -> None:
    from electric_table.tournament import codec

    assert audit_hands.CODEC.tags == codec.CODEC.tags


def test_the_casino_record_codec_is_the_table_services() -> None:
    from electric_audit import rounds
    from electric_table.casino.thb import records

    assert rounds.CODEC.tags == records.CODEC.tags


FOLD_WITH_NOTHING_TO_CALL = """variant = 'NT'
antes = [0, 0]
blinds_or_straddles = [10, 20]
min_bet = 20
starting_stacks = [960, 540]
actions = ['d dh p1 KcAs', 'd dh p2 Jd8c', 'p2 cc', 'p1 f']
"""
# Heads-up, the big blind (p1) has only 9 chips: posts 9, all-in.
SHORT_BIG_BLIND = """variant = 'NT'
antes = [0, 0]
blinds_or_straddles = [10, 20]
min_bet = 20
starting_stacks = [9, 1491]
actions = ['d dh p1 6c7s', 'd dh p2 7d7c', 'd db 4c8cKs', 'd db 5d', 'd db Kh']
"""


@pytest.mark.parametrize(
    ("text", "stacks"), [(FOLD_WITH_NOTHING_TO_CALL, [940, 560]), (SHORT_BIG_BLIND, [18, 1482])]
)
def test_hands_seen_on_the_platform_export_and_read_back(text: str, stacks: list[int]) -> None:
    """Two cases found in real runs: a fold with nothing to call (our tables always offer
    fold; pokerkit replays it with a warning) and a big blind shorter than the blind."""
    (played,) = replay_text(text, multi=False, keep_events=True)
    assert played.error is None and list(played.minor_stacks or ()) == stacks
    n = len(stacks)
    seats = tuple(range(1, n + 1))
    hand = Hand(
        table_id="t-seen",
        table_name="Seen",
        number=1,
        started=tev.HandStarted(),
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
        location="here",
        roster={s: (f"p-{s}", "") for s in seats},
        events=list(played.events),
        seats=seats,
        ended=tev.HandEnded(stacks=[tev.SeatStack(seat=s, stack=stacks[s - 1]) for s in seats]),
    )
    assert replay_hand(hand).ok
    result = validate_documents([hand], phhs_document([hand]), pokerstars_document([hand]))
    assert result.failures == [] and result.phh_checked == result.text_checked == 1

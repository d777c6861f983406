"""Evaluator wrapper: descriptions, categories, best five, agreement with eval7 on samples."""

from __future__ import annotations

import random
from itertools import combinations

import eval7
import pytest
from electric_domain.cards import card_str, parse_cards
from electric_domain.evaluator import Category, category_of, evaluate, rank, rank7


@pytest.mark.parametrize(
    ("cards", "description", "category"),
    [
        ("KsKdKh7c7d2s3c", "Full House, Kings full of Sevens", Category.FULL_HOUSE),
        ("AsAd8h8c2s3d4h", "Two Pair, Aces and Eights", Category.TWO_PAIR),
        ("As2d3h4c5s9dJh", "Straight, Five high", Category.STRAIGHT),
        ("AsKsQsJsTs2c3d", "Royal Flush", Category.STRAIGHT_FLUSH),
        ("5h4h3h2hAh9dKc", "Straight Flush, Five high", Category.STRAIGHT_FLUSH),
        ("9c9dQh2s5h7c8d", "Pair of Nines", Category.PAIR),
        ("AcTd8s6h4c3d2s", "High Card, Ace", Category.HIGH_CARD),
        ("5s5d5h5cAs2d3d", "Four of a Kind, Fives", Category.FOUR_OF_A_KIND),
        ("QcQdQh9s2s3d4h", "Three of a Kind, Queens", Category.THREE_OF_A_KIND),
        ("Ah9h7h4h2hKsKd", "Flush, Ace high", Category.FLUSH),
        ("TcJdQhKsAc", "Straight, Ace high", Category.STRAIGHT),
    ],
)
def test_descriptions(cards: str, description: str, category: Category) -> None:
    v = evaluate(parse_cards(cards))
    assert v.description == description
    assert v.category is category
    assert category_of(v.rank) is category


def test_rank_order_textbook_examples() -> None:
    def r(s: str) -> int:
        return rank(parse_cards(s))

    assert r("AsKsQsJsTs") == 7462
    assert r("7c5d4h3s2c") == 1
    assert r("As2d3h4c5s") < r("2s3d4h5c6s")  # the wheel is the lowest straight
    assert r("AsAdKsKdQc") > r("AsAdKsKdJc")  # kicker
    assert r("AsAd8h8c2s3d4h") == r("AdAs8c8h4h3d2s")  # order does not matter


_E7_CATEGORY = {
    "High Card": Category.HIGH_CARD,
    "Pair": Category.PAIR,
    "Two Pair": Category.TWO_PAIR,
    "Trips": Category.THREE_OF_A_KIND,
    "Straight": Category.STRAIGHT,
    "Flush": Category.FLUSH,
    "Full House": Category.FULL_HOUSE,
    "Quads": Category.FOUR_OF_A_KIND,
    "Straight Flush": Category.STRAIGHT_FLUSH,
}


def test_sample_agrees_with_an_independent_library() -> None:
    """20,000 random 7-card hands: same category and same ordering as eval7."""
    rng = random.Random(2026)
    e7 = [eval7.Card(card_str(c)) for c in range(52)]
    prev: tuple[int, int] | None = None
    for _ in range(20_000):
        cards = rng.sample(range(52), 7)
        ours = rank7(*cards)
        theirs = eval7.evaluate([e7[c] for c in cards])
        assert category_of(ours) is _E7_CATEGORY[eval7.handtype(theirs)], cards
        if prev is not None:
            assert (ours > prev[0]) == (theirs > prev[1]), cards
            assert (ours == prev[0]) == (theirs == prev[1]), cards
        prev = (ours, theirs)


def test_best_five_is_a_subset_with_the_same_rank() -> None:
    rng = random.Random(7)
    for _ in range(500):
        cards = rng.sample(range(52), 7)
        v = evaluate(cards)
        assert set(v.best_five) <= set(cards) and len(v.best_five) == 5
        assert rank(v.best_five) == v.rank == rank(cards)
        assert max(rank(c) for c in combinations(cards, 5)) == v.rank


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        evaluate([0, 1, 2, 3])
    with pytest.raises(ValueError):
        evaluate([0, 0, 1, 2, 3])

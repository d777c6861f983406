"""Hold'em engine benchmarks: hands/s vs PokerKit, 7-card evaluations/s, corpus replay time.

Workload (identical for both engines): 3-handed, 500-chip stacks, blinds 10/20 (Electric
defaults), the same pre-shuffled decks, and the same seeded random policy over the legal
actions (fold 15 %, min-raise 20 %, all-in 5 %, else check/call), so both engines play the
same hands. PokerKit is driven with its automations for posting, collecting, burning, showdown
and pushing chips; cards are dealt explicitly from our decks.
"""

from __future__ import annotations

import random
import time
import warnings
from pathlib import Path

from bench import Row

_ROOT = Path(__file__).resolve().parents[1]
#: The vendored Pluribus corpus (tests/data/conformance/README.md).
_CORPUS = _ROOT / "tests" / "data" / "conformance" / "pluribus-10000.phhs"


def _decks(n: int) -> list[list[int]]:
    rng = random.Random(2026)
    out = []
    for _ in range(n):
        d = list(range(52))
        rng.shuffle(d)
        out.append(d)
    return out


def _choose(rng: random.Random, can_fold: bool, can_raise: bool) -> str:
    r = rng.random()
    if can_fold and r < 0.15:
        return "fold"
    if can_raise and r < 0.35:
        return "min"
    if can_raise and r < 0.40:
        return "max"
    return "cc"


def _ours(decks: list[list[int]]) -> tuple[float, int]:
    from electric_domain.holdem import HoldemHand

    rng = random.Random(7)
    actions = 0
    t0 = time.perf_counter()
    for deck in decks:
        h = HoldemHand.start((500, 500, 500), 0, 10, 20, deck=deck)
        while not h.is_complete:
            la = h.legal_actions()
            assert la is not None
            c = _choose(rng, la.can_fold, la.can_raise)
            if c == "fold":
                h.fold()
            elif c == "min":
                h.bet(la.min_raise_to) if la.is_bet else h.raise_to(la.min_raise_to)
            elif c == "max":
                h.all_in()
            elif la.can_check:
                h.check()
            else:
                h.call()
            actions += 1
    return time.perf_counter() - t0, actions


def _pokerkit(decks: list[list[int]]) -> tuple[float, int]:
    from electric_domain.cards import card_str
    from pokerkit import Automation, Card, Mode, NoLimitTexasHoldem

    pk_card = [next(iter(Card.parse(card_str(c)))) for c in range(52)]
    automations = (
        Automation.ANTE_POSTING,
        Automation.BET_COLLECTION,
        Automation.BLIND_OR_STRADDLE_POSTING,
        Automation.CARD_BURNING,
        Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
        Automation.HAND_KILLING,
        Automation.CHIPS_PUSHING,
        Automation.CHIPS_PULLING,
    )
    rng = random.Random(7)
    actions = 0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for deck in decks:
            st = NoLimitTexasHoldem.create_state(
                automations, True, 0, (10, 20), 20, (500, 500, 500), 3, mode=Mode.TOURNAMENT
            )
            # our dealing convention, pokerkit order p0 = left of the button = our player 1
            for j in range(3):
                st.deal_hole((pk_card[deck[j]], pk_card[deck[3 + j]]))
            board = iter(((7, 8, 9), (11,), (13,)))
            while st.status:
                if st.can_deal_board():
                    st.deal_board([pk_card[deck[i]] for i in next(board)])
                    continue
                can_raise = st.can_complete_bet_or_raise_to()
                c = _choose(rng, st.can_fold(), can_raise)
                if c == "fold":
                    st.fold()
                elif c == "min":
                    st.complete_bet_or_raise_to(st.min_completion_betting_or_raising_to_amount)
                elif c == "max":
                    st.complete_bet_or_raise_to(st.max_completion_betting_or_raising_to_amount)
                else:
                    st.check_or_call()
                actions += 1
    return time.perf_counter() - t0, actions


def _evals() -> list[Row]:
    import eval7
    import treys
    from electric_domain.cards import card_str
    from electric_domain.evaluator import evaluate, rank7
    from phevaluator import _pheval
    from pokerkit import Card, StandardHighHand

    rng = random.Random(11)
    hands = [tuple(rng.sample(range(52), 7)) for _ in range(200_000)]

    def rate(fn, items) -> float:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        for h in items:
            fn(*h)
        return len(items) / (time.perf_counter() - t0)

    ours = rate(rank7, hands)
    raw = rate(_pheval.evaluate_7cards, hands)
    e7c = [eval7.Card(card_str(c)) for c in range(52)]
    e7h = [([e7c[c] for c in h],) for h in hands]
    e7 = rate(eval7.evaluate, e7h)
    tc = [treys.Card.new(card_str(c)) for c in range(52)]
    te = treys.Evaluator()
    th = [([tc[c] for c in h[:2]], [tc[c] for c in h[2:]]) for h in hands[:30_000]]
    tr = rate(te.evaluate, th)
    pc = [next(iter(Card.parse(card_str(c)))) for c in range(52)]
    ph = [([pc[c] for c in h[:2]], [pc[c] for c in h[2:]]) for h in hands[:3_000]]
    pk = rate(StandardHighHand.from_game, ph)
    full = rate(lambda *h: evaluate(h), hands[:20_000])
    return [
        Row("engine", "7-card evals: our rank7 wrapper", ours, "evals/s", "raw phevaluator", raw),
        Row("engine", "7-card evals: eval7 (raw)", e7, "evals/s", "raw phevaluator", raw),
        Row("engine", "7-card evals: treys (raw)", tr, "evals/s", "raw phevaluator", raw),
        Row("engine", "7-card evals: pokerkit (raw)", pk, "evals/s", "raw phevaluator", raw),
        Row(
            "engine",
            "7-card evaluate() with best five + text",
            full,
            "evals/s",
            "our rank7 wrapper",
            ours,
        ),
    ]


def _corpus() -> list[Row]:
    if not _CORPUS.exists():
        return [Row("engine", "corpus replay (10,000 hands)", 0.0, "s", note="corpus missing")]
    from electric_domain.phh import replay_text

    text = _CORPUS.read_text(encoding="utf-8")
    t0, c0 = time.perf_counter(), time.process_time()
    results = list(replay_text(text, multi=True))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    errors = sum(1 for r in results if r.error)
    return [
        Row(
            "engine",
            "corpus replay: parse + replay 10,000 PHH hands",
            elapsed,
            "s",
            note=f"target < 2 s; CPU {cpu:.2f} s; {errors} errors",
        )
    ]


def run() -> list[Row]:
    ours_decks = _decks(4000)
    pk_decks = ours_decks[:400]
    t_ours, a_ours = _ours(ours_decks)
    t_pk, a_pk = _pokerkit(pk_decks)
    ours_rate = len(ours_decks) / t_ours
    pk_rate = len(pk_decks) / t_pk
    ours_same, a_same = _ours(pk_decks)
    rows = [
        Row(
            "engine",
            "hands/s, 3-handed random play (HoldemHand)",
            ours_rate,
            "hands/s",
            "pokerkit 0.7.7",
            pk_rate,
            note=f"target >= 10x; {a_ours / len(ours_decks):.1f} actions/hand",
        ),
        Row(
            "engine",
            "same 400 hands, ours",
            len(pk_decks) / ours_same,
            "hands/s",
            "pokerkit 0.7.7",
            pk_rate,
            note=f"actions/hand: ours {a_same / len(pk_decks):.2f}, pokerkit "
            f"{a_pk / len(pk_decks):.2f}",
        ),
    ]
    return rows + _evals() + _corpus()

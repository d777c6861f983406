"""Differential test: our hold'em engine against PokerKit (test-only dependency).

20,000 random hands, 2–6 players, antes, very short stacks (forced and incomplete all-ins,
several side pots) and forced ties (a board that plays for everyone). At every decision point
the actor, fold/check options, call amount and min/max raise-to must be identical; at the end
the final stacks must be identical. Each hand's seed is in the failure message; reproduce one
with ``ENGINE_DIFF_SEED=<seed> pytest tests/property/engine/test_engine_vs_pokerkit.py``.

Configuration of PokerKit to match our documented rules (docs/holdem-rules.md):
``Mode.TOURNAMENT`` (no fold when a check is possible), ``ante_trimming_status=True`` (antes
count toward side-pot eligibility), ``min_bet = big blind``. Both engines give odd chips to
the first winner clockwise from the button (PokerKit: lowest player index = left of the
button), and both use the PHH heads-up blind order. Player mapping: PokerKit index ``j`` is
our index ``(button + 1 + j) % n``.

Normalised (documented) differences — only the raise permission may differ, and only in
these two situations, where the test checks the other bounds and plays a fold/check/call:
1. PokerKit's full-raise threshold ignores ``min_bet`` when the round's largest increment is
   smaller (e.g. pre-flop 100 → 150 all-in reopens for PokerKit, not for us);
2. PokerKit forgets accumulated short all-ins once they reached a full raise.
The generator keeps the small blind below the big blind: with equal blinds heads-up PokerKit
treats the button's small blind as the largest blind and lets the big blind act first.
"""

from __future__ import annotations

import os
import random
import time
import warnings
from collections import deque

import pytest

pokerkit = pytest.importorskip("pokerkit")

from electric_domain.cards import card_str  # noqa: E402
from electric_domain.holdem import (  # noqa: E402
    Bet,
    Call,
    Check,
    DealBoard,
    DealHole,
    Fold,
    HandConfig,
    Phase,
    PostForcedBets,
    RaiseTo,
    initial_state,
    legal_actions,
    step,
    timeout_command,
)
from pokerkit import Automation, Card, Mode, NoLimitTexasHoldem, StandardHighHand  # noqa: E402
from pokerkit.lookups import Lookup  # noqa: E402

HANDS = int(os.environ.get("ENGINE_DIFF_HANDS", "20000"))
OFFSET = int(os.environ.get("ENGINE_DIFF_OFFSET", "0"))  # explore other seeds locally
NORMALISED: list[int] = []  # seeds where a documented reopening difference was normalised
_AUTOMATIONS = (
    Automation.ANTE_POSTING,
    Automation.BET_COLLECTION,
    Automation.BLIND_OR_STRADDLE_POSTING,
    Automation.CARD_BURNING,
    Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
    Automation.HAND_KILLING,
    Automation.CHIPS_PUSHING,
    Automation.CHIPS_PULLING,
)
_PK_CARD = [next(iter(Card.parse(card_str(c)))) for c in range(52)]
_PK_IDS = frozenset(map(id, _PK_CARD))


@pytest.fixture(autouse=True)
def _memoised_pokerkit_hands(monkeypatch: pytest.MonkeyPatch) -> None:
    install_pokerkit_memo(monkeypatch)


def _card_ids(cards: object) -> tuple[int, ...] | None:
    """Cheap memo key: the identities of the 52 PokerKit card objects we deal (they live as
    long as the module, so their ids are never reused); ``None`` for any other cards."""
    if type(cards) is not tuple and type(cards) is not list:
        return None
    ids = tuple(map(id, cards))  # type: ignore[call-overload]
    return ids if _PK_IDS.issuperset(ids) else None


def install_pokerkit_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """PokerKit re-evaluates the same hands many times per showdown (``can_win_now``) and
    recomputes a hand's lookup key on every comparison; memoise both so 20,000 hands fit the
    time budget. Every value is still computed by PokerKit itself the first time."""
    original = StandardHighHand.from_game.__func__  # type: ignore[attr-defined]
    cache: dict[tuple[object, ...], object] = {}

    def from_game(cls: type, hole_cards: object, board_cards: object = ()) -> object:
        hole, board = Card.clean(hole_cards), Card.clean(board_cards)
        h, b = _card_ids(hole), _card_ids(board)
        if h is None or b is None:
            return original(cls, hole, board)
        key = (cls, h, b)
        hit = cache.get(key)
        if hit is None:
            if len(cache) > 200_000:
                cache.clear()
            hit = cache[key] = original(cls, hole, board)
        return hit

    monkeypatch.setattr(StandardHighHand, "from_game", classmethod(from_game))
    original_key = Lookup._get_key
    keys: dict[tuple[int, tuple[int, ...]], object] = {}

    def _get_key(self: object, cards: object) -> object:
        ids = _card_ids(cards)
        if ids is None:
            return original_key(self, cards)
        k = (id(self), ids)
        hit = keys.get(k)
        if hit is None:
            if len(keys) > 500_000:
                keys.clear()
            hit = keys[k] = original_key(self, cards)
        return hit

    monkeypatch.setattr(Lookup, "_get_key", _get_key)


def _random_setup(rng: random.Random) -> tuple[HandConfig, list[int]]:
    n = rng.randint(2, 6)
    bb = rng.choice((2, 4, 10, 20, 100))
    sb = rng.choice((bb // 2, bb // 2, bb // 2 - 1 or 1, 1))  # sb < bb (see docstring)
    ante = rng.choice((0, 0, 0, 1, bb // 10, bb // 4, bb // 2))
    stacks = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            stacks.append(rng.randint(1, max(1, bb + ante)))  # forced all-ins
        elif r < 0.6:
            stacks.append(rng.randint(bb, 6 * bb))  # short: incomplete raises
        else:
            stacks.append(rng.randint(10 * bb, 80 * bb))
    button = rng.randrange(n)
    config = HandConfig(tuple(stacks), button, sb, bb, ante, bb)
    deck = list(range(52))
    rng.shuffle(deck)
    if rng.random() < 0.2:  # a board that plays: broadway straight, no flush possible
        ranks = [8, 9, 10, 11, 12]
        suits = [0, 1, 2, 3, rng.randrange(4)]
        rng.shuffle(suits)
        board = [r * 4 + s for r, s in zip(ranks, suits, strict=True)]
        rest = [c for c in deck if c not in board]
        deck = rest[: 2 * n] + board + rest[2 * n :]
    return config, deck


def _pk_bounds(st: object) -> tuple[int, bool, bool, int, int | None, int | None]:
    return (
        st.actor_index,  # type: ignore[attr-defined]
        st.can_fold(),  # type: ignore[attr-defined]
        st.checking_or_calling_amount == 0,  # type: ignore[attr-defined]
        st.checking_or_calling_amount,  # type: ignore[attr-defined]
        st.min_completion_betting_or_raising_to_amount,  # type: ignore[attr-defined]
        st.max_completion_betting_or_raising_to_amount,  # type: ignore[attr-defined]
    )


def _allowed_discrepancy(s: object, pk: object, ours_can_raise: bool, p: int, pj: int) -> bool:
    """The two documented reopening differences (see the module docstring)."""
    top = max(s.bets)  # type: ignore[attr-defined]
    level = s.acted_level[p]  # type: ignore[attr-defined]
    cfg = s.config  # type: ignore[attr-defined]
    full = max(s.cbr, cfg.effective_min_bet)  # type: ignore[attr-defined]
    pk_cbr = pk.completion_betting_or_raising_amount  # type: ignore[attr-defined]
    if not ours_can_raise:  # PokerKit allows: its threshold ignored min_bet
        return level >= 0 and top - level < full and top - level >= pk_cbr and pk_cbr < full
    shorts = pk.consecutive_short_all_in_amounts  # type: ignore[attr-defined]
    return (
        bool(shorts)
        and sum(shorts) < pk_cbr
        and pj in pk.acted_player_indices  # type: ignore[attr-defined]
        and level >= 0
        and top - level >= full
    )


def play_one(seed: int) -> int:
    """Play one random hand in both engines; return the number of decisions compared."""
    rng = random.Random(seed)
    config, deck = _random_setup(rng)
    n, b = config.players, config.button
    ours_of = [(b + 1 + j) % n for j in range(n)]  # pokerkit index -> ours
    pk_of = {o: j for j, o in enumerate(ours_of)}
    pk = NoLimitTexasHoldem.create_state(
        _AUTOMATIONS,
        True,
        config.ante,
        (config.small_blind, config.big_blind),
        config.big_blind,
        tuple(config.stacks[o] for o in ours_of),
        n,
        mode=Mode.TOURNAMENT,
    )
    # PokerKit deals (and burns) from its own deck: stack it in the order we deal, so its
    # card bookkeeping stays cheap (burn cards are positions 2n+5..2n+7 of our deck)
    b0 = 2 * n
    pk_order = [*deck[:b0], deck[b0 + 5], *deck[b0 : b0 + 3], deck[b0 + 6], deck[b0 + 3]]
    pk_order += [deck[b0 + 7], deck[b0 + 4], *deck[b0 + 8 :]]
    pk.deck_cards = deque(_PK_CARD[c] for c in pk_order)
    s, _ = step(initial_state(config), PostForcedBets())
    hole = {ours_of[j]: (deck[2 * j], deck[2 * j + 1]) for j in range(n)}
    board_pos = iter(((2 * n, 2 * n + 1, 2 * n + 2), (2 * n + 3,), (2 * n + 4,)))
    decisions = 0
    ctx = f"seed={seed} config={config}"
    while True:
        if s.phase is Phase.DEAL_HOLE:
            for j in range(n):
                o = ours_of[j]
                s, _ = step(s, DealHole(o, hole[o]))
                pk.deal_hole([_PK_CARD[c] for c in hole[o]])
            continue
        if s.phase is Phase.DEAL_BOARD:
            cards = tuple(deck[i] for i in next(board_pos))
            s, _ = step(s, DealBoard(cards))
            assert pk.can_deal_board(), ctx
            pk.deal_board([_PK_CARD[c] for c in cards])
            continue
        if s.phase is Phase.SHOWDOWN and s.showdown_queue:
            cmd0 = timeout_command(s)  # the house rule: show if it can win, else muck
            assert cmd0 is not None
            s, _ = step(s, cmd0)
            continue
        la = legal_actions(s)
        if la is None:
            break
        assert pk.actor_index is not None, f"{ctx}: pokerkit has no actor, we have {la}"
        p = la.player
        got = (
            pk_of[p],
            la.can_fold,
            la.can_check,
            la.call_amount,
            la.min_raise_to if la.can_raise else None,
            la.max_raise_to if la.can_raise else None,
        )
        want = _pk_bounds(pk)
        decisions += 1
        restrict = False
        if got != want:
            pk_can_raise = want[4] is not None
            if (
                got[:4] == want[:4]
                and pk_can_raise != la.can_raise
                and _allowed_discrepancy(s, pk, la.can_raise, p, pk_of[p])
            ):
                restrict = True
                NORMALISED.append(seed)
            else:
                raise AssertionError(f"{ctx}: bounds differ: ours {got} pokerkit {want}")
        r = rng.random()
        if la.can_raise and not restrict and r < 0.45:
            lo, hi = la.min_raise_to, la.max_raise_to
            x = rng.random()
            to = lo if x < 0.4 else hi if x < 0.7 else rng.randint(lo, hi)
            cmd: object = Bet(p, to) if la.is_bet else RaiseTo(p, to)
            s, _ = step(s, cmd)  # type: ignore[arg-type]
            pk.complete_bet_or_raise_to(to)
        elif la.can_fold and r < 0.6:
            s, _ = step(s, Fold(p))
            pk.fold()
        else:
            s, _ = step(s, Check(p) if la.can_check else Call(p))
            pk.check_or_call()
    assert s.phase is Phase.COMPLETE, f"{ctx}: our hand stopped in {s.phase.name}"
    assert not pk.status, f"{ctx}: pokerkit hand not over (actor {pk.actor_index})"
    ours = tuple(s.stacks[o] for o in ours_of)
    theirs = tuple(pk.stacks)
    assert ours == theirs, f"{ctx}: final stacks ours {ours} pokerkit {theirs}"
    assert sum(s.stacks) == sum(config.stacks), ctx
    return decisions


def test_engine_matches_pokerkit_on_random_hands() -> None:
    only = os.environ.get("ENGINE_DIFF_SEED")
    seeds = [int(only)] if only else range(OFFSET, OFFSET + HANDS)
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        # PokerKit warns when we deal a card its own (unused) deck would have burned
        warnings.simplefilter("ignore", UserWarning)
        decisions = sum(play_one(seed) for seed in seeds)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{len(seeds)} hands, {decisions} decision points compared in {elapsed:.1f} s "
        f"(CPU {cpu:.1f} s); "
        f"{len(NORMALISED)} decisions normalised (documented reopening differences)"
    )
    assert decisions > len(seeds)  # the workload really exercises decisions

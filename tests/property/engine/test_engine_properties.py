"""Hypothesis properties of the hand engine: chips conserved, no negative stacks, every hand
terminates, and replaying the events rebuilds the identical state."""

from __future__ import annotations

import os

from electric_domain.holdem import (
    CommandRejected,
    HandState,
    HoldemHand,
    Phase,
    apply,
    replay,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MAX_COMMANDS = 500  # a hand has at most 4 rounds; each raise is >= 1 chip of finite stacks


@st.composite
def hands(draw: st.DrawFn) -> HoldemHand:
    n = draw(st.integers(2, 10))
    bb = draw(st.integers(2, 200))
    sb = draw(st.integers(1, bb))
    ante = draw(st.integers(0, bb))
    stacks = draw(
        st.lists(
            st.one_of(st.integers(1, 3 * bb), st.integers(1, 200 * bb)), min_size=n, max_size=n
        )
    )
    button = draw(st.integers(0, n - 1))
    seed = draw(st.binary(min_size=32, max_size=32))
    return HoldemHand.start(stacks, button, sb, bb, ante, seed=seed)


def _check_invariants(s: HandState, total: int) -> None:
    assert all(x >= 0 for x in s.stacks), s
    assert all(x >= 0 for x in s.bets), s
    assert sum(s.stacks) + sum(s.committed) - sum(s.winnings) == total, s
    assert all(b <= c for b, c in zip(s.bets, s.committed, strict=True)), s


@settings(
    max_examples=int(os.environ.get("ENGINE_PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(hand=hands(), data=st.data())
def test_random_play_properties(hand: HoldemHand, data: st.DataObject) -> None:
    total = sum(hand.config.stacks)
    commands = 0
    while not hand.is_complete:
        commands += 1
        assert commands <= MAX_COMMANDS, "hand did not terminate"
        la = hand.legal_actions()
        assert la is not None, hand.state  # the driver stops only at player decisions
        choice = data.draw(st.sampled_from(("fold", "check_call", "min", "max", "any", "bad")))
        before = hand.state
        try:
            if choice == "fold" and la.can_fold:
                hand.fold()
            elif choice in ("min", "max", "any") and la.can_raise:
                to = {
                    "min": la.min_raise_to,
                    "max": la.max_raise_to,
                    "any": data.draw(st.integers(la.min_raise_to, la.max_raise_to)),
                }[choice]
                hand.bet(to) if la.is_bet else hand.raise_to(to)
            elif choice == "bad":
                with_bad = data.draw(st.integers(-5, la.all_in_to + 5))
                try:
                    hand.raise_to(with_bad) if not la.is_bet else hand.bet(with_bad)
                except CommandRejected:
                    assert hand.state is before  # rejected: nothing changed
            else:
                hand.check() if la.can_check else hand.call()
        except CommandRejected as exc:  # pragma: no cover - legal_actions said it was legal
            raise AssertionError(f"{choice} rejected although legal: {exc.reason}") from exc
        _check_invariants(hand.state, total)
    s = hand.state
    assert s.phase is Phase.COMPLETE
    assert sum(s.stacks) == total
    rebuilt = replay(hand.events)
    assert rebuilt == s
    # every intermediate state is a pure fold: applying an event never mutates its input
    state = None
    for e in hand.events:
        prev = state
        snapshot = None if prev is None else (prev.stacks, prev.bets, prev.phase, prev.to_act)
        state = apply(state, e)
        if prev is not None:
            assert (prev.stacks, prev.bets, prev.phase, prev.to_act) == snapshot
        _check_invariants(state, total)
    assert state == s

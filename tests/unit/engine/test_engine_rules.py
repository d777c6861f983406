"""Scenario tests of the no-limit hold'em rules (docs/holdem-rules.md)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from electric_domain.cards import parse_cards
from electric_domain.deck import derive_deck
from electric_domain.holdem import (
    AllIn,
    Bet,
    BlindPosted,
    Call,
    Check,
    Command,
    CommandRejected,
    DealBoard,
    DealHole,
    Fold,
    HandConfig,
    HandMucked,
    HandShown,
    HandState,
    HoldemHand,
    Muck,
    Phase,
    PostForcedBets,
    PotAwarded,
    RaiseTo,
    Show,
    UncalledBetReturned,
    initial_state,
    legal_actions,
    replay,
    step,
)
from electric_domain.holdem.events import AntePosted, Event, HandStarted


class Table:
    """Drive the core engine with chosen cards."""

    def __init__(self, config: HandConfig, holes: Sequence[str], board: str = "") -> None:
        self.state = initial_state(config)
        self.events: list[Event] = [HandStarted(config)]
        self.board = list(parse_cards(board)) if board else []
        self.do(PostForcedBets())
        for p, h in enumerate(holes):
            self.do(DealHole(p, parse_cards(h)))

    def do(self, cmd: Command) -> list[Event]:
        self.state, events = step(self.state, cmd)
        self.events.extend(events)
        self._deal()
        return events

    def _deal(self) -> None:
        while self.state.phase is Phase.DEAL_BOARD:
            k = 3 if not self.state.board else 1
            cards, self.board = tuple(self.board[:k]), self.board[k:]
            self.state, events = step(self.state, DealBoard(cards))
            self.events.extend(events)

    def la(self):  # type: ignore[no-untyped-def]
        la = legal_actions(self.state)
        assert la is not None
        return la


def cfg(stacks: Sequence[int], button: int = 0, sb: int = 50, bb: int = 100, ante: int = 0):  # type: ignore[no-untyped-def]
    return HandConfig(tuple(stacks), button, sb, bb, ante)


HOLES3 = ("AsAd", "KsKd", "QsQd")
BOARD = "2c7d9hJc3s"


def test_three_handed_positions_and_blinds() -> None:
    t = Table(cfg([1000, 1000, 1000], button=0), HOLES3, BOARD)
    blinds = [e for e in t.events if isinstance(e, BlindPosted)]
    assert [(b.player, b.amount, b.big) for b in blinds] == [(1, 50, False), (2, 100, True)]
    la = t.la()
    assert la.player == 0  # the button is first to act pre-flop 3-handed
    assert (la.call_amount, la.min_raise_to, la.max_raise_to) == (100, 200, 1000)
    t.do(Call(0))
    t.do(Call(1))
    assert t.la().player == 2 and t.la().can_check  # big blind option
    t.do(Check(2))
    assert t.state.street == 1 and t.la().player == 1  # small blind first post-flop


def test_heads_up_button_posts_small_blind_and_acts_first_preflop_only() -> None:
    t = Table(cfg([1000, 1000], button=1), ("AsAd", "KsKd"), BOARD)
    blinds = [e for e in t.events if isinstance(e, BlindPosted)]
    assert [(b.player, b.amount) for b in blinds] == [(1, 50), (0, 100)]
    assert t.la().player == 1 and t.la().call_amount == 50
    t.do(Call(1))
    t.do(Check(0))
    assert t.la().player == 0  # post-flop the non-button acts first


def test_min_bet_and_min_raise_is_largest_increment() -> None:
    t = Table(cfg([5000, 5000, 5000]), HOLES3, BOARD)
    for p in (0, 1):
        t.do(Call(p))
    t.do(Check(2))
    la = t.la()
    assert la.is_bet and la.min_raise_to == 100  # minimum bet = big blind
    with pytest.raises(CommandRejected, match="below the minimum of 100"):
        step(t.state, Bet(1, 99))
    t.do(Bet(1, 100))
    t.do(RaiseTo(2, 400))  # increment 300
    la = t.la()
    assert (la.player, la.min_raise_to) == (0, 700)
    t.do(RaiseTo(0, 700))  # increment 300 again
    assert t.la().min_raise_to == 1000


def test_short_all_in_does_not_reopen_betting_but_full_raise_does() -> None:
    t = Table(cfg([5000, 5000, 250, 5000], button=3), ("AsAd", "KsKd", "QsQd", "JsJd"), BOARD)
    # pre-flop: p2 (UTG) ... order: p2 UTG, p3 button, p0 SB, p1 BB
    t.do(Call(2))
    t.do(Call(3))
    t.do(Call(0))
    t.do(Check(1))
    # flop: p0 bets 100, p1 calls, p2 all-in for 150 total (short of a full raise)
    t.do(Bet(0, 100))
    t.do(Call(1))
    t.do(AllIn(2))
    assert t.state.bets[2] == 150
    t.do(Call(3))  # p3 had not acted: may raise, but calls
    la = t.la()
    assert la.player == 0 and la.call_amount == 50 and not la.can_raise
    before = t.state
    with pytest.raises(CommandRejected, match="not reopened"):
        step(t.state, RaiseTo(0, 400))
    assert t.state == before  # nothing changed


def test_short_all_ins_adding_up_to_a_full_raise_reopen() -> None:
    t = Table(
        cfg([5000, 5000, 250, 290, 5000], button=4),
        ("AsAd", "KsKd", "QsQd", "JsJd", "TsTd"),
        BOARD,
    )
    for p in (2, 3, 4, 0):
        t.do(Call(p))
    t.do(Check(1))
    t.do(Bet(0, 100))
    t.do(Call(1))
    t.do(AllIn(2))  # 150: +50
    t.do(AllIn(3))  # 190: +40, total +90 < 100
    t.do(Call(4))
    assert not t.la().can_raise  # p0 faces only 90 more
    t2 = Table(
        cfg([5000, 5000, 250, 310, 5000], button=4),
        ("AsAd", "KsKd", "QsQd", "JsJd", "TsTd"),
        BOARD,
    )
    for p in (2, 3, 4, 0):
        t2.do(Call(p))
    t2.do(Check(1))
    t2.do(Bet(0, 100))
    t2.do(Call(1))
    t2.do(AllIn(2))  # 150
    t2.do(AllIn(3))  # 210: +60, total +110 >= 100
    t2.do(Call(4))
    la = t2.la()
    assert la.player == 0 and la.can_raise and la.min_raise_to == 310


def test_rejections_change_nothing_and_explain() -> None:
    t = Table(cfg([1000, 1000, 1000]), HOLES3, BOARD)
    s = t.state
    cases: list[tuple[Command, str]] = [
        (Call(1), "player 0's turn"),
        (Check(0), "cannot check"),
        (Bet(0, 300), "raise instead"),
        (RaiseTo(0, 150), "below the minimum of 200"),
        (RaiseTo(0, 1001), "exceeds your all-in"),
        (DealBoard(parse_cards("2h3h4h")), "cannot deal the board"),
        (Show(0), "no showdown"),
        (PostForcedBets(), "already posted"),
    ]
    for cmd, reason in cases:
        with pytest.raises(CommandRejected, match=reason) as exc:
            step(s, cmd)
        assert exc.value.reason and t.state == s


def test_side_pots_with_eligibility() -> None:
    # p0 100 chips with the best hand, p1 300 second best, p2 1000 worst
    t = Table(cfg([100, 300, 1000], button=2, sb=5, bb=10), HOLES3, BOARD)
    # pre-flop order 3-handed with button 2: p2 acts first
    t.do(RaiseTo(2, 1000))
    t.do(AllIn(0))
    t.do(AllIn(1))
    assert t.state.phase is Phase.COMPLETE
    pots = [e for e in t.events if isinstance(e, PotAwarded)]
    assert [(p.amount, p.eligible, p.winners) for p in pots] == [
        (300, (0, 1), (0,)),  # p2 wins nothing: out of contention
        (400, (1,), (1,)),
    ]
    returned = [e for e in t.events if isinstance(e, UncalledBetReturned)]
    assert [(r.player, r.amount) for r in returned] == [(2, 700)]
    assert t.state.stacks == (300, 400, 700)


def test_split_pot_odd_chip_goes_first_clockwise_from_button() -> None:
    # board plays (broadway straight); p1 and p2 split; pot 3 * 5 + ... odd
    config = HandConfig((1000, 1000, 1000), 0, 5, 10, 1)
    t = Table(config, ("2c2d", "3c4d", "3h4s"), "TcJdQhKsAc")
    t.do(Fold(0))  # button folds after paying the 1 ante
    t.do(Call(1))
    t.do(Check(2))
    for _ in range(3):
        t.do(Check(1))
        t.do(Check(2))
    assert t.state.showdown_queue == (1, 2)  # no river bet: first left of the button
    t.do(Show(1))
    t.do(Show(2))  # a tie can win: must be shown
    pots = [e for e in t.events if isinstance(e, PotAwarded)]
    assert len(pots) == 1 and pots[0].amount == 23
    assert pots[0].winners == (1, 2) and pots[0].shares == (12, 11)
    # button 1: the first winner clockwise from the button is p2
    config2 = HandConfig((1000, 1000, 1000), 1, 5, 10, 1)
    t2 = Table(config2, ("3c4d", "2c2d", "3h4s"), "TcJdQhKsAc")
    # order: p1 (button) acts first pre-flop
    t2.do(Fold(1))
    t2.do(Call(2))
    t2.do(Check(0))
    for _ in range(3):
        t2.do(Check(2))
        t2.do(Check(0))
    t2.do(Show(2))
    t2.do(Show(0))
    pots2 = [e for e in t2.events if isinstance(e, PotAwarded)]
    assert pots2[0].winners == (2, 0) and pots2[0].shares == (12, 11)


def test_showdown_order_and_mucking() -> None:
    t = Table(cfg([1000, 1000, 1000]), ("7c8c", "AsAd", "KsKd"), "2c7d9hJc3s")
    t.do(Call(0))
    t.do(Call(1))
    t.do(Check(2))
    for street in range(3):
        if street < 2:
            t.do(Check(1))
            t.do(Check(2))
            t.do(Check(0))
    t.do(Check(1))
    t.do(Bet(2, 100))  # p2 is the river aggressor and shows first
    t.do(Call(0))
    t.do(Call(1))
    assert t.state.phase is Phase.SHOWDOWN and t.state.showdown_queue == (2, 0, 1)
    with pytest.raises(CommandRejected, match="must be shown"):
        step(t.state, Muck(2))  # nothing shown yet: kings can win
    t.do(Show(2))  # kings
    t.do(Muck(0))  # sevens cannot beat kings
    with pytest.raises(CommandRejected, match="must be shown"):
        step(t.state, Muck(1))  # aces can win
    t.do(Show(1))
    assert t.state.phase is Phase.COMPLETE
    assert any(isinstance(e, HandMucked) and e.player == 0 for e in t.events)
    assert t.state.stacks == (800, 1400, 800)


def test_all_in_exposes_every_hand_before_the_runout() -> None:
    t = Table(cfg([1000, 1000, 1000]), HOLES3, BOARD)
    t.do(AllIn(0))
    t.do(Call(1))
    t.do(Fold(2))
    shown = [i for i, e in enumerate(t.events) if isinstance(e, HandShown)]
    boards = [i for i, e in enumerate(t.events) if type(e).__name__ == "BoardDealt"]
    assert len(shown) == 2 and max(shown) < min(boards)
    assert t.state.stacks == (2100, 0, 900)


def test_forced_bets_all_in_on_ante_and_blind() -> None:
    t = Table(HandConfig((3, 40, 1000), 0, 25, 50, 5), HOLES3, BOARD)
    antes = [(e.player, e.amount) for e in t.events if isinstance(e, AntePosted)]
    assert sorted(antes) == [(0, 3), (1, 5), (2, 5)]
    blinds = [(e.player, e.amount) for e in t.events if isinstance(e, BlindPosted)]
    assert blinds == [(1, 25), (2, 50)]
    # p0 is all-in on the ante, p1 has 10 left: only p1 acts, and cannot raise
    la = t.la()
    assert la.player == 1 and la.call_amount == 10 and not la.can_raise
    t.do(Call(1))
    assert t.state.phase is Phase.COMPLETE
    assert sum(t.state.stacks) == 1043
    assert t.state.stacks[0] == 9  # AA wins the 3-chip layer from everyone


def test_replay_rebuilds_state_and_driver_is_deterministic() -> None:
    seed = bytes(range(32))
    hands = []
    for _ in range(2):
        h = HoldemHand.start((500, 500, 500), 0, 10, 20, 5, seed=seed)
        while not h.is_complete:
            la = h.legal_actions()
            if la is not None and la.can_raise and la.min_raise_to < 100:
                h.raise_to(la.min_raise_to) if not la.is_bet else h.bet(la.min_raise_to)
            elif la is not None:
                h.check() if la.can_check else h.call()
        hands.append(h)
        assert replay(h.events) == h.state
    assert hands[0].events == hands[1].events
    deck = derive_deck(seed)
    # hole cards: one at a time from the button's left
    first = [e for e in hands[0].events if type(e).__name__ == "HoleCardsDealt"]
    assert first[0].player == 1 and first[0].cards == (deck[0], deck[3])  # type: ignore[attr-defined]
    assert hands[0].state.board == (deck[7], deck[8], deck[9], deck[11], deck[13])


def test_fold_when_check_is_possible_is_rejected_and_timeout_checks() -> None:
    h = HoldemHand.start((500, 500), 0, 10, 20, deck=list(range(52)))
    h.call()
    with pytest.raises(CommandRejected, match="check instead"):
        h.fold()
    h.timeout()
    assert h.state.street == 1


def test_state_is_not_mutated_by_step() -> None:
    t = Table(cfg([1000, 1000, 1000]), HOLES3, BOARD)
    s: HandState = t.state
    snapshot = (s.stacks, s.bets, s.to_act, s.phase)
    step(s, RaiseTo(0, 300))
    assert (s.stacks, s.bets, s.to_act, s.phase) == snapshot

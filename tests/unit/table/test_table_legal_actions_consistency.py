"""The legal actions a `TableView` offers are exactly what the tournament aggregate accepts.

States come from whole simulated tournaments (`electric_math.simulate.play` with
the domain bots); at every decision the view of the player to act is built by the service's
`build_view`, and every candidate move is tried on a copy of the aggregate:

* every offered action is accepted (BET/RAISE at both bounds, CALL and ALL_IN) and ends at
  the offered street total;
* every accepted action is offered: a move that is not offered is refused, and a bet/raise
  just outside the offered bounds is refused.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field

from electric.table.v1 import table_pb2
from electric_domain.holdem import events as he
from electric_domain.tournament import Rejected, Tournament, default_config
from electric_domain.tournament.events import Act, ActionTaken
from electric_domain.tournament.hand_port import Move
from electric_math.simulate import make_bots, play, tournament_seed
from electric_table.tournament import mapping
from electric_table.tournament.runtime import TableRuntime
from electric_table.tournament.views import build_view, legal_actions_proto

_MOVE = {
    table_pb2.ACTION_TYPE_FOLD: Move.FOLD,
    table_pb2.ACTION_TYPE_CHECK: Move.CHECK,
    table_pb2.ACTION_TYPE_CALL: Move.CALL,
    table_pb2.ACTION_TYPE_BET: Move.BET,
    table_pb2.ACTION_TYPE_RAISE: Move.RAISE_TO,
    table_pb2.ACTION_TYPE_ALL_IN: Move.ALL_IN,
}


def _fork(t: Tournament) -> Tournament:
    """An independent copy of the aggregate (events are immutable; the state is not)."""
    c = Tournament(t.config, t.port)
    c.state = copy.deepcopy(t.state)
    c.history = list(t.history)
    return c


def _accepts(t: Tournament, seat: int, move: Move, amount: int = 0) -> bool:
    try:
        Tournament.handle(_fork(t), Act(seat, move, t.state.now, amount))
    except Rejected:
        return False
    return True


def _street_total_after(t: Tournament, seat: int, move: Move, amount: int = 0) -> int:
    """The seat's street bet right after ``move`` (from the engine's decision event)."""
    hand = t.state.hand
    p = hand.index[seat]
    _, events = t.port.act(hand, seat, move, amount)
    for e in events:
        if isinstance(e, he.Called) and e.player == p:
            return int(hand.state.bets[p]) + e.amount
        if isinstance(e, he.BetPlaced | he.Raised) and e.player == p:
            return e.to
    raise AssertionError(f"no wager event for {move.value}: {events}")


def _action_taken(t: Tournament, seat: int, move: Move, amount: int = 0) -> ActionTaken:
    """The ActionTaken the aggregate records for ``move`` (on a fork)."""
    events = Tournament.handle(_fork(t), Act(seat, move, t.state.now, amount))
    return next(e for e in events if isinstance(e, ActionTaken) and e.seat == seat)


@dataclass
class Checker:
    runtime: TableRuntime | None = None
    decisions: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    def observe(self, t: Tournament) -> None:
        st = t.state
        if st.finished or st.turn is None or st.hand is None or st.hand_over:
            return
        seat = st.turn.seat
        legal = t.legal_actions(seat)
        if legal is None:
            return
        if self.runtime is None or self.runtime.tournament is not t:
            self.runtime = _runtime(t)
        view = build_view(self.runtime, st.seats[seat].player_id, st.now)
        offered = {a.type: a for a in view.legal_actions}
        assert len(offered) == len(view.legal_actions), "an action type offered twice"
        self.decisions += 1
        if legal.min_raise_to is None and legal.call_amount > 0:
            self.kinds["call-or-fold" if legal.call_amount < legal.stack else "all-in-call"] += 1
        else:
            self.kinds["open"] += 1
        self._check(t, seat, offered, legal)

    def _check(
        self,
        t: Tournament,
        seat: int,
        offered: dict[int, table_pb2.LegalAction],
        legal: object,
    ) -> None:
        hand = t.state.hand
        bets = hand.state.bets
        bet = int(bets[hand.index[seat]])
        top = int(max(bets))
        stack = int(hand.state.stacks[hand.index[seat]])
        where = f"hand {t.state.hand_no} seat {seat} legal {legal} offered {list(offered)}"
        # Simple moves: offered <=> accepted, and the offered amount is what happens.
        for kind in (
            table_pb2.ACTION_TYPE_FOLD,
            table_pb2.ACTION_TYPE_CHECK,
            table_pb2.ACTION_TYPE_CALL,
            table_pb2.ACTION_TYPE_ALL_IN,
        ):
            move = _MOVE[kind]
            accepted = _accepts(t, seat, move)
            assert accepted == (kind in offered), f"{move.value}: accepted={accepted}; {where}"
            if accepted and kind in (table_pb2.ACTION_TYPE_CALL, table_pb2.ACTION_TYPE_ALL_IN):
                a = offered[kind]
                assert a.min_amount == a.max_amount == _street_total_after(t, seat, move), where
                # The recorded action carries the same street total and what it added.
                taken = _action_taken(t, seat, move)
                assert taken.move is move and taken.street_bet == a.max_amount, where
                assert taken.amount_added == a.max_amount - bet, where
                assert taken.all_in == (taken.amount_added == stack), where
        # Bet / raise: the offered kind and bounds are exactly the accepted range, and the
        # other kind is refused (BET opens a round, RAISE_TO raises a bet: never merged).
        raise_kinds = [k for k in (table_pb2.ACTION_TYPE_BET, table_pb2.ACTION_TYPE_RAISE)]
        offered_raise = [offered[k] for k in raise_kinds if k in offered]
        if offered_raise:
            (a,) = offered_raise
            assert (a.type == table_pb2.ACTION_TYPE_BET) == (top == 0), where
            move, other = (
                (Move.BET, Move.RAISE_TO) if a.type == table_pb2.ACTION_TYPE_BET else
                (Move.RAISE_TO, Move.BET)
            )  # fmt: skip
            for amount in {a.min_amount, a.max_amount, (a.min_amount + a.max_amount) // 2}:
                assert _accepts(t, seat, move, amount), f"{move} to {amount}; {where}"
                assert not _accepts(t, seat, other, amount), f"{other} to {amount}; {where}"
            assert a.max_amount == bet + stack, where
            assert not _accepts(t, seat, move, a.min_amount - 1), where
            assert not _accepts(t, seat, move, a.max_amount + 1), where
        else:
            for amount in {top + 1, 2 * top, bet + stack, top + t.state.hand_blinds[1]}:
                if amount > 0:
                    for move in (Move.BET, Move.RAISE_TO):
                        assert not _accepts(t, seat, move, amount), f"to {amount}; {where}"


def _runtime(t: Tournament) -> TableRuntime:
    info = mapping.TableInfo(
        table_id="sim",
        table_name="sim",
        seats=tuple(
            mapping.SeatInfo(i + 1, s.player_id, f"entry-{i}", s.player_id)
            for i, s in enumerate(t.state.seats)
        ),
        action_timer_ms=t.config.action_timer_ms,
    )
    return TableRuntime(table_id="sim", info=info, config=t.config, tournament=t, version=0)


def test_offered_legal_actions_equal_what_the_aggregate_accepts() -> None:
    cfg = default_config()
    checker = Checker()
    lineups = (["random", "random", "random"], ["random", "tag", "random"])
    for i in range(24):
        play(
            cfg,
            tournament_seed(20261129, i),
            make_bots(lineups[i % 2]),
            observe=checker.observe,
        )
    assert checker.decisions > 1000
    # The short all-in that does not reopen the betting (call or fold only, stack covers the
    # call) must have been met, or the test proves nothing about the ALL_IN bug.
    assert checker.kinds["call-or-fold"] > 0, checker.kinds
    assert checker.kinds["all-in-call"] > 0, checker.kinds


def test_all_in_not_offered_after_a_short_all_in() -> None:
    """Direct case: facing a short all-in that did not reopen the betting, with chips to
    spare, the player may call or fold; no ALL_IN (and no raise)."""
    from electric_domain.tournament.hand_port import Legal

    legal = Legal(
        seat=0, can_fold=True, can_check=False, call_amount=30, min_raise_to=None,
        max_raise_to=None, stack=400,
    )  # fmt: skip
    kinds = [a.type for a in legal_actions_proto(legal, street_bet=100, opening=False)]
    assert kinds == [table_pb2.ACTION_TYPE_FOLD, table_pb2.ACTION_TYPE_CALL]
    short = Legal(
        seat=0, can_fold=True, can_check=False, call_amount=25, min_raise_to=None,
        max_raise_to=None, stack=25,
    )  # fmt: skip
    actions = legal_actions_proto(short, street_bet=100, opening=False)
    assert [(a.type, a.max_amount) for a in actions] == [
        (table_pb2.ACTION_TYPE_FOLD, 0),
        (table_pb2.ACTION_TYPE_CALL, 125),
        (table_pb2.ACTION_TYPE_ALL_IN, 125),
    ]

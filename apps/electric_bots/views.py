"""From what a player sees over gRPC to what a pure strategy needs, and back (pure, no I/O).

A bot never sees anything a human client would not: its :class:`TableView` (own hole cards,
the board, stacks, pots, legal actions with amounts). This module turns that view into the
domain's :class:`~electric_domain.tournament.bots.BotContext` and turns the strategy's
decision into the fields of an ``ActRequest`` / ``SetPreActionRequest``.
"""

from __future__ import annotations

from typing import NamedTuple

from electric.table.v1 import table_pb2
from electric_clients.convert import card_number
from electric_domain.tournament.bots import BotContext, Decide
from electric_domain.tournament.hand_port import Legal, Move
from electric_domain.tournament.preaction import PreAction, available

_PRE_ACTION = {
    PreAction.FOLD: table_pb2.PRE_ACTION_TYPE_FOLD,
    PreAction.CHECK_FOLD: table_pb2.PRE_ACTION_TYPE_CHECK_FOLD,
    PreAction.CHECK: table_pb2.PRE_ACTION_TYPE_CHECK,
    PreAction.CALL: table_pb2.PRE_ACTION_TYPE_CALL,
    PreAction.ALL_IN: table_pb2.PRE_ACTION_TYPE_ALL_IN,
    PreAction.BET: table_pb2.PRE_ACTION_TYPE_BET,
}


def my_seat(view: table_pb2.TableView) -> table_pb2.SeatView | None:
    """The caller's seat in ``view`` (None when the caller does not play there)."""
    if not view.your_seat:
        return None
    return next((s for s in view.seats if s.seat == view.your_seat), None)


def is_my_turn(view: table_pb2.TableView) -> bool:
    """True when the view says the caller must decide now."""
    return (
        view.status == table_pb2.TABLE_STATUS_RUNNING
        and bool(view.your_seat)
        and view.HasField("hand")
        and view.hand.to_act_seat == view.your_seat
        and len(view.legal_actions) > 0
    )


def legal_from_view(view: table_pb2.TableView) -> Legal:
    """The domain's :class:`Legal` from the view's legal actions (amounts are street totals)."""
    seat = my_seat(view)
    street_bet = seat.street_bet if seat else 0
    stack = seat.stack if seat else 0
    by_type = {a.type: a for a in view.legal_actions}
    call = by_type.get(table_pb2.ACTION_TYPE_CALL)
    raise_ = by_type.get(table_pb2.ACTION_TYPE_BET) or by_type.get(table_pb2.ACTION_TYPE_RAISE)
    all_in = by_type.get(table_pb2.ACTION_TYPE_ALL_IN)
    # An ALL_IN without BET/RAISE is not treated as a raise: whether a short all-in may
    # re-open the betting is not in the view, so the bot only calls (all-in) or folds then.
    call_amount = 0
    if call is not None:
        call_to = call.max_amount or call.min_amount
        call_amount = max(0, min(call_to, street_bet + stack) - street_bet)
    min_to: int | None = None
    max_to: int | None = None
    if raise_ is not None:
        # A raise is open to the player: the all-in is the top of that range.
        top = max(raise_.max_amount, raise_.min_amount)
        if all_in is not None:
            top = max(top, all_in.max_amount)
        min_to, max_to = raise_.min_amount, top
    return Legal(
        seat=view.your_seat,
        can_fold=table_pb2.ACTION_TYPE_FOLD in by_type,
        can_check=table_pb2.ACTION_TYPE_CHECK in by_type,
        call_amount=call_amount,
        min_raise_to=min_to,
        max_raise_to=max_to,
        stack=stack,
    )


def context_from_view(view: table_pb2.TableView) -> BotContext:
    """What a strategy sees at its turn, built from the caller's own view only."""
    seat = my_seat(view)
    hand = view.hand
    pot = sum(p.amount for p in hand.pots) + sum(s.street_bet for s in view.seats)
    return BotContext(
        seat=view.your_seat,
        hole=tuple(card_number(c) for c in (seat.hole_cards if seat else ())),
        board=tuple(card_number(c) for c in hand.board),
        pot=pot,
        big_blind=max(1, view.level.big_blind),
        players_in_hand=sum(1 for s in view.seats if s.has_cards and not s.folded),
        hand_no=hand.hand_number,
        legal=legal_from_view(view),
    )


class ActFields(NamedTuple):
    """The decision part of an ``ActRequest``."""

    action: table_pb2.ActionType.ValueType
    amount: int


def act_fields(decision: Decide, view: table_pb2.TableView) -> ActFields:
    """Map a strategy's move onto one of the actions the view offers (never an illegal one)."""
    by_type = {a.type: a for a in view.legal_actions}
    move = decision.move
    fallback = (
        table_pb2.ACTION_TYPE_CHECK
        if table_pb2.ACTION_TYPE_CHECK in by_type
        else table_pb2.ACTION_TYPE_FOLD
    )
    if move is Move.FOLD:
        if table_pb2.ACTION_TYPE_FOLD in by_type:
            return ActFields(table_pb2.ACTION_TYPE_FOLD, 0)
        return ActFields(fallback, 0)
    if move is Move.CHECK:
        return ActFields(fallback, 0)
    if move is Move.CALL:
        if table_pb2.ACTION_TYPE_CALL in by_type:
            return ActFields(table_pb2.ACTION_TYPE_CALL, 0)
        if table_pb2.ACTION_TYPE_ALL_IN in by_type:
            return ActFields(table_pb2.ACTION_TYPE_ALL_IN, 0)
        return ActFields(fallback, 0)
    raising = table_pb2.ACTION_TYPE_BET in by_type or table_pb2.ACTION_TYPE_RAISE in by_type
    if move is Move.ALL_IN:
        if raising and table_pb2.ACTION_TYPE_ALL_IN in by_type:
            return ActFields(table_pb2.ACTION_TYPE_ALL_IN, 0)
        decision = Decide(Move.RAISE_TO, 1 << 62, decision.think_ms)
    # RAISE_TO: a bet or raise to a street total, clamped into the offered range.
    for kind in (table_pb2.ACTION_TYPE_BET, table_pb2.ACTION_TYPE_RAISE):
        offered = by_type.get(kind)
        if offered is not None:
            top = max(offered.max_amount, offered.min_amount)
            all_in = by_type.get(table_pb2.ACTION_TYPE_ALL_IN)
            if all_in is not None and decision.amount >= max(top, all_in.max_amount):
                return ActFields(table_pb2.ACTION_TYPE_ALL_IN, 0)
            return ActFields(kind, min(max(decision.amount, offered.min_amount), top))
    if table_pb2.ACTION_TYPE_CALL in by_type:
        return ActFields(table_pb2.ACTION_TYPE_CALL, 0)
    if table_pb2.ACTION_TYPE_ALL_IN in by_type and table_pb2.ACTION_TYPE_FOLD in by_type:
        return ActFields(table_pb2.ACTION_TYPE_ALL_IN, 0)  # calling all-in is all that's left
    return ActFields(fallback, 0)


def safe_fields(view: table_pb2.TableView) -> ActFields:
    """The most passive offered action (check, else call, else fold): a fallback answer."""
    kinds = {a.type for a in view.legal_actions}
    for kind in (table_pb2.ACTION_TYPE_CHECK, table_pb2.ACTION_TYPE_CALL):
        if kind in kinds:
            return ActFields(kind, 0)
    return ActFields(table_pb2.ACTION_TYPE_FOLD, 0)


def offered_pre_actions(view: table_pb2.TableView) -> frozenset[PreAction]:
    """Pre-turn actions the caller could select now (empty at its turn or out of the hand)."""
    seat = my_seat(view)
    if (
        seat is None
        or view.status != table_pb2.TABLE_STATUS_RUNNING
        or not view.HasField("hand")
        or view.hand.to_act_seat in (0, view.your_seat)
        or view.electric_mode
        or not seat.has_cards
        or seat.folded
        or seat.all_in
        or view.your_pre_action != table_pb2.PRE_ACTION_TYPE_UNSPECIFIED
    ):
        return frozenset()
    to_call = max(0, view.hand.current_bet - seat.street_bet)
    return available(to_call, seat.stack)


def pre_action_type(action: PreAction) -> table_pb2.PreActionType.ValueType:
    """The protobuf enum of a domain pre-action."""
    return _PRE_ACTION[action]

"""``decide``: a command against a state gives the events it produces, or raises
:class:`CommandRejected` with a human reason (nothing changes). Automatic consequences
(pots, showdown order) are in :mod:`.showdown`; the loop that runs both is :mod:`.engine`.
"""

from __future__ import annotations

from collections.abc import Callable

from electric_domain.holdem.commands import (
    AllIn,
    Bet,
    Call,
    Check,
    Command,
    DealBoard,
    DealHole,
    Fold,
    Muck,
    PostForcedBets,
    RaiseTo,
    Show,
)
from electric_domain.holdem.events import (
    AntePosted,
    BetPlaced,
    BlindPosted,
    BoardDealt,
    Called,
    Checked,
    Event,
    Folded,
    HandMucked,
    HandShown,
    HoleCardsDealt,
    Raised,
    RoundClosed,
)
from electric_domain.holdem.fold import (
    _BOARD_SIZES,
    _PH_BETTING,
    _PH_DEAL_BOARD,
    _PH_DEAL_HOLE,
    _PH_FORCED_BETS,
    _PH_SHOWDOWN,
    _UNKNOWN,
    _clockwise,
    _hand_rank,
    _set,
)
from electric_domain.holdem.rules import _can_muck, legal_actions
from electric_domain.holdem.state import (
    MAX_PLAYERS,
    STREET_NAMES,
    CommandRejected,
    HandState,
)


def _reject(reason: str, command: object) -> CommandRejected:
    return CommandRejected(reason, command)


# Events are immutable values: the one-field ones are built once and shared.
_FOLDED = tuple(Folded(p) for p in range(MAX_PLAYERS))
_CHECKED = tuple(Checked(p) for p in range(MAX_PLAYERS))
_HOLE_EVENTS: dict[tuple[int, tuple[int, ...]], HoleCardsDealt] = {}
_ROUND_CLOSED = tuple(RoundClosed(street) for street in range(len(STREET_NAMES)))


def _round_closed(street: int) -> RoundClosed:
    return _ROUND_CLOSED[street] if 0 <= street < len(_ROUND_CLOSED) else RoundClosed(street)


def _decide_betting(s: HandState, cmd: Command) -> Event:
    p: int = cmd.player  # type: ignore[union-attr]
    if s.phase is not _PH_BETTING or not s.to_act:
        raise _reject(f"no betting decision is pending (phase {s.phase.name})", cmd)
    actor = s.to_act[0]
    if p != actor:
        raise _reject(f"it is player {actor}'s turn, not player {p}'s", cmd)
    t = type(cmd)
    bets = s.bets
    top = max(bets)
    owed = top - bets[p]
    if t is Fold:
        if owed <= 0:
            raise _reject("nothing to call: check instead of folding", cmd)
        return _FOLDED[p] if type(p) is int else Folded(p)
    if t is Check:
        if owed > 0:
            raise _reject(f"cannot check: {owed} to call", cmd)
        return _CHECKED[p] if type(p) is int else Checked(p)
    stack = s.stacks[p]
    if t is Call:
        if owed <= 0:
            raise _reject("nothing to call: check instead", cmd)
        if owed >= stack:
            return Called(p, stack, True)
        return Called(p, owed, False)
    la = legal_actions(s)
    assert la is not None
    if t is AllIn:
        if la.can_raise:
            top = la.max_raise_to
            return BetPlaced(p, top, True) if la.is_bet else Raised(p, top, True)
        if la.call_amount > 0 and la.call_amount == la.stack:
            return Called(p, la.call_amount, True)
        raise _reject(
            "cannot go all-in: betting is not open to you (you may only call or fold)"
            if la.call_amount > 0
            else "cannot go all-in: nobody left can call a bet",
            cmd,
        )
    if t is Bet or t is RaiseTo:
        to: int = cmd.to  # type: ignore[union-attr]
        word = "bet" if t is Bet else "raise"
        if t is Bet and not la.is_bet:
            raise _reject(f"there is already a bet of {la.current_bet}: raise instead", cmd)
        if t is RaiseTo and la.is_bet:
            raise _reject("there is no bet to raise: bet instead", cmd)
        if not la.can_raise:
            raise _reject(
                f"cannot {word}: "
                + (
                    "only a short all-in since you acted, betting is not reopened"
                    if la.call_amount < la.stack and s.acted_level[p] >= 0
                    else "you may only call or fold"
                    if la.call_amount > 0
                    else "nobody left can call a bet"
                ),
                cmd,
            )
        if type(to) is not int:
            raise _reject(f"{word} amount must be an integer, got {to!r}", cmd)
        if to > la.max_raise_to:
            raise _reject(f"{word} to {to} exceeds your all-in of {la.max_raise_to}", cmd)
        if to < la.min_raise_to:
            raise _reject(f"{word} to {to} is below the minimum of {la.min_raise_to}", cmd)
        all_in = to == la.all_in_to
        return BetPlaced(p, to, all_in) if t is Bet else Raised(p, to, all_in)
    raise _reject(f"unknown command {cmd!r}", cmd)  # pragma: no cover


def _check_cards(s: HandState, cards: tuple[int, ...], cmd: object) -> None:
    seen = s.dealt
    for c in cards:
        if type(c) is not int or not -1 <= c < 52:
            raise _reject(f"not a card: {c!r}", cmd)
        if c == _UNKNOWN:
            continue
        bit = 1 << c
        if seen & bit:
            raise _reject(f"card {c} was already dealt", cmd)
        seen |= bit


def _decide_hole(s: HandState, cmd: DealHole) -> list[Event]:
    if s.phase is not _PH_DEAL_HOLE:
        raise _reject(f"cannot deal hole cards now (phase {s.phase.name})", cmd)
    p = cmd.player
    if not 0 <= p < s.n:
        raise _reject(f"no player {p}", cmd)
    if s.hole[p]:
        raise _reject(f"player {p} already has hole cards", cmd)
    cards = cmd.cards
    if len(cards) != 2:
        raise _reject("hold'em hole cards are exactly two cards", cmd)
    a, b = cards
    if (
        type(a) is int
        and type(b) is int
        and 0 <= a < 52
        and 0 <= b < 52
        and a != b
        and not (s.dealt >> a) & 1
        and not (s.dealt >> b) & 1
    ):
        if type(cards) is tuple and type(p) is int:
            # two known cards: the (immutable) event is shared, bounded by 10 x 52 x 51
            event = _HOLE_EVENTS.get((p, cards))
            if event is None:
                event = _HOLE_EVENTS[(p, cards)] = HoleCardsDealt(p, cards)
            return [event]
    else:
        _check_cards(s, cards, cmd)  # the general check (unknown cards, exact reasons)
    return [HoleCardsDealt(p, tuple(cards))]


def _decide_one_bet(s: HandState, cmd: Command) -> list[Event]:
    return [_decide_betting(s, cmd)]


def _decide_primary(s: HandState, cmd: Command) -> list[Event]:
    t = type(cmd)
    if t is Fold or t is Check or t is Call or t is Bet or t is RaiseTo or t is AllIn:
        return [_decide_betting(s, cmd)]
    if t is PostForcedBets:
        if s.phase is not _PH_FORCED_BETS:
            raise _reject("forced bets are already posted", cmd)
        cfg = s.config
        stacks = list(s.stacks)
        out: list[Event] = []
        if cfg.ante or cfg.antes:
            for i in _clockwise(s.n, (cfg.button + 1) % s.n):
                a = min(cfg.ante_of(i), stacks[i])
                if a:
                    stacks[i] -= a
                    out.append(AntePosted(i, a))
        sb, bb = cfg.small_blind_player, cfg.big_blind_player
        a = min(cfg.small_blind, stacks[sb])
        stacks[sb] -= a
        out.append(BlindPosted(sb, a, False))
        out.append(BlindPosted(bb, min(cfg.big_blind, stacks[bb]), True))
        return out
    if t is DealHole:
        assert isinstance(cmd, DealHole)
        return _decide_hole(s, cmd)
    if t is DealBoard:
        assert isinstance(cmd, DealBoard)
        if s.phase is not _PH_DEAL_BOARD:
            raise _reject(f"cannot deal the board now (phase {s.phase.name})", cmd)
        street = 1 if not s.board else s.street + 1
        need = _BOARD_SIZES[street - 1]
        if len(cmd.cards) != need:
            raise _reject(f"the {STREET_NAMES[street]} is {need} card(s)", cmd)
        _check_cards(s, cmd.cards, cmd)
        return [BoardDealt(street, tuple(cmd.cards))]
    if t is Show or t is Muck:
        p: int = cmd.player  # type: ignore[union-attr]
        if s.phase is not _PH_SHOWDOWN or not s.showdown_queue:
            raise _reject("no showdown decision is pending", cmd)
        if p != s.showdown_queue[0]:
            raise _reject(f"player {s.showdown_queue[0]} shows or mucks first", cmd)
        if t is Muck:
            if not _can_muck(s, p):
                raise _reject("this hand can still win a pot: it must be shown", cmd)
            return [HandMucked(p)]
        assert isinstance(cmd, Show)
        cards = s.hole[p]
        if cmd.cards is not None:
            given = tuple(cmd.cards)
            if _UNKNOWN in cards:
                if len(given) != 2 or _UNKNOWN in given:
                    raise _reject("show two known cards", cmd)
                known = [c for c in cards if c != _UNKNOWN]
                if any(c not in given for c in known):
                    raise _reject("shown cards differ from the cards dealt", cmd)
                _check_cards(s, tuple(c for c in given if c not in known), cmd)
                cards = given
            elif sorted(given) != sorted(cards):
                raise _reject("shown cards differ from the cards dealt", cmd)
        probe = s.copy()
        probe.hole = _set(s.hole, p, cards)
        return [HandShown(p, cards, _hand_rank(probe, p))]
    raise _reject(f"unknown command {cmd!r}", cmd)


_DECIDE: dict[type, Callable[[HandState, Command], list[Event]]] = {
    Fold: _decide_one_bet,
    Check: _decide_one_bet,
    Call: _decide_one_bet,
    Bet: _decide_one_bet,
    RaiseTo: _decide_one_bet,
    AllIn: _decide_one_bet,
    DealHole: _decide_hole,  # type: ignore[dict-item]
}

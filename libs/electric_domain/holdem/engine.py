"""The no-limit hold'em hand engine: ``decide`` (command → events), ``apply`` (pure fold),
``legal_actions`` (what the actor may do). Deterministic, no I/O. Rules: docs/holdem-rules.md.

Typical use::

    state = initial_state(config)
    state, events = step(state, PostForcedBets())
    state, events = step(state, DealHole(0, (12, 40)))
    ...
    legal_actions(state)            # LegalActions | None

``step`` = ``decide`` + ``apply``: it returns the new state and the events the command
produced (including automatic consequences: returned uncalled bets, closed rounds, exposed
all-in hands, awarded pots, the end of the hand). ``replay(events)`` rebuilds the state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from electric_domain.evaluator import rank7
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
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    HoleCardsDealt,
    PotAwarded,
    Raised,
    RoundClosed,
    UncalledBetReturned,
)
from electric_domain.holdem.state import (
    MAX_PLAYERS,
    STREET_NAMES,
    CommandRejected,
    HandConfig,
    HandState,
    LegalActions,
    Phase,
    ShowdownOptions,
)

_BOARD_SIZES = (3, 1, 1)
# Phase members as module constants: a global lookup is much cheaper than the enum class
# attribute access on every step. The same objects, so ``is`` comparisons are unchanged.
_PH_FORCED_BETS = Phase.FORCED_BETS
_PH_DEAL_HOLE = Phase.DEAL_HOLE
_PH_BETTING = Phase.BETTING
_PH_DEAL_BOARD = Phase.DEAL_BOARD
_PH_SHOWDOWN = Phase.SHOWDOWN
_PH_COMPLETE = Phase.COMPLETE
_UNKNOWN = -1
_T = TypeVar("_T")


# --------------------------------------------------------------------------- helpers


def _set(t: tuple[_T, ...], i: int, v: _T) -> tuple[_T, ...]:
    return (*t[:i], v, *t[i + 1 :])


def _clockwise(n: int, start: int) -> range | list[int]:
    if start == 0:
        return range(n)
    return [*range(start, n), *range(start)]


def _begin_betting(s: HandState) -> None:
    """Set up a betting round on a private working copy."""
    n = s.n
    cfg = s.config
    opener = (cfg.big_blind_player + 1) % n if s.street == 0 else (cfg.button + 1) % n
    stacks, bets, folded = s.stacks, s.bets, s.folded
    totals = sorted(bets[i] + stacks[i] for i in range(n) if not folded[i])
    second = totals[-2] if len(totals) > 1 else 0
    queue = [
        i for i in _clockwise(n, opener) if not folded[i] and stacks[i] > 0 and second - bets[i] > 0
    ]
    if len(queue) == 1 and bets[queue[0]] >= max(bets):
        queue = []
    s.to_act = tuple(queue)
    s.acted_level = (-1,) * n
    s.cbr = 0
    s.aggressor = -1
    s.phase = _PH_BETTING


def _showdown_order(s: HandState) -> tuple[int, ...]:
    n = s.n
    start = s.aggressor
    if start < 0 or s.folded[start]:
        start = (s.config.button + 1) % n
    return tuple(i for i in _clockwise(n, start) if not s.folded[i])


def _hand_rank(s: HandState, player: int) -> int:
    hole = s.hole[player]
    board = s.board
    if len(board) != 5 or len(hole) != 2 or _UNKNOWN in hole or _UNKNOWN in board:
        return -1
    return rank7(hole[0], hole[1], board[0], board[1], board[2], board[3], board[4])


# --------------------------------------------------------------------------- apply


def initial_state(config: HandConfig) -> HandState:
    """The state right after :class:`HandStarted` for ``config``."""
    return apply(None, HandStarted(config))


def _apply_started(_: HandState | None, e: HandStarted) -> HandState:
    cfg = e.config
    n = len(cfg.stacks)
    s = HandState.__new__(HandState)
    zeros = (0,) * n
    falses = (False,) * n
    s.config = cfg
    s.n = n
    s.min_bet = cfg.effective_min_bet
    s.dealt = 0
    s.phase = _PH_FORCED_BETS
    s.street = -1
    s.stacks = tuple(cfg.stacks)
    s.bets = zeros
    s.committed = zeros
    s.folded = falses
    s.hole = ((),) * n
    s.board = ()
    s.to_act = ()
    s.acted_level = (-1,) * n
    s.cbr = 0
    s.aggressor = -1
    s.runout = False
    s.showdown_queue = ()
    s.shown = falses
    s.shown_rank = (-1,) * n
    s.mucked = falses
    s.winnings = zeros
    return s


def _apply_ante(s: HandState, e: AntePosted) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    return s


def _apply_blind(s: HandState, e: BlindPosted) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.bets = _set(s.bets, p, s.bets[p] + a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    if e.big:
        s.phase = _PH_DEAL_HOLE
    return s


def _apply_hole(s: HandState, e: HoleCardsDealt) -> HandState:
    cards = e.cards
    dealt = s.dealt
    for c in cards:
        if c >= 0:
            dealt |= 1 << c
    s.dealt = dealt
    p = e.player
    hole = s.hole
    s.hole = hole = (*hole[:p], tuple(cards), *hole[p + 1 :])
    if all(hole):
        s.street = 0
        _begin_betting(s)
    return s


def _apply_board(s: HandState, e: BoardDealt) -> HandState:
    for c in e.cards:
        if c >= 0:
            s.dealt |= 1 << c
    s.board = s.board + tuple(e.cards)
    s.street = e.street
    if s.runout:
        s.phase = _PH_SHOWDOWN if len(s.board) == 5 else _PH_DEAL_BOARD
        if s.phase is _PH_SHOWDOWN:
            s.shown_rank = tuple(_hand_rank(s, i) if s.shown[i] else -1 for i in range(s.n))
    else:
        _begin_betting(s)
    return s


def _apply_fold(s: HandState, e: Folded) -> HandState:
    s.folded = _set(s.folded, e.player, True)
    s.to_act = s.to_act[1:]
    return s


def _apply_check(s: HandState, e: Checked) -> HandState:
    s.acted_level = _set(s.acted_level, e.player, max(s.bets))
    s.to_act = s.to_act[1:]
    return s


def _apply_call(s: HandState, e: Called) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.bets = _set(s.bets, p, s.bets[p] + a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    s.acted_level = _set(s.acted_level, p, max(s.bets))
    s.to_act = s.to_act[1:]
    return s


def _apply_wager(s: HandState, e: BetPlaced | Raised) -> HandState:
    p, to = e.player, e.to
    top = max(s.bets)
    delta = to - s.bets[p]
    s.stacks = stacks = _set(s.stacks, p, s.stacks[p] - delta)
    s.bets = _set(s.bets, p, to)
    s.committed = _set(s.committed, p, s.committed[p] + delta)
    increment = to - top
    if increment > s.cbr:
        s.cbr = increment
    s.acted_level = _set(s.acted_level, p, to)
    s.aggressor = p
    n = s.n
    folded = s.folded
    s.to_act = tuple(
        i for i in _clockwise(n, (p + 1) % n) if i != p and not folded[i] and stacks[i] > 0
    )
    return s


def _apply_uncalled(s: HandState, e: UncalledBetReturned) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] + a)
    s.bets = _set(s.bets, p, s.bets[p] - a)
    s.committed = _set(s.committed, p, s.committed[p] - a)
    return s


def _apply_round_closed(s: HandState, e: RoundClosed) -> HandState:
    n = s.n
    s.bets = (0,) * n
    s.to_act = ()
    folded, stacks = s.folded, s.stacks
    live = [i for i in range(n) if not folded[i]]
    if len(live) == 1:
        s.phase = _PH_SHOWDOWN
        s.showdown_queue = ()
        return s
    with_chips = sum(1 for i in live if stacks[i] > 0)
    if with_chips <= 1:
        s.runout = True  # all-in, no more betting possible: expose every hand, run the board
    if s.runout:
        s.showdown_queue = ()
        s.phase = _PH_SHOWDOWN if e.street == 3 else _PH_DEAL_BOARD
    elif e.street == 3:
        s.phase = _PH_SHOWDOWN
        s.showdown_queue = _showdown_order(s)
    else:
        s.phase = _PH_DEAL_BOARD
    return s


def _apply_shown(s: HandState, e: HandShown) -> HandState:
    for c in e.cards:
        if c >= 0:
            s.dealt |= 1 << c
    p = e.player
    s.hole = _set(s.hole, p, tuple(e.cards))
    s.shown = _set(s.shown, p, True)
    s.shown_rank = _set(s.shown_rank, p, e.rank)
    if s.showdown_queue and s.showdown_queue[0] == p:
        s.showdown_queue = s.showdown_queue[1:]
    return s


def _apply_mucked(s: HandState, e: HandMucked) -> HandState:
    s.mucked = _set(s.mucked, e.player, True)
    s.showdown_queue = s.showdown_queue[1:]
    return s


def _apply_awarded(s: HandState, e: PotAwarded) -> HandState:
    stacks, won = list(s.stacks), list(s.winnings)
    for p, share in zip(e.winners, e.shares, strict=True):
        stacks[p] += share
        won[p] += share
    s.stacks = tuple(stacks)
    s.winnings = tuple(won)
    return s


def _apply_ended(s: HandState, e: HandEnded) -> HandState:
    s.phase = _PH_COMPLETE
    s.showdown_queue = ()
    return s


_APPLY: dict[type, Callable[[HandState, Event], HandState]] = {
    AntePosted: _apply_ante,  # type: ignore[dict-item]
    BlindPosted: _apply_blind,  # type: ignore[dict-item]
    HoleCardsDealt: _apply_hole,  # type: ignore[dict-item]
    BoardDealt: _apply_board,  # type: ignore[dict-item]
    Folded: _apply_fold,  # type: ignore[dict-item]
    Checked: _apply_check,  # type: ignore[dict-item]
    Called: _apply_call,  # type: ignore[dict-item]
    BetPlaced: _apply_wager,  # type: ignore[dict-item]
    Raised: _apply_wager,  # type: ignore[dict-item]
    UncalledBetReturned: _apply_uncalled,  # type: ignore[dict-item]
    RoundClosed: _apply_round_closed,  # type: ignore[dict-item]
    HandShown: _apply_shown,  # type: ignore[dict-item]
    HandMucked: _apply_mucked,  # type: ignore[dict-item]
    PotAwarded: _apply_awarded,  # type: ignore[dict-item]
    HandEnded: _apply_ended,  # type: ignore[dict-item]
}


def apply(state: HandState | None, event: Event) -> HandState:
    """The state after ``event`` (a new object; ``state`` is not modified).

    Events are trusted facts (produced by :func:`decide`); ``apply`` does not re-validate.
    ``state`` is ``None`` only for :class:`HandStarted`.
    """
    if type(event) is HandStarted:
        return _apply_started(state, event)
    if state is None:
        raise ValueError("the first event of a hand must be HandStarted")
    return _APPLY[type(event)](state.copy(), event)


def replay(events: Iterable[Event]) -> HandState:
    """Fold a hand's events (starting with :class:`HandStarted`) into its state."""
    state: HandState | None = None
    for event in events:
        state = apply(state, event)
    if state is None:
        raise ValueError("no events")
    return state


# --------------------------------------------------------------------------- questions


def _can_raise(s: HandState, p: int, top: int) -> bool:
    stacks, bets = s.stacks, s.bets
    if stacks[p] <= top - bets[p]:
        return False  # covered: calling takes the whole stack
    level = s.acted_level[p]
    if level >= 0:
        full = s.cbr if s.cbr > s.min_bet else s.min_bet
        if top - level < full:
            return False  # only a short all-in since this player acted: not reopened
    folded = s.folded
    # someone else must be able to put in more than the current bet
    for j in range(s.n):  # noqa: SIM110 - a plain loop is faster than any() on the hot path
        if j != p and not folded[j] and stacks[j] + bets[j] > top:
            return True
    return False


def legal_actions(state: HandState) -> LegalActions | None:
    """What the player to act may do, or ``None`` when no betting decision is pending."""
    if state.phase is not _PH_BETTING or not state.to_act:
        return None
    p = state.to_act[0]
    bets = state.bets
    top = max(bets)
    bet = bets[p]
    stack = state.stacks[p]
    owed = top - bet
    call = owed if owed < stack else stack
    all_in_to = stack + bet
    if _can_raise(state, p, top):
        cbr = state.cbr
        mb = state.min_bet
        min_to = top + (cbr if cbr > mb else mb)
        if min_to > all_in_to:
            min_to = all_in_to
        return LegalActions(
            p, owed > 0, owed <= 0, call, True, top == 0, min_to, all_in_to, all_in_to, top,
            bet, stack,
        )  # fmt: skip
    return LegalActions(
        p, owed > 0, owed <= 0, call, False, top == 0, 0, 0, all_in_to, top, bet, stack
    )


def _cannot_win(s: HandState, p: int, my_rank: int) -> bool:
    committed = s.committed[p]
    for q in range(s.n):
        if (
            q != p
            and s.shown[q]
            and not s.folded[q]
            and s.committed[q] >= committed
            and s.shown_rank[q] > my_rank >= 0
        ):
            return True
    return False


def showdown_options(state: HandState) -> ShowdownOptions | None:
    """The pending showdown decision, or ``None``."""
    if state.phase is not _PH_SHOWDOWN or not state.showdown_queue:
        return None
    p = state.showdown_queue[0]
    return ShowdownOptions(p, _can_muck(state, p))


def _can_muck(s: HandState, p: int) -> bool:
    if _UNKNOWN in s.hole[p]:
        return True  # the record cannot know; treated as a forfeit
    return _cannot_win(s, p, _hand_rank(s, p))


# --------------------------------------------------------------------------- decide


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


def _layers(committed: tuple[int, ...], contenders: list[int]) -> list[tuple[int, tuple[int, ...]]]:
    """Pots by contribution level; consecutive levels with the same contenders merged."""
    pots: list[tuple[int, tuple[int, ...]]] = []
    prev = 0
    for level in sorted(set(committed)):
        if level <= 0:
            continue
        amount = 0
        for c in committed:
            if c > prev:
                amount += (c if c < level else level) - prev
        eligible = tuple(i for i in contenders if committed[i] >= level)
        if pots and (pots[-1][1] == eligible or not eligible):
            pots[-1] = (pots[-1][0] + amount, pots[-1][1])
        else:
            pots.append((amount, eligible))
        prev = level
    return pots


def _pot_winners(
    eligible: tuple[int, ...], ranks: tuple[int, ...], order: list[int]
) -> tuple[int, ...]:
    if len(eligible) == 1:
        return eligible
    missing = [i for i in eligible if ranks[i] < 0]
    if missing:
        raise CommandRejected(f"the outcome depends on unknown hole cards of player(s) {missing}")
    best = max(ranks[i] for i in eligible)
    return tuple(i for i in order if i in eligible and ranks[i] == best)


def _award_events(s: HandState) -> list[Event]:
    n = s.n
    committed = s.committed
    folded, mucked = s.folded, s.mucked
    live = [i for i in range(n) if not folded[i] and not mucked[i]]
    order = list(_clockwise(n, (s.config.button + 1) % n))
    out: list[Event] = []
    if len(live) == 1:
        total = sum(committed)
        if total:
            out.append(PotAwarded(0, total, (live[0],), (live[0],), (total,)))
        return out
    ranks = s.shown_rank
    # A hand that wins no pot is out of contention (like a muck); the pots are then formed
    # among the contenders, so pots with the same contenders are split once.
    winning: set[int] = set()
    for _, eligible in _layers(committed, live):
        winning.update(_pot_winners(eligible, ranks, order))
    contenders = [i for i in live if i in winning]
    for index, (amount, eligible) in enumerate(_layers(committed, contenders)):
        winners = _pot_winners(eligible, ranks, order)
        q, r = divmod(amount, len(winners))
        shares = tuple(q + r if k == 0 else q for k in range(len(winners)))
        out.append(PotAwarded(index, amount, eligible, winners, shares))
    return out


def _auto_events(s: HandState) -> Event | list[Event] | None:
    """The next automatic consequence of ``s``, if any."""
    phase = s.phase
    if phase is _PH_BETTING:
        if s.to_act and s.folded.count(False) > 1:
            return None
        bets = s.bets
        top = max(bets)
        holders = [i for i in range(s.n) if bets[i] == top]
        if top > 0 and len(holders) == 1:
            p = holders[0]
            second = max(bets[i] for i in range(s.n) if i != p)
            return [UncalledBetReturned(p, top - second), _round_closed(s.street)]
        return _round_closed(s.street)
    if phase is _PH_DEAL_BOARD or phase is _PH_SHOWDOWN:
        if s.runout and not all(s.shown[i] for i in range(s.n) if not s.folded[i]):
            order = [i for i in _showdown_order(s) if not s.shown[i]]
            return [HandShown(i, s.hole[i], _hand_rank(s, i)) for i in order]
        if phase is _PH_SHOWDOWN and not s.showdown_queue:
            awards = _award_events(s)
            final = list(s.stacks)
            for e in awards:
                assert isinstance(e, PotAwarded)
                for w, share in zip(e.winners, e.shares, strict=True):
                    final[w] += share
            return [*awards, HandEnded(tuple(final))]
    return None


_DECIDE: dict[type, Callable[[HandState, Command], list[Event]]] = {
    Fold: _decide_one_bet,
    Check: _decide_one_bet,
    Call: _decide_one_bet,
    Bet: _decide_one_bet,
    RaiseTo: _decide_one_bet,
    AllIn: _decide_one_bet,
    DealHole: _decide_hole,  # type: ignore[dict-item]
}


def step(state: HandState, command: Command) -> tuple[HandState, list[Event]]:
    """Validate ``command`` against ``state``; return the new state and the events.

    Raises :class:`CommandRejected` (with a human ``reason``) if the command is illegal;
    ``state`` is never modified either way.
    """
    s = state.copy()  # private working copy: the apply functions update it in place
    return s, step_in_place(s, command)


def step_in_place(s: HandState, command: Command) -> list[Event]:
    """:func:`step` for a caller that owns ``s`` and never needs the previous state
    (e.g. replaying a whole record): ``s`` itself becomes the new state, no copy is made.

    Raises :class:`CommandRejected` exactly as :func:`step` does; ``s`` is then unchanged
    unless an automatic consequence fails (unknown cards at showdown), after which ``s``
    must be discarded.
    """
    events = _DECIDE.get(type(command), _decide_primary)(s, command)  # pure: may raise
    apply_fns = _APPLY
    for e in events:
        apply_fns[type(e)](s, e)
    phase = s.phase
    if phase is _PH_DEAL_HOLE or (phase is _PH_BETTING and s.to_act and s.folded.count(False) > 1):
        return events  # fast path: nothing automatic can follow
    while True:
        more = _auto_events(s)
        if more is None:
            return events
        if isinstance(more, list):
            for e in more:
                apply_fns[type(e)](s, e)
            events.extend(more)
        else:
            apply_fns[type(more)](s, more)
            events.append(more)
            if type(more) is HandEnded:
                return events


def decide(state: HandState, command: Command) -> list[Event]:
    """The events ``command`` produces in ``state`` (raises :class:`CommandRejected`)."""
    return step(state, command)[1]

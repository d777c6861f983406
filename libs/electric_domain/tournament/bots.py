"""Bot strategies (pure: a decision from what the bot sees and an injected RNG).

* `RandomBot` — a uniformly random legal action (raise amounts uniform in the legal range);
  sometimes pre-selects a random offered pre-turn action (exercises seed §5.b paths).
* `TightAggressiveBot` — plays strong starting hands, raises them, bets made hands post-flop,
  check/folds the rest.
* `TimeoutBot` — never acts: every turn ends by the timer (check if possible, else fold).
* `SitOutBot` — sits out at its turn; sits back in after `back_after_hands` hands (default
  5; None = never) and sits out again at its next turn.

A decision is `Decide(move, amount, think_ms)`, `TimeOut()` (let the timer run) or
`GoSitOut()`. The simulator turns them into tournament commands in virtual time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from electric_domain.cards import rank_of, suit_of
from electric_domain.tournament.hand_port import Legal, Move
from electric_domain.tournament.preaction import PreAction


@dataclass(frozen=True, slots=True)
class BotContext:
    """What a bot sees at its turn (its own cards only)."""

    seat: int
    hole: tuple[int, ...]
    board: tuple[int, ...]
    pot: int
    big_blind: int
    players_in_hand: int
    hand_no: int
    legal: Legal


@dataclass(frozen=True, slots=True)
class Decide:
    move: Move
    amount: int
    think_ms: int


@dataclass(frozen=True, slots=True)
class TimeOut:
    pass


@dataclass(frozen=True, slots=True)
class GoSitOut:
    pass


Decision = Decide | TimeOut | GoSitOut


class Bot(Protocol):
    name: str

    def decide(self, ctx: BotContext, rng: random.Random) -> Decision: ...

    def pre_action(self, offered: frozenset[PreAction], rng: random.Random) -> PreAction | None: ...

    def wants_sit_in(self, hand_no: int) -> bool: ...


def _think(rng: random.Random) -> int:
    return rng.randint(500, 4000)


class RandomBot:
    name = "random"

    def __init__(self, pre_action_rate: float = 0.15) -> None:
        self.pre_action_rate = pre_action_rate

    def decide(self, ctx: BotContext, rng: random.Random) -> Decision:
        la = ctx.legal
        options: list[Decide] = []
        t = _think(rng)
        if la.can_fold and not la.can_check:  # folding a free check helps nobody
            options.append(Decide(Move.FOLD, 0, t))
        if la.can_check:
            options.append(Decide(Move.CHECK, 0, t))
        if la.call_amount > 0:
            options.append(Decide(Move.CALL, 0, t))
        if la.min_raise_to is not None and la.max_raise_to is not None:
            options.append(Decide(la.wager_move, rng.randint(la.min_raise_to, la.max_raise_to), t))
            options.append(Decide(Move.ALL_IN, 0, t))
        return rng.choice(options)

    def pre_action(self, offered: frozenset[PreAction], rng: random.Random) -> PreAction | None:
        if not offered or rng.random() >= self.pre_action_rate:
            return None
        return rng.choice(sorted(offered))

    def wants_sit_in(self, hand_no: int) -> bool:
        return False


def _preflop_strength(hole: tuple[int, ...]) -> int:
    """0 (trash) .. 3 (premium), a crude chart."""
    a, b = sorted((rank_of(hole[0]), rank_of(hole[1])), reverse=True)
    suited = suit_of(hole[0]) == suit_of(hole[1])
    if a == b:
        return 3 if a >= 8 else 2  # TT+ premium, other pairs good
    if a == 12:
        return 3 if b >= 10 else 2 if b >= 7 or suited else 1
    if a >= 10 and b >= 9:
        return 2
    if suited and a - b == 1 and b >= 5:
        return 1
    return 0


def _made_hand(hole: tuple[int, ...], board: tuple[int, ...]) -> int:
    """0 nothing, 1 pair using a hole card, 2 two pair or better (crude)."""
    board_ranks = [rank_of(c) for c in board]
    hr = [rank_of(c) for c in hole]
    hits = sum(1 for r in hr if r in board_ranks)
    if hr[0] == hr[1]:
        return 2 if hr[0] in board_ranks else 1
    return min(2, hits)


class TightAggressiveBot:
    name = "tag"

    def decide(self, ctx: BotContext, rng: random.Random) -> Decision:
        la = ctx.legal
        t = _think(rng)
        strength = (
            _preflop_strength(ctx.hole) if not ctx.board else _made_hand(ctx.hole, ctx.board) + 1
        )
        short = la.stack <= 10 * ctx.big_blind
        can_raise = la.min_raise_to is not None and la.max_raise_to is not None
        if strength >= 3 or (short and strength >= 2):
            if can_raise:
                assert la.min_raise_to is not None and la.max_raise_to is not None
                if short:
                    return Decide(Move.ALL_IN, 0, t)
                target = max(la.min_raise_to, 3 * ctx.big_blind, ctx.pot)
                return Decide(la.wager_move, min(target, la.max_raise_to), t)
            if la.call_amount > 0:
                return Decide(Move.CALL, 0, t)
            return Decide(Move.CHECK, 0, t)
        if strength == 2:
            if la.call_amount == 0:
                return Decide(Move.CHECK, 0, t)
            if la.call_amount <= max(ctx.big_blind * 2, ctx.pot // 3):
                return Decide(Move.CALL, 0, t)
            return Decide(Move.FOLD, 0, t)
        if la.can_check:
            return Decide(Move.CHECK, 0, t)
        return Decide(Move.FOLD, 0, t)

    def pre_action(self, offered: frozenset[PreAction], rng: random.Random) -> PreAction | None:
        return None

    def wants_sit_in(self, hand_no: int) -> bool:
        return False


class TimeoutBot:
    name = "timeout"

    def decide(self, ctx: BotContext, rng: random.Random) -> Decision:
        return TimeOut()

    def pre_action(self, offered: frozenset[PreAction], rng: random.Random) -> PreAction | None:
        return None

    def wants_sit_in(self, hand_no: int) -> bool:
        return False


class SitOutBot:
    name = "sitout"

    def __init__(self, back_after_hands: int | None = 5) -> None:
        self.back_after_hands = back_after_hands
        self._sat_out_at: int | None = None

    def decide(self, ctx: BotContext, rng: random.Random) -> Decision:
        if self._sat_out_at is None:
            self._sat_out_at = ctx.hand_no
        return GoSitOut()

    def pre_action(self, offered: frozenset[PreAction], rng: random.Random) -> PreAction | None:
        return None

    def wants_sit_in(self, hand_no: int) -> bool:
        return (
            self.back_after_hands is not None
            and self._sat_out_at is not None
            and hand_no >= self._sat_out_at + self.back_after_hands
        )


BOTS: dict[str, type[RandomBot] | type[TightAggressiveBot] | type[TimeoutBot] | type[SitOutBot]] = {
    "random": RandomBot,
    "tag": TightAggressiveBot,
    "timeout": TimeoutBot,
    "sitout": SitOutBot,
}

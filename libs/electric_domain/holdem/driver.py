"""High-level driver: play a whole hand from a deck, feeding only player decisions.

    hand = HoldemHand.start(stacks=(500, 500, 500), button=0, small_blind=10, big_blind=20,
                            seed=seed)          # or deck=... (a 52-card order)
    while not hand.is_complete:
        la = hand.legal_actions()                # LegalActions for hand.actor
        hand.act(Call(la.player))                # or hand.call(), hand.raise_to(60), ...
    hand.stacks                                  # final stacks

Dealing from the deck (positions in ``deck``): hole cards one at a time clockwise starting
left of the button, two rounds (position ``r*n + k`` is round ``r`` for the ``k``-th player
from the button's left); then burn, flop (3), burn, turn, burn, river. The deck of a seed is
:func:`electric_domain.deck.derive_deck`. With ``auto_showdown`` (default) showdown decisions
are made by the house rule: show a hand that can still win, muck one that cannot.
"""

from __future__ import annotations

from collections.abc import Sequence

from electric_domain.deck import FairDeck, derive_deck
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
from electric_domain.holdem.engine import (
    _can_muck,
    initial_state,
    legal_actions,
    showdown_options,
    step,
)
from electric_domain.holdem.events import Event, HandStarted
from electric_domain.holdem.state import (
    CommandRejected,
    HandConfig,
    HandState,
    LegalActions,
    Phase,
    ShowdownOptions,
)


def deal_positions(n: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, ...], ...]]:
    """(hole positions per dealing order, board positions per street) for ``n`` players."""
    hole = tuple((k, n + k) for k in range(n))
    b = 2 * n
    board = ((b + 1, b + 2, b + 3), (b + 5,), (b + 7,))
    return hole, board


def timeout_command(state: HandState) -> Command | None:
    """What a player who runs out of time does: check if possible, else fold."""
    la = legal_actions(state)
    if la is None:
        so = showdown_options(state)
        if so is None:
            return None
        return Muck(so.player) if so.can_muck else Show(so.player)
    return Check(la.player) if la.can_check else Fold(la.player)


def advance(
    state: HandState, deck: Sequence[int], *, auto_showdown: bool = True
) -> tuple[HandState, list[Event]]:
    """Pure: perform every step that needs no player decision — post forced bets, deal hole
    cards and streets from ``deck`` (positions as in the module docstring), and, with
    ``auto_showdown``, show/muck by the house rule. Returns the new state and the events;
    stops at the next player decision or when the hand is complete."""
    events: list[Event] = []
    while True:
        s = state
        phase = s.phase
        cmd: Command
        if phase is Phase.BETTING or phase is Phase.COMPLETE:
            return state, events
        if phase is Phase.FORCED_BETS:
            cmd = PostForcedBets()
        elif phase is Phase.DEAL_HOLE:
            n = s.n
            first = (s.config.button + 1) % n
            p = next(i for i in ((first + k) % n for k in range(n)) if not s.hole[i])
            k = (p - first) % n
            cmd = DealHole(p, (deck[k], deck[n + k]))
        elif phase is Phase.DEAL_BOARD:
            b = 2 * s.n
            if not s.board:
                cmd = DealBoard((deck[b + 1], deck[b + 2], deck[b + 3]))
            else:
                cmd = DealBoard((deck[b + 5] if len(s.board) == 3 else deck[b + 7],))
        elif phase is Phase.SHOWDOWN and s.showdown_queue and auto_showdown:
            p = s.showdown_queue[0]
            cmd = Muck(p) if _can_muck(s, p) else Show(p)
        else:
            return state, events
        state, new = step(s, cmd)
        events.extend(new)


def start_hand(
    config: HandConfig, deck: Sequence[int], *, auto_showdown: bool = True
) -> tuple[HandState, list[Event]]:
    """Pure: a new hand up to its first player decision. The events start with
    :class:`HandStarted`; fold them with :func:`~electric_domain.holdem.engine.apply`."""
    if sorted(deck) != list(range(52)):
        raise ValueError("deck must be a permutation of the 52 cards")
    state = initial_state(config)
    state, events = advance(state, deck, auto_showdown=auto_showdown)
    return state, [HandStarted(config), *events]


class HoldemHand:
    """One hand, dealt from ``deck``; apply player commands, everything else is automatic.

    ``events`` is the full event list (replayable with
    :func:`electric_domain.holdem.engine.replay`); ``state`` the current state.
    """

    __slots__ = ("auto_showdown", "deck", "events", "fair", "state")

    def __init__(
        self,
        config: HandConfig,
        deck: Sequence[int],
        *,
        auto_showdown: bool = True,
        fair: FairDeck | None = None,
    ) -> None:
        if sorted(deck) != list(range(52)):
            raise ValueError("deck must be a permutation of the 52 cards")
        self.deck = tuple(deck)
        self.fair = fair
        self.auto_showdown = auto_showdown
        self.state = initial_state(config)
        self.events: list[Event] = [HandStarted(config)]
        self._advance()

    @classmethod
    def start(
        cls,
        stacks: Sequence[int],
        button: int,
        small_blind: int,
        big_blind: int,
        ante: int = 0,
        *,
        seed: bytes | None = None,
        deck: Sequence[int] | None = None,
        min_bet: int = 0,
        auto_showdown: bool = True,
    ) -> HoldemHand:
        """Start a hand dealt from ``deck`` or from the deck of ``seed`` (one is required:
        the domain takes no randomness of its own — draw seeds with
        :func:`electric_domain.deck.new_seed` at the edge)."""
        config = HandConfig(tuple(stacks), button, small_blind, big_blind, ante, min_bet)
        fair: FairDeck | None = None
        if deck is None:
            if seed is None:
                raise ValueError("pass seed= (see electric_domain.deck.new_seed) or deck=")
            fair = FairDeck.from_seed(seed)
            deck = fair.cards
        return cls(config, deck, auto_showdown=auto_showdown, fair=fair)

    # ---------------------------------------------------------------- queries
    @property
    def config(self) -> HandConfig:
        return self.state.config

    @property
    def is_complete(self) -> bool:
        return self.state.phase is Phase.COMPLETE

    @property
    def actor(self) -> int | None:
        return self.state.actor

    @property
    def stacks(self) -> tuple[int, ...]:
        return self.state.stacks

    def legal_actions(self) -> LegalActions | None:
        return legal_actions(self.state)

    def showdown_options(self) -> ShowdownOptions | None:
        return showdown_options(self.state)

    # ---------------------------------------------------------------- commands
    def act(self, command: Command) -> list[Event]:
        """Apply a player command (betting, show, muck); returns all resulting events,
        including the automatic dealing that follows. Raises :class:`CommandRejected`."""
        if type(command) in (PostForcedBets, DealHole, DealBoard):
            raise CommandRejected("the driver deals and posts by itself", command)
        start = len(self.events)
        self.state, events = step(self.state, command)
        self.events.extend(events)
        self._advance()
        return self.events[start:]

    def _actor(self) -> int:
        p = self.state.actor
        if p is None:
            raise CommandRejected("nobody is to act")
        return p

    def fold(self) -> list[Event]:
        return self.act(Fold(self._actor()))

    def check(self) -> list[Event]:
        return self.act(Check(self._actor()))

    def call(self) -> list[Event]:
        return self.act(Call(self._actor()))

    def bet(self, to: int) -> list[Event]:
        return self.act(Bet(self._actor(), to))

    def raise_to(self, to: int) -> list[Event]:
        return self.act(RaiseTo(self._actor(), to))

    def all_in(self) -> list[Event]:
        return self.act(AllIn(self._actor()))

    def show(self) -> list[Event]:
        return self.act(Show(self._actor()))

    def muck(self) -> list[Event]:
        return self.act(Muck(self._actor()))

    def timeout(self) -> list[Event]:
        """The actor ran out of time: check if possible, else fold."""
        cmd = timeout_command(self.state)
        if cmd is None:
            raise CommandRejected("nobody is to act")
        return self.act(cmd)

    # ---------------------------------------------------------------- automation
    def _advance(self) -> None:
        self.state, events = advance(self.state, self.deck, auto_showdown=self.auto_showdown)
        self.events.extend(events)


def deck_for_seed(seed: bytes) -> tuple[int, ...]:
    """Alias of :func:`electric_domain.deck.derive_deck`."""
    return derive_deck(seed)

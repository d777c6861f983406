"""No-limit Texas hold'em hand engine (2–10 players), pure and deterministic.

Public API (import from here):

* :class:`HandConfig` — stacks, button, blinds, ante, min bet.
* :class:`HoldemHand` — high-level driver: deals from a (seeded) deck, takes player actions.
* :func:`start_hand`, :func:`advance` — the same automation as pure functions over states
  (post, deal from a deck, house-rule showdown) for callers that store events themselves.
* :func:`initial_state`, :func:`decide`, :func:`step`, :func:`apply`, :func:`replay` —
  the event-sourced core; :func:`legal_actions`, :func:`showdown_options` — questions.
* :class:`Move` — a player's decision (BET and RAISE_TO distinct), :func:`command_for`.
* Commands (:mod:`.commands`) and events (:mod:`.events`), all frozen dataclasses.
* :class:`CommandRejected` — raised for illegal commands (``.reason``); nothing changes.
* Events and commands encode to canonical JSON with the platform's one dataclass codec
  (``electric_eventlog.dataclass_codec``), outside this pure package.

Rules and conventions: ``docs/holdem-rules.md``.
"""

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
from electric_domain.holdem.driver import (
    HoldemHand,
    advance,
    deal_positions,
    start_hand,
    timeout_command,
)
from electric_domain.holdem.engine import (
    apply,
    decide,
    initial_state,
    legal_actions,
    replay,
    showdown_options,
    step,
    step_fold_anyway,
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
from electric_domain.holdem.moves import Move, command_for
from electric_domain.holdem.state import (
    CommandRejected,
    HandConfig,
    HandState,
    LegalActions,
    Phase,
    ShowdownOptions,
    Street,
)

__all__ = [
    "AllIn",
    "AntePosted",
    "Bet",
    "BetPlaced",
    "BlindPosted",
    "BoardDealt",
    "Call",
    "Called",
    "Check",
    "Checked",
    "Command",
    "CommandRejected",
    "DealBoard",
    "DealHole",
    "Event",
    "Fold",
    "Folded",
    "HandConfig",
    "HandEnded",
    "HandMucked",
    "HandShown",
    "HandStarted",
    "HandState",
    "HoldemHand",
    "HoleCardsDealt",
    "LegalActions",
    "Move",
    "Muck",
    "Phase",
    "PostForcedBets",
    "PotAwarded",
    "RaiseTo",
    "Raised",
    "RoundClosed",
    "Show",
    "ShowdownOptions",
    "Street",
    "UncalledBetReturned",
    "advance",
    "apply",
    "command_for",
    "deal_positions",
    "decide",
    "initial_state",
    "legal_actions",
    "replay",
    "showdown_options",
    "start_hand",
    "step",
    "step_fold_anyway",
    "timeout_command",
]

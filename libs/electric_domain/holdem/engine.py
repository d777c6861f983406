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

from electric_domain.holdem.commands import Command
from electric_domain.holdem.decide import _DECIDE, _decide_primary
from electric_domain.holdem.events import Event, Folded, HandEnded
from electric_domain.holdem.fold import (
    _APPLY,
    _PH_BETTING,
    _PH_DEAL_HOLE,
    apply,
    initial_state,
    replay,
)
from electric_domain.holdem.rules import _can_muck, legal_actions, showdown_options
from electric_domain.holdem.showdown import _auto_events
from electric_domain.holdem.state import CommandRejected, HandState

# The engine's public surface (and ``_can_muck``, used by the driver and the PHH replay).
__all__ = [
    "_can_muck",
    "apply",
    "decide",
    "initial_state",
    "legal_actions",
    "replay",
    "showdown_options",
    "step",
    "step_fold_anyway",
    "step_in_place",
]


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
    return _with_consequences(s, events)


def _with_consequences(s: HandState, events: list[Event]) -> list[Event]:
    """Apply ``events`` to ``s`` in place, then every automatic consequence."""
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


def step_fold_anyway(state: HandState, player: int) -> tuple[HandState, list[Event]]:
    """The actor ``player`` folds even with nothing to call (the engine's own rule, like
    PokerKit's, refuses that fold: "check instead"). A table rule for callers that always
    offer fold (seed 000: fold is offered to every player, the big blind too); the events are
    the ordinary `Folded` and its automatic consequences, so `apply`/`replay` need nothing
    new. Raises :class:`CommandRejected` when ``player`` is not to act."""
    la = legal_actions(state)
    if la is None or la.player != player:
        raise CommandRejected(f"player {player} is not to act")
    s = state.copy()
    return s, _with_consequences(s, [Folded(player)])


def decide(state: HandState, command: Command) -> list[Event]:
    """The events ``command`` produces in ``state`` (raises :class:`CommandRejected`)."""
    return step(state, command)[1]

"""Replay of parsed PHH hands through our hold'em engine (amounts exact in minor units).

Amounts: decimal amounts are replayed exactly in integer minor units — every amount of a hand
is scaled by ``10**k`` where ``k`` is the largest number of decimal places used in that hand;
results are scaled back (never floats). Players ``pK`` are our index ``K-1`` with
``button = N-1``; see :mod:`electric_domain.phh` for the actions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import repeat
from typing import Any

from electric_domain.cards import UNKNOWN_CARD, parse_cards
from electric_domain.holdem.commands import (
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
    step_fold_anyway,
    step_in_place,
)
from electric_domain.holdem.events import Event, HandStarted
from electric_domain.holdem.state import CommandRejected, HandConfig, HandState, Phase
from electric_domain.phh.parse import PhhError, PhhHand, iter_hands


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Outcome of replaying one hand. ``finishing_stacks`` in the file's units (``int``
    when the hand uses integers, else :class:`Decimal`); ``scale`` = 10**decimal places.
    ``events`` is the hand's event log when the replay was asked to keep it, else ``()``."""

    index: int
    finishing_stacks: tuple[int | Decimal, ...] | None
    error: str | None
    minor_stacks: tuple[int, ...] | None = None
    scale: int = 1
    events: tuple[Event, ...] = ()


_AMOUNT_FIELDS = ("antes", "blinds_or_straddles", "starting_stacks", "min_bet")


def _places(v: Any) -> int:
    if isinstance(v, Decimal):
        exp = v.normalize().as_tuple().exponent
        return max(0, -exp) if isinstance(exp, int) else 0
    return 0


def _to_minor(v: Any, scale: int, what: str) -> int:
    if type(v) is int:
        return v * scale
    if isinstance(v, bool) or not isinstance(v, int | Decimal):
        raise PhhError(f"{what}: not a number: {v!r}")
    if isinstance(v, int):
        return v * scale
    x = v * scale
    if x != x.to_integral_value():
        raise PhhError(f"{what}: {v} has more decimal places than the hand's precision")
    return int(x)


def from_minor(v: int, scale: int, places: int) -> int | Decimal:
    """``v`` minor units in the file's units (``int`` when ``scale`` is 1)."""
    if scale == 1:
        return v
    return (Decimal(v) / scale).quantize(Decimal(1).scaleb(-places))


_INT_TYPE = frozenset((int,))


def _only_ints(values: list[Any]) -> bool:
    return set(map(type, values)) <= _INT_TYPE


def _amount_list(fields: dict[str, Any], key: str, n: int, scale: int) -> list[int]:
    raw = fields.get(key)
    if raw is None:
        return [0] * n
    if scale == 1 and type(raw) is list and len(raw) == n and _only_ints(raw):
        return raw
    if isinstance(raw, int | Decimal) and not isinstance(raw, bool):
        return [_to_minor(raw, scale, key)] * n
    if not isinstance(raw, list):
        raise PhhError(f"{key}: expected a list")
    vals = [_to_minor(v, scale, key) for v in raw]
    if len(vals) != n:
        raise PhhError(f"{key}: {len(vals)} values for {n} players")
    return vals


def _split_action(action: str) -> list[str]:
    if "#" in action:
        action = action.split("#", 1)[0]
    return action.split()


# HandConfig is immutable and the same stakes and stacks recur from hand to hand: a valid
# config is built (and validated) once per distinct key. Bounded; cleared when full.
_ConfigKey = tuple[tuple[int, ...], int, int, int, int, tuple[int, ...]]
_CONFIGS: dict[_ConfigKey, HandConfig] = {}
_CONFIGS_SIZE = 4096


def hand_config(fields: dict[str, Any]) -> tuple[HandConfig, int, int, list[str]]:
    """(config in minor units, scale, decimal places, actions) of a parsed NT hand."""
    variant = fields.get("variant")
    if variant != "NT":
        raise PhhError(f"variant {variant!r} is not supported (only 'NT', no-limit hold'em)")
    actions = fields.get("actions")
    if not isinstance(actions, list) or not all(map(isinstance, actions, repeat(str))):
        raise PhhError("actions: expected a list of strings")
    stacks_raw = fields.get("starting_stacks")
    if not isinstance(stacks_raw, list) or not stacks_raw:
        raise PhhError("starting_stacks: expected a list")
    n = len(stacks_raw)
    places = 0
    for key in _AMOUNT_FIELDS:
        v = fields.get(key)
        if isinstance(v, list) and _only_ints(v):
            continue
        for x in v if isinstance(v, list) else [v]:
            if type(x) is not int:
                places = max(places, _places(x))
    for a in actions if "." in "".join(actions) else ():
        if "." not in a:
            continue
        parts = _split_action(a)
        if len(parts) >= 3 and parts[1] == "cbr" and not parts[2].isdigit():
            try:
                places = max(places, _places(Decimal(parts[2])))
            except InvalidOperation:
                raise PhhError(f"action {a!r}: bad amount") from None
    scale = 10**places
    stacks = _amount_list(fields, "starting_stacks", n, scale)
    antes = _amount_list(fields, "antes", n, scale)
    blinds = _amount_list(fields, "blinds_or_straddles", n, scale)
    if any(blinds[2:]):
        raise PhhError("blinds_or_straddles: straddles are not supported")
    min_bet_raw = fields.get("min_bet")
    min_bet = _to_minor(min_bet_raw, scale, "min_bet") if min_bet_raw is not None else 0
    uniform = len(set(antes)) == 1
    config_key: _ConfigKey = (
        tuple(stacks),
        blinds[0] if n > 0 else 0,
        blinds[1] if n > 1 else 0,
        antes[0] if uniform else 0,
        min_bet,
        () if uniform else tuple(antes),
    )
    config = _CONFIGS.get(config_key)
    if config is None:
        stacks_t, small_blind, big_blind, ante, _, antes_t = config_key
        try:
            config = HandConfig(
                stacks=stacks_t,
                button=n - 1,
                small_blind=small_blind,
                big_blind=big_blind,
                ante=ante,
                min_bet=min_bet,
                antes=antes_t,
            )
        except ValueError as exc:
            raise PhhError(str(exc)) from exc
        if len(_CONFIGS) >= _CONFIGS_SIZE:
            _CONFIGS.clear()
        _CONFIGS[config_key] = config
    return config, scale, places, actions


_PLAYER_TOKENS = {f"p{k}": k - 1 for k in range(1, 11)}


def _player(tok: str, n: int, action: str) -> int:
    p = _PLAYER_TOKENS.get(tok)
    if p is not None and p < n:
        return p
    if len(tok) < 2 or tok[0] != "p" or not tok[1:].isdigit():
        raise PhhError(f"action {action!r}: bad player {tok!r}")
    k = int(tok[1:])
    if not 1 <= k <= n:
        raise PhhError(f"action {action!r}: no player {tok}")
    return k - 1


def _command(s: HandState, action: str, scale: int) -> Command:
    """The engine command for a PHH action (``cc``: check or call, ``cbr``: bet or raise,
    resolved against the state)."""
    hit = _parse_action(s.n, action, scale)
    if type(hit) is not tuple:
        return hit  # type: ignore[return-value]
    return _resolve(s, hit)


def _resolve(s: HandState, hit: tuple[str, int, int]) -> Command:
    verb, p, to = hit
    if verb == "cc":
        bets = s.bets
        return _CHECK[p] if bets[p] >= max(bets) else _CALL[p]
    return Bet(p, to) if max(s.bets) == 0 else RaiseTo(p, to)


# Commands are immutable, so the parsed form of an action text can be shared between hands
# (the same short texts recur in every record); failures are not cached and raise each time.
_CHECK = tuple(Check(p) for p in range(10))
_CALL = tuple(Call(p) for p in range(10))


@lru_cache(maxsize=1 << 16)
def _parse_action(n: int, action: str, scale: int) -> Command | tuple[str, int, int]:
    parts = (action.split("#", 1)[0] if "#" in action else action).split()
    if len(parts) >= 2 and parts[0] == "d":
        if parts[1] == "dh" and len(parts) == 4:
            return DealHole(_player(parts[2], n, action), parse_cards(parts[3]))
        if parts[1] == "db" and len(parts) == 3:
            return DealBoard(parse_cards(parts[2]))
        raise PhhError(f"action {action!r}: unsupported dealer action")
    if not parts:
        raise PhhError("empty action")
    p = _player(parts[0], n, action)
    verb = parts[1] if len(parts) > 1 else ""
    if verb == "f" and len(parts) == 2:
        return Fold(p)
    if verb == "cc" and len(parts) == 2:
        return ("cc", p, 0)
    if verb == "cbr" and len(parts) == 3:
        amount = parts[2]
        if scale == 1 and amount.isdigit():
            to = int(amount)
        else:
            try:
                to = _to_minor(Decimal(amount), scale, f"action {action!r}")
            except InvalidOperation:
                raise PhhError(f"action {action!r}: bad amount") from None
        return ("cbr", p, to)
    if verb == "sm" and len(parts) == 2:
        return Muck(p)
    if verb == "sm" and len(parts) == 3:
        cards = parse_cards(parts[2])
        return Show(p, None if UNKNOWN_CARD in cards else cards)
    raise PhhError(f"action {action!r}: unsupported action")


# Per (players, scale): action text -> _parse_action's result (one dict lookup per action).
_PARSED: dict[tuple[int, int], dict[str, Command | tuple[str, int, int]]] = {}
_PARSED_SIZE = 1 << 14


def _check_exposed(state: HandState, cmd: Show) -> None:
    """A PHH ``sm`` for a hand the engine already exposed (all-in): must agree."""
    known = state.hole[cmd.player]
    if cmd.cards is not None and UNKNOWN_CARD not in known and set(cmd.cards) != set(known):
        raise PhhError("shown cards differ from the cards dealt")


def replay_fields(
    fields: dict[str, Any], index: int = 1, *, keep_events: bool = True
) -> ReplayResult:
    """Replay one parsed hand through the engine (never raises for a bad hand).

    ``keep_events``: also return the hand's events (``ReplayResult.events``); a bulk replay
    that only needs the outcome passes ``False`` and keeps no per-hand event log.
    """
    try:
        config, scale, places, actions = hand_config(fields)
        # the replay owns its state: advance it in place (no copy per action)
        state = initial_state(config)
        all_events: list[Event] = [HandStarted(config)]
        all_events += step_in_place(state, PostForcedBets())
        n = state.n
        parsed = _PARSED.get((n, scale))
        if parsed is None or len(parsed) >= _PARSED_SIZE:
            if len(_PARSED) >= 64:
                _PARSED.clear()
            parsed = _PARSED[(n, scale)] = {}
        for k, action in enumerate(actions, 1):
            try:
                hit = parsed.get(action)  # (what _command does, inlined)
                if hit is None:
                    hit = parsed[action] = _parse_action(n, action, scale)
                cmd = _resolve(state, hit) if isinstance(hit, tuple) else hit
                if type(cmd) is Show and state.shown[cmd.player]:
                    _check_exposed(state, cmd)
                    continue
                if type(cmd) is Fold and max(state.bets) <= state.bets[cmd.player]:
                    # A fold with nothing to call: our tables allow it (seed 000, fold is
                    # always offered) and pokerkit replays it (with a warning); the engine's
                    # own rule refuses it, so it goes through the table-rule entry point.
                    state, events = step_fold_anyway(state, cmd.player)
                else:
                    events = step_in_place(state, cmd)
            except (CommandRejected, PhhError, ValueError) as exc:
                reason = exc.reason if isinstance(exc, CommandRejected) else str(exc)
                raise PhhError(f"action {k} {action!r}: {reason}") from exc
            if keep_events:
                all_events.extend(events)
        while state.phase is Phase.SHOWDOWN and state.showdown_queue:
            p = state.showdown_queue[0]
            if UNKNOWN_CARD in state.hole[p]:
                raise PhhError(
                    f"showdown: the outcome depends on the unknown hole cards of p{p + 1}"
                )
            try:
                events = step_in_place(state, Muck(p) if _can_muck(state, p) else Show(p))
            except CommandRejected as exc:
                raise PhhError(f"showdown: {exc.reason}") from exc
            if keep_events:
                all_events.extend(events)
        if state.phase is not Phase.COMPLETE:
            who = state.actor
            detail = f"player p{who + 1} to act" if who is not None else state.phase.name
            raise PhhError(f"the actions end before the hand is over ({detail})")
        stacks = tuple(from_minor(v, scale, places) for v in state.stacks)
        kept = tuple(all_events) if keep_events else ()
        return ReplayResult(index, stacks, None, state.stacks, scale, kept)
    except PhhError as exc:
        return ReplayResult(index, None, str(exc))
    except CommandRejected as exc:  # raised by automatic steps (e.g. unknown cards)
        return ReplayResult(index, None, exc.reason)


def replay_text(text: str, *, multi: bool, keep_events: bool = False) -> Iterator[ReplayResult]:
    """Replay every hand of a ``.phhs`` (``multi``) or ``.phh`` text.

    Only the outcomes are kept by default; ``keep_events=True`` also returns each hand's
    events (see :func:`replay_fields`).
    """
    for item in iter_hands(text, multi=multi):
        if isinstance(item, PhhHand):
            yield replay_fields(item.fields, item.index, keep_events=keep_events)
        else:
            yield ReplayResult(item[0], None, str(item[1]))

"""PHH (Poker Hand History, phh.readthedocs.io) import/export for no-limit hold'em.

Reading: ``.phh`` (one hand) and ``.phhs`` (``[N]`` sections, each a hand). Each hand is a
TOML document; a fast line parser handles the usual one-line ``key = value`` form and falls
back to :mod:`tomllib` (with decimals parsed as :class:`~decimal.Decimal`) for anything else.

Amounts: decimal amounts are replayed exactly in integer minor units — every amount of a hand
is scaled by ``10**k`` where ``k`` is the largest number of decimal places used in that hand;
results are scaled back (never floats).

Players: ``p1`` is the first player left of the button and ``pN`` is the button, so player
``pK`` is our index ``K-1`` with ``button = N-1``. ``blinds_or_straddles`` lists the small and
big blind for ``p1``, ``p2``; heads-up they are posted in reverse (the button ``p2`` posts the
small blind, ``p1`` the big blind) as the standard says. Straddles are not supported.

Actions: ``d dh pK CARDS`` (hole cards, ``??`` unknown), ``d db CARDS`` (board), ``pK f``
(fold), ``pK cc`` (check or call), ``pK cbr X`` (bet or raise TO ``X``), ``pK sm [CARDS]``
(show, or muck when no cards). A hand whose actions stop at the showdown is finished by the
house rule (show what can win, muck what cannot); hands whose outcome depends on ``????``
cards fail with an error.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Any

from electric_domain.cards import UNKNOWN_CARD, cards_str, parse_cards
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
from electric_domain.holdem.engine import _can_muck, initial_state, step_in_place
from electric_domain.holdem.events import (
    BetPlaced,
    BoardDealt,
    Called,
    Checked,
    Event,
    Folded,
    HandMucked,
    HandShown,
    HandStarted,
    HoleCardsDealt,
    Raised,
)
from electric_domain.holdem.state import CommandRejected, HandConfig, HandState, Phase


class PhhError(ValueError):
    """An unparseable or illegal hand; the message names the offending field or action."""


@dataclass(frozen=True, slots=True)
class PhhHand:
    """One parsed hand: the raw fields (ints, Decimals, strings, lists) and its position."""

    index: int
    fields: dict[str, Any]


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


# --------------------------------------------------------------------------- parsing

_SECTION = re.compile(r"^\[(\d+)\][ \t]*(?:#.*)?$", re.MULTILINE)

# The fast parser accepts only a strict, exact subset of TOML: one ``key = value`` per line
# with an ASCII bare key, values that are literal strings ('...'), true/false, decimal
# integers or plain decimals (no exponent, no underscores, no leading zeros) and one-line
# arrays of those. Anything else (including control characters or CR anywhere, which TOML
# restricts) goes to tomllib, so both parsers give the same result on what the fast one takes.
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # control characters other than \t and \n
_INT = r"[+-]?(?:0|[1-9][0-9]*)"
_NUM = re.compile(_INT + r"(\.[0-9]+)?")
_LEADING_ZERO = re.compile(r"(?<![0-9])0[0-9]")
_QUOTED_LIST = re.compile(r"""[ \t]*(?:'[^'\n]*'[ \t]*,[ \t]*)*(?:'[^'\n]*'[ \t]*,?[ \t]*)?""")
_QUOTED = re.compile(r"'([^'\n]*)'")
_KEY_VALUE = re.compile(r"^[ \t]*([A-Za-z0-9_]+)[ \t]*=[ \t]*([^\n]*)$", re.MULTILINE)
_BLANK = re.compile(r"^[ \t]*(?:#[^\n]*)?$", re.MULTILINE)


class _Slow(Exception):
    pass


def _scalar(tok: str) -> Any:
    tok = tok.strip(" \t")
    if not tok:
        raise _Slow
    c = tok[0]
    if c == "'":
        if len(tok) < 2 or tok[-1] != c or c in tok[1:-1]:
            raise _Slow
        return tok[1:-1]
    if tok == "true":
        return True
    if tok == "false":
        return False
    m = _NUM.fullmatch(tok)
    if m is None:
        raise _Slow
    return int(tok) if m.group(1) is None else Decimal(tok)


def _parse_list(body: str) -> list[Any]:
    if "'" in body:
        s = body.strip(" \t")
        if s[-1:] == ",":
            s = s[:-1].rstrip(" \t")
        # the usual form: 'a', 'b', 'c' (one C split instead of a regex scan)
        items = s[1:-1].split("', '")
        if s[:1] == "'" and s[-1:] == "'" and len(s) >= 2 and s.count("'") == 2 * len(items):
            return items
        if not _QUOTED_LIST.fullmatch(body):
            raise _Slow
        return _QUOTED.findall(body)
    parts = body.split(",")
    if not parts[-1].strip(" \t"):
        parts.pop()
    # int() also takes "_", non-ASCII digits and leading zeros, which TOML does not
    if body.isascii() and "_" not in body and not _LEADING_ZERO.search(body):
        try:
            return list(map(int, parts))
        except ValueError:
            pass  # decimals, or not numbers at all
    if '"' in body or "[" in body or "{" in body:
        raise _Slow
    return [_scalar(t) for t in parts]


def _parse_value(value: str) -> Any:
    value = value.rstrip(" \t")
    if value[:1] == "[":
        if value[-1:] != "]":
            raise _Slow
        return _parse_list(value[1:-1])
    if "#" in value and value[:1] != "'":
        value = value.split("#", 1)[0]
    return _scalar(value)


# The same short values (stakes, stacks, seat lists, names) recur in every record of a file:
# their parsed form is shared, as a tuple copied into a fresh list for each hand. Values
# that fall back to tomllib raise before they are cached. Bounded; cleared when full.
_VALUE_CACHE: dict[str, Any] = {}
_VALUE_CACHE_SIZE = 4096
_CACHED_VALUE_LEN = 200


def _fast_parse(text: str) -> dict[str, Any]:
    if _CTRL.search(text):
        raise _Slow
    pairs = _KEY_VALUE.findall(text)
    # every line must be a ``key = value``, blank or a comment (the two patterns are disjoint)
    if len(pairs) + len(_BLANK.findall(text)) != text.count("\n") + 1:
        raise _Slow
    data: dict[str, Any] = {}
    cache = _VALUE_CACHE
    for key, value in pairs:
        hit = cache.get(value)
        if hit is not None:
            data[key] = list(hit) if type(hit) is tuple else hit
            continue
        parsed = _parse_value(value)
        if len(value) <= _CACHED_VALUE_LEN:
            if len(cache) >= _VALUE_CACHE_SIZE:
                cache.clear()
            cache[value] = tuple(parsed) if type(parsed) is list else parsed
        data[key] = parsed
    if len(data) != len(pairs):
        raise _Slow  # a repeated key: tomllib reports it
    return data


def parse_hand_text(text: str) -> dict[str, Any]:
    """Fields of one PHH hand (TOML). Decimals are :class:`Decimal`, never floats."""
    try:
        return _fast_parse(text)
    except _Slow:
        pass
    try:
        return tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise PhhError(f"unparseable PHH: {exc}") from exc


def iter_hands(text: str, *, multi: bool) -> Iterator[PhhHand | tuple[int, PhhError]]:
    """Hands of a ``.phhs`` (``multi``) or ``.phh`` text; unparseable ones as errors."""
    if not multi:
        try:
            yield PhhHand(1, parse_hand_text(text))
        except PhhError as exc:
            yield (1, exc)
        return
    matches = list(_SECTION.finditer(text))
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        index = int(m.group(1))
        try:
            yield PhhHand(index, parse_hand_text(text[m.end() : end]))
        except PhhError as exc:
            yield (index, exc)


# --------------------------------------------------------------------------- replay

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


def _from_minor(v: int, scale: int, places: int) -> int | Decimal:
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
        stacks = tuple(_from_minor(v, scale, places) for v in state.stacks)
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


def replay_file(path: str | Path, *, keep_events: bool = False) -> Iterator[ReplayResult]:
    """Replay a ``.phh`` or ``.phhs`` file (by its suffix); ``keep_events`` as for
    :func:`replay_text`."""
    p = Path(path)
    multi = p.suffix.lower() == ".phhs"
    yield from replay_text(p.read_text(encoding="utf-8"), multi=multi, keep_events=keep_events)


# --------------------------------------------------------------------------- export


def _fmt_amount(v: int, scale: int, places: int) -> str:
    return str(_from_minor(v, scale, places))


def to_phh(events: Sequence[Event], *, scale: int = 1, players: Sequence[str] = ()) -> str:
    """PHH text of a hand from its events (``scale``: minor units per file unit)."""
    if not events or not isinstance(events[0], HandStarted):
        raise ValueError("events must start with HandStarted")
    cfg = events[0].config
    n = cfg.players
    places = len(str(scale)) - 1
    if 10**places != scale:
        raise ValueError("scale must be a power of ten")

    def pk(i: int) -> str:
        return f"p{(i - cfg.button - 1) % n + 1}"

    def order(values: Sequence[int]) -> list[int]:
        return [values[(cfg.button + 1 + k) % n] for k in range(n)]

    def amounts(values: Sequence[int]) -> str:
        return "[" + ", ".join(_fmt_amount(v, scale, places) for v in values) + "]"

    antes = [cfg.ante_of(i) for i in range(n)]
    blinds = [0] * n
    blinds[0], blinds[1] = cfg.small_blind, cfg.big_blind
    actions: list[str] = []
    final: tuple[int, ...] | None = None
    for e in events[1:]:
        t = type(e)
        if t is HoleCardsDealt:
            assert isinstance(e, HoleCardsDealt)
            actions.append(f"d dh {pk(e.player)} {cards_str(e.cards)}")
        elif t is BoardDealt:
            assert isinstance(e, BoardDealt)
            actions.append(f"d db {cards_str(e.cards)}")
        elif t is Folded:
            assert isinstance(e, Folded)
            actions.append(f"{pk(e.player)} f")
        elif t is Checked or t is Called:
            assert isinstance(e, Checked | Called)
            actions.append(f"{pk(e.player)} cc")
        elif t is BetPlaced or t is Raised:
            assert isinstance(e, BetPlaced | Raised)
            actions.append(f"{pk(e.player)} cbr {_fmt_amount(e.to, scale, places)}")
        elif t is HandShown:
            assert isinstance(e, HandShown)
            actions.append(f"{pk(e.player)} sm {cards_str(e.cards)}")
        elif t is HandMucked:
            assert isinstance(e, HandMucked)
            actions.append(f"{pk(e.player)} sm")
        final = getattr(e, "stacks", final)
    lines = [
        "variant = 'NT'",
        "ante_trimming_status = true",
        f"antes = {amounts(order(antes))}",
        f"blinds_or_straddles = {amounts(blinds)}",
        f"min_bet = {_fmt_amount(cfg.effective_min_bet, scale, places)}",
        f"starting_stacks = {amounts(order(cfg.stacks))}",
        "actions = [" + ", ".join(f"'{a}'" for a in actions) + "]",
    ]
    if players:
        lines.append("players = [" + ", ".join(f"'{p}'" for p in order_names(players, cfg)) + "]")
    if final is not None:
        lines.append(f"finishing_stacks = {amounts(order(final))}")
    return "\n".join(lines) + "\n"


def order_names(names: Sequence[str], cfg: HandConfig) -> list[str]:
    """Our per-index names in PHH order (p1 = left of the button)."""
    n = cfg.players
    return [names[(cfg.button + 1 + k) % n] for k in range(n)]

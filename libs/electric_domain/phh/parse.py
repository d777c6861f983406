"""PHH text → fields: ``.phh`` (one hand) and ``.phhs`` (``[N]`` sections, each a hand).

Each hand is a TOML document; a fast line parser handles the usual one-line ``key = value``
form and falls back to :mod:`tomllib` (with decimals parsed as :class:`~decimal.Decimal`) for
anything else.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


class PhhError(ValueError):
    """An unparseable or illegal hand; the message names the offending field or action."""


@dataclass(frozen=True, slots=True)
class PhhHand:
    """One parsed hand: the raw fields (ints, Decimals, strings, lists) and its position."""

    index: int
    fields: dict[str, Any]


# --------------------------------------------------------------------------- parsing

#: A section header of a ``.phhs`` text (``[N]``); also where the audit tools cut a file.
SECTION = re.compile(r"^\[(\d+)\][ \t]*(?:#.*)?$", re.MULTILINE)

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
    matches = list(SECTION.finditer(text))
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        index = int(m.group(1))
        try:
            yield PhhHand(index, parse_hand_text(text[m.end() : end]))
        except PhhError as exc:
            yield (index, exc)

"""Validate exported hand histories with an independent reader: pokerkit.

pokerkit (University of Toronto Computer Poker Student Research Group; a peer-reviewed,
actively released library, see docs/audit.md for the choice) reads both formats with its
own code and replays each hand through its own game engine:

* **PHH** — :meth:`pokerkit.notation.HandHistory.loads` per ``[k]`` section; the replayed
  final stacks must equal the hand's recorded ``finishing_stacks``.
* **PokerStars-style text** — :class:`pokerkit.notation.PokerStarsParser` (``error_status``
  on: a hand it cannot read is an error, never a warning). Its PokerStars parser has no
  pattern for ante lines (``ANTE_POSTING`` is pokerkit's "unmatchable" pattern), so a hand
  with antes would replay without them; :class:`AntePokerStarsParser` sets that one pattern
  to the PokerStars ante line (``<name>: posts the ante <n>``), the way pokerkit's other
  site parsers do. Every hand read must then match the PHH export: hand number, table,
  players, seats, starting stacks, antes, blinds, the betting and dealing actions (show/muck
  actions are left out: pokerkit re-derives those), and pokerkit's replayed final stacks
  and collected winnings must equal the recorded ones.

pokerkit is a development and audit dependency (requirements-dev.txt, and the ``audit``
extra); :func:`load_pokerkit` raises :class:`ValidatorMissing` when it is not installed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from electric_domain.holdem import events as he
from electric_domain.phh import parse_hand_text

from electric_audit.export import phh_text
from electric_audit.hands import Hand
from electric_audit.pokerstars import hand_number

#: Where each hand of a PokerStars-style document starts.
HAND_START = re.compile(r"(?m)^(?=PokerStars Hand #)")
ANTE_LINE = re.compile(r"(?P<player>.+): posts the ante \D?(?P<ante>[0-9.]+)")


class ValidatorMissing(RuntimeError):
    """pokerkit is not installed."""


def load_pokerkit() -> Any:
    try:
        from pokerkit import notation
    except ImportError as exc:  # pragma: no cover - pokerkit ships with the dev requirements
        raise ValidatorMissing("pokerkit is not installed (pip install pokerkit)") from exc
    return notation


def ante_parser() -> Any:
    """pokerkit's PokerStars parser with the ante line pattern set."""
    notation = load_pokerkit()

    parser_class = type(
        "AntePokerStarsParser", (notation.PokerStarsParser,), {"ANTE_POSTING": ANTE_LINE}
    )
    return parser_class()


@dataclass
class Validation:
    phh_checked: int = 0
    text_checked: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _no_shows(actions: Sequence[str]) -> list[str]:
    return [a for a in actions if " sm" not in a]


def check_phh(hand: Hand, hh: Any, result: Validation) -> None:
    """One PHH hand as pokerkit read it: its replay must reach the recorded stacks."""
    result.phh_checked += 1
    where = f"hand {hand.hand_id} (PHH)"
    # pokerkit's PokerStars parser leaves ``ante_trimming_status`` at its default, False: every
    # ante is dead money in the main pot, even a short one. Our rules (and PokerStars') count
    # a short ante like any other chip — a player all-in from the ante wins at most what they
    # matched — as the PHH export says (``ante_trimming_status = true``).
    hh.ante_trimming_status = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = list(hh)[-1]
    except (ValueError, KeyError, TypeError) as exc:
        result.failures.append(f"{where}: pokerkit cannot replay it: {exc}")
        return
    recorded = parse_hand_text(phh_text(hand))["finishing_stacks"]
    if list(state.stacks) != recorded or list(hh.finishing_stacks) != recorded:
        result.failures.append(
            f"{where}: pokerkit replays to {list(state.stacks)}, recorded {recorded}"
        )


def check_text(hand: Hand, hh: Any, result: Validation) -> None:
    """One PokerStars-style hand as pokerkit read it, against the PHH export."""
    result.text_checked += 1
    where = f"hand {hand.hand_id} (PokerStars text)"
    fields = parse_hand_text(phh_text(hand))
    expected: dict[str, Any] = {
        "hand": hand_number(hand),
        "table": hand.table_name,
        "players": fields["players"],
        "seats": fields["seats"],
        "starting_stacks": fields["starting_stacks"],
        # the text says what was posted: a short stack posts less than the ante or the blind
        # due (a stack the ante puts all-in posts nothing else and never acts)
        "antes": _as_pokerkit_orders(_posted_antes(fields)),
        "blinds_or_straddles": _posted_blinds(fields),
        "actions": _no_shows(fields["actions"]),
        "finishing_stacks": fields["finishing_stacks"],
        "winnings": _winnings(hand, fields["players"]),
    }
    # pokerkit's PokerStars parser leaves ``ante_trimming_status`` at its default, False: every
    # ante is dead money in the main pot, even a short one. Our rules (and PokerStars') count
    # a short ante like any other chip — a player all-in from the ante wins at most what they
    # matched — as the PHH export says (``ante_trimming_status = true``).
    hh.ante_trimming_status = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = list(hh)[-1]
    except (ValueError, KeyError, TypeError) as exc:
        result.failures.append(f"{where}: pokerkit cannot replay it: {exc}")
        return
    got: dict[str, Any] = {
        "hand": hh.hand,
        "table": hh.table,
        "players": list(hh.players or []),
        "seats": list(hh.seats or []),
        "starting_stacks": list(hh.starting_stacks),
        "antes": _antes(hh.antes, len(fields["players"])),
        "blinds_or_straddles": list(hh.blinds_or_straddles),
        "actions": _no_shows(hh.actions),
        "finishing_stacks": list(state.stacks),
        "winnings": list(hh.winnings or []),
    }
    for key, value in expected.items():
        if got[key] != value:
            result.failures.append(f"{where}: {key} read as {got[key]!r}, expected {value!r}")
            return


def _posted_blinds(fields: dict[str, Any]) -> list[int]:
    """The blinds as posted (at most the stack left after the ante), in PHH order: heads-up
    the list is reversed (``p2``, the button, posts the first one), as PHH and pokerkit say."""
    blinds, stacks, antes = (
        fields["blinds_or_straddles"],
        fields["starting_stacks"],
        _posted_antes(fields),
    )
    n = len(blinds)
    poster = [1 - i for i in range(n)] if n == 2 else list(range(n))
    return [min(b, stacks[poster[i]] - antes[poster[i]]) for i, b in enumerate(blinds)]


def _as_pokerkit_orders(values: list[int]) -> list[int]:
    """Per-player values in pokerkit's order: heads-up its parser reverses the antes as it
    does the blinds (``p2``, the button, first)."""
    return values[::-1] if len(values) == 2 else values


def _posted_antes(fields: dict[str, Any]) -> list[int]:
    """The antes as posted: at most the player's stack."""
    antes = _antes(fields["antes"], len(fields["starting_stacks"]))
    return [min(a, s) for a, s in zip(antes, fields["starting_stacks"], strict=True)]


def _antes(antes: Any, n: int) -> list[int]:
    values = list(antes) if isinstance(antes, list | tuple) else [antes] * n
    return [int(v) for v in values]


def _winnings(hand: Hand, names: Sequence[str]) -> list[int]:
    won: dict[str, int] = {}
    engine_names = hand.names()
    for e in hand.events:
        if isinstance(e, he.PotAwarded):
            for winner, share in zip(e.winners, e.shares, strict=True):
                won[engine_names[winner]] = won.get(engine_names[winner], 0) + share
    return [won.get(name, 0) for name in names]


def validate_documents(
    hands: Sequence[Hand], phh_document: str, text_document: str, parser: Any | None = None
) -> Validation:
    """The two export documents of ``hands`` (in order), each read back by pokerkit.

    ``parser`` defaults to :func:`ante_parser`; pass pokerkit's own ``PokerStarsParser()``
    to check hands without antes with the unmodified parser."""
    notation = load_pokerkit()
    result = Validation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            read_phh = list(notation.HandHistory.loads_all(phh_document))
        except (ValueError, KeyError, TypeError) as exc:
            result.failures.append(f"PHH document: pokerkit cannot read it: {exc}")
            read_phh = []
    # hand by hand, so a hand pokerkit cannot read fails alone, at that hand
    texts = [t for t in HAND_START.split(text_document) if t.strip()]
    read_text: list[Any] = []
    parse = parser or ante_parser()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for hand, text in zip(hands, texts, strict=False):
            try:
                parsed = list(parse(text, error_status=True))
                if len(parsed) != 1:
                    raise ValueError(f"{len(parsed)} hands in one hand's text")
                read_text += parsed
            except (ValueError, KeyError) as exc:
                cause = exc.__cause__ or exc.__context__ or exc
                result.failures.append(
                    f"hand {hand.hand_id} (PokerStars text): pokerkit cannot read it: {cause}"
                )
                read_text.append(None)
    for what, count in (("PHH", len(read_phh)), ("PokerStars", len(texts))):
        if count and count != len(hands):
            result.failures.append(f"{what} document: pokerkit read {count} of {len(hands)}")
    for hand, hh in zip(hands, read_phh, strict=False):
        check_phh(hand, hh, result)
    for hand, hh in zip(hands, read_text, strict=False):
        if hh is not None:
            check_text(hand, hh, result)
        else:
            result.text_checked += 1
    return result

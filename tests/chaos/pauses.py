"""The longest pauses of a chaos run, told apart by what ended them (docs/chaos.md §6).

A pause is the time between two consecutive events of one stream of the table topic: a
tournament table (``table-…``) or a casino round (``casino-uth-r-…`` a live UTH round,
``casino-thb-r-…`` a THB round). What closes it says whose wait it was:

* **house**: the table or round waited for the platform. Tournament tables and UTH rounds
  run on the house's clock (a player who does not act is timed out, a UTH window closes by
  itself), so a gap there is one the players waited through, whatever event closed it. A
  THB round has no clock, but the harness's THB bots decide the moment they are answered
  (no think time) and every command appends all its events at one time, so a gap before a
  decision is the house answering late: the Deal's commit to the Decide's, retries and all.
  (With people playing, that gap would hold their thinking too.)
* **ack**: closed by a result acknowledged (``AckResult``), which comes after the round
  ended, whenever the player sends it: a UTH bot whose PlaceBets answer was lost learns of
  the round only at the end of its play (``UthBot._ack_leftovers``). Nobody waited.
* **void**: closed by a round voided by the house (a THB round whose command failed for
  good, voided by the intent sweep after its own wait; an unreplayable UTH round): the
  player's round ended without being played out.

A player who waited for an answer to a command is counted by the bots themselves too (the
longest call, retries included: ``electric_bots.waits.LongestWait``).

The report gives, per kind of stream and side, the longest gap with the two event types
that bound it and when it began, so that a figure can be explained afterwards even when
the run's topics are gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

#: The event type that closes a gap, for the sides other than the house's.
CLOSED_BY = {"CasinoResultAcknowledged": "ack", "CasinoRoundVoided": "void"}


def stream_kind(stream_id: str) -> str | None:
    """``tournament_table``, ``uth_round``, ``thb_round``, or None (not a player's stream)."""
    if stream_id.startswith("table-"):
        return "tournament_table"
    if stream_id.startswith("casino-uth-r-"):
        return "uth_round"
    if stream_id.startswith("casino-thb-r-"):
        return "thb_round"
    return None


def short_type(event_type: str) -> str:
    """``electric.table.v1.ActionTaken`` → ``ActionTaken``."""
    return event_type.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Pause:
    seconds: float
    stream: str
    after: str  # the event that opened the gap
    before: str  # the event that closed it
    began: str  # UTC, ISO 8601, to the second

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def longest_pauses(events: Iterable[tuple[str, str, float]]) -> dict[str, dict[str, Any]]:
    """From ``(stream_id, event_type, seconds since the epoch)`` in stream order, the longest
    gap per kind of stream and side: ``{"uth_round": {"house": Pause, "ack": Pause}}``
    (as dicts; a side with no gap is absent)."""
    last: dict[str, tuple[str, float]] = {}
    best: dict[tuple[str, str], Pause] = {}
    for stream_id, event_type, at in events:
        kind = stream_kind(stream_id)
        if kind is None:
            continue
        name = short_type(event_type)
        before = last.get(stream_id)
        last[stream_id] = (name, at)
        if before is None:
            continue
        gap = at - before[1]
        side = CLOSED_BY.get(name, "house")
        held = best.get((kind, side))
        if held is None or gap > held.seconds:
            began = datetime.fromtimestamp(before[1], UTC).isoformat(timespec="seconds")
            best[(kind, side)] = Pause(round(gap, 2), stream_id, before[0], name, began)
    out: dict[str, dict[str, Any]] = {}
    for (kind, side), pause in sorted(best.items()):
        out.setdefault(kind, {})[side] = pause.as_dict()
    return out


#: How the summary names each side.
SIDES = {
    "house": "a player waited for the house",
    "ack": "before a result was acknowledged",
    "void": "before a round was voided",
}


def describe(pauses: dict[str, dict[str, Any]]) -> list[str]:
    """One line per kind and side, for the run's summary."""
    lines = []
    for kind, sides in pauses.items():
        for side, words in SIDES.items():
            p = sides.get(side)
            if p:
                lines.append(
                    f"longest pause {words} ({kind}): {p['seconds']}s on {p['stream']}, "
                    f"{p['after']} → {p['before']}, from {p['began']}"
                )
    return lines

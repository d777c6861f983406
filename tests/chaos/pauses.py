"""The longest pauses of a chaos run, told apart by who was waiting (docs/chaos.md §7).

A pause is the time between two consecutive events of one stream of the table topic: a
tournament table (``table-…``) or a casino round (``casino-…``: ``casino-uth-r-…`` a live
UTH round, any other a THB round).

* Tournament tables and live UTH rounds run on the house's clock: a player who does not
  act is timed out (``TimeoutApplied``), a UTH window closes by itself. Every gap there is
  one the players at the table waited through, whatever event ended it: a **house** pause.
  The one exception is a UTH result acknowledged (``AckResult``), which comes after the
  round ended, whenever the player sends it: the **player**'s time.
* A THB round waits for its one player as long as the player likes. A gap ending in the
  player's move (a decision, a result acknowledged) is the player's time: a bot that was
  drained, retrying, or that went back to an unfinished round much later makes it long
  without anyone having waited for the house; a gap ending in any other event (cards,
  board, settlement, a void) is the house's.

A player who waited for an answer to a command is counted by the bots themselves (the
longest call, retries included: ``electric_bots.waits.LongestWait``).

The report gives, per kind of stream and side, the longest pause with the two event types
that bound it and when it began, so that a figure can be explained afterwards even when
the run's topics are gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

#: A THB round's events appended by its player's command: a gap they end was the player's.
THB_PLAYER_MOVES = frozenset({"CasinoDecisionMade", "CasinoBetPlaced", "CasinoResultAcknowledged"})
#: A UTH round's: only the acknowledgement of a result, which comes after the round ended.
UTH_PLAYER_MOVES = frozenset({"CasinoResultAcknowledged"})


def stream_kind(stream_id: str) -> str | None:
    """``tournament_table``, ``uth_round``, ``thb_round``, or None (not a player's stream)."""
    if stream_id.startswith("table-"):
        return "tournament_table"
    if stream_id.startswith("casino-uth-r-"):
        return "uth_round"
    if stream_id.startswith("casino-"):
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
    gap per kind of stream and side: ``{"uth_round": {"house": Pause, "player": Pause}}``
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
        players = THB_PLAYER_MOVES if kind == "thb_round" else UTH_PLAYER_MOVES
        side = "player" if name in players else "house"
        held = best.get((kind, side))
        if held is None or gap > held.seconds:
            began = datetime.fromtimestamp(before[1], UTC).isoformat(timespec="seconds")
            best[(kind, side)] = Pause(round(gap, 2), stream_id, before[0], name, began)
    out: dict[str, dict[str, Any]] = {}
    for (kind, side), pause in sorted(best.items()):
        out.setdefault(kind, {})[side] = pause.as_dict()
    return out


def describe(pauses: dict[str, dict[str, Any]]) -> list[str]:
    """One line per kind and side, for the run's summary."""
    lines = []
    for kind, sides in pauses.items():
        for side in ("house", "player"):
            p = sides.get(side)
            if p:
                who = "a player saw" if side == "house" else "waited for a player"
                lines.append(
                    f"longest pause {who} ({kind}): {p['seconds']}s on {p['stream']}, "
                    f"{p['after']} → {p['before']}, from {p['began']}"
                )
    return lines

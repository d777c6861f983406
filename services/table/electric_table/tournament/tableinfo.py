"""Who sits where at a table (as registration assigned it) and the request a batch of
events answers: the table-side facts the event mapping adds to the domain's events."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class SeatInfo:
    """A player's seat as registration assigned it (``seat`` is 1-based)."""

    seat: int
    player_id: str
    entry_id: str
    display_name: str


@dataclass(frozen=True)
class TableInfo:
    """What the mapping needs besides the domain events."""

    table_id: str
    table_name: str
    seats: tuple[SeatInfo, ...]  # index = domain seat (0-based)
    action_timer_ms: int
    source_event_id: str = ""

    def no(self, seat: int) -> int:
        """The 1-based table seat number of domain seat ``seat``."""
        return self.seats[seat].seat

    def player(self, seat: int) -> str:
        """The player id at domain seat ``seat``."""
        return self.seats[seat].player_id

    def seat_of(self, player_id: str) -> int | None:
        """The domain seat of ``player_id`` (None when not seated here)."""
        for i, s in enumerate(self.seats):
            if s.player_id == player_id:
                return i
        return None


class CommandKind(StrEnum):
    """Which player command a batch of events answers."""

    NONE = ""
    ACT = "act"
    PRE_ACTION = "pre_action"
    CLEAR_PRE_ACTION = "clear_pre_action"
    SIT_OUT = "sit_out"
    SIT_IN = "sit_in"


@dataclass
class RequestContext:
    """The command a batch of events answers (request ids go into the matching events)."""

    request_id: str = ""
    seat: int = -1
    kind: CommandKind = CommandKind.NONE

"""Electric Poker tournament rules (pure domain; see docs/tournament-rules.md).

Start here: `Tournament` (aggregate), the commands/events in `events`, the refusals in
`errors`, the player view in `view`, `load_config` /
`default_config`, `draw_multiplier` / `verify_multiplier`.
"""

from electric_domain.holdem.moves import Move
from electric_domain.tournament.aggregate import Tournament
from electric_domain.tournament.config import (
    ConfigError,
    TournamentConfig,
    default_config,
    load_config,
    parse_config,
)
from electric_domain.tournament.errors import (
    InvalidCommand,
    NotAllowedNow,
    Rejected,
    RejectReason,
    StaleCommand,
)
from electric_domain.tournament.events import (
    Act,
    Cause,
    ClearPreAction,
    Command,
    DealHand,
    Event,
    SelectPreAction,
    ShowSettings,
    SitIn,
    SitOut,
    SitOutReason,
    Tick,
    Timeout,
    TimeoutKind,
    UnselectReason,
)
from electric_domain.tournament.fairness import (
    commitment,
    draw_multiplier,
    verify_multiplier,
)
from electric_domain.tournament.preaction import PreAction
from electric_domain.tournament.state import Deadline, Result, TournamentState
from electric_domain.tournament.view import PlayerView, Progress, SeatView

__all__ = [
    "Act",
    "Cause",
    "ClearPreAction",
    "Command",
    "ConfigError",
    "Deadline",
    "DealHand",
    "Event",
    "InvalidCommand",
    "Move",
    "NotAllowedNow",
    "PlayerView",
    "PreAction",
    "Progress",
    "RejectReason",
    "Rejected",
    "Result",
    "SeatView",
    "SelectPreAction",
    "ShowSettings",
    "SitIn",
    "SitOut",
    "SitOutReason",
    "StaleCommand",
    "Tick",
    "Timeout",
    "TimeoutKind",
    "Tournament",
    "TournamentConfig",
    "TournamentState",
    "UnselectReason",
    "commitment",
    "default_config",
    "draw_multiplier",
    "load_config",
    "parse_config",
    "verify_multiplier",
]

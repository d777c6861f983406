"""Electric Poker tournament rules (pure domain; see docs/tournament-rules.md).

Start here: `Tournament` (aggregate), the commands/events in `events`, `load_config` /
`default_config`, `draw_multiplier` / `verify_multiplier`.
"""

from electric_domain.tournament.aggregate import (
    Deadline,
    PlayerView,
    Rejected,
    Result,
    Tournament,
    TournamentState,
)
from electric_domain.tournament.config import (
    ConfigError,
    TournamentConfig,
    default_config,
    load_config,
    parse_config,
)
from electric_domain.tournament.events import (
    Act,
    ClearPreAction,
    Command,
    DealHand,
    Event,
    SelectPreAction,
    SitIn,
    SitOut,
    Tick,
    Timeout,
)
from electric_domain.tournament.fairness import (
    commitment,
    draw_multiplier,
    verify_multiplier,
)
from electric_domain.tournament.preaction import PreAction

__all__ = [
    "Act",
    "ClearPreAction",
    "Command",
    "ConfigError",
    "Deadline",
    "DealHand",
    "Event",
    "PlayerView",
    "PreAction",
    "Rejected",
    "Result",
    "SelectPreAction",
    "SitIn",
    "SitOut",
    "Tick",
    "Timeout",
    "Tournament",
    "TournamentConfig",
    "TournamentState",
    "commitment",
    "default_config",
    "draw_multiplier",
    "load_config",
    "parse_config",
    "verify_multiplier",
]

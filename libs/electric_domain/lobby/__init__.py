"""The lobby's rules: Register requests (N entries, all or nothing), seating and filling,
withdrawal until the fill, and the wallet work those decisions owe.

Pure: no I/O, no clock (times are passed in), no randomness (the multiplier seed is drawn by
the service and judged by ``electric_domain.tournament.fairness``).
"""

from electric_domain.lobby.entries import (
    MAX_ENTRIES,
    AlreadyDone,
    RequestRecord,
    StartAttempt,
    StillInFlight,
    begin,
    buyin_transfer_id,
    check_entry_count,
    entry_ids_for,
    request_key,
)
from electric_domain.lobby.errors import (
    AttemptRollingBack,
    BadEntryCount,
    EntryNotFound,
    InsufficientFunds,
    LobbyError,
    NotYourEntry,
    RequestReused,
    TableAlreadyFilled,
    UnknownTier,
)
from electric_domain.lobby.seating import (
    NewTable,
    OpenTable,
    Placement,
    SeatingPlan,
    check_may_withdraw,
    check_still_registering,
    first_free_seat,
    plan_seating,
)
from electric_domain.lobby.settlement import (
    Account,
    OpKind,
    WalletOp,
    buy_in_settlement,
    withdrawal,
)
from electric_domain.lobby.tiers import Tier, prize_pool_range, table_name, tier_id_for, tier_name

__all__ = [
    "MAX_ENTRIES",
    "Account",
    "AlreadyDone",
    "AttemptRollingBack",
    "BadEntryCount",
    "EntryNotFound",
    "InsufficientFunds",
    "LobbyError",
    "NewTable",
    "NotYourEntry",
    "OpKind",
    "OpenTable",
    "Placement",
    "RequestRecord",
    "RequestReused",
    "SeatingPlan",
    "StartAttempt",
    "StillInFlight",
    "TableAlreadyFilled",
    "Tier",
    "UnknownTier",
    "WalletOp",
    "begin",
    "buy_in_settlement",
    "buyin_transfer_id",
    "check_entry_count",
    "check_may_withdraw",
    "check_still_registering",
    "entry_ids_for",
    "first_free_seat",
    "plan_seating",
    "prize_pool_range",
    "request_key",
    "table_name",
    "tier_id_for",
    "tier_name",
    "withdrawal",
]

"""Typed refusals of the lobby's rules; the service maps each TYPE to a gRPC status."""

from __future__ import annotations


class LobbyError(Exception):
    """A lobby rule refused the command."""


class BadEntryCount(LobbyError):
    """A Register asked for fewer than 1 or more than ``MAX_ENTRIES`` entries."""

    def __init__(self, entries: int, maximum: int) -> None:
        super().__init__(f"entries must be between 1 and {maximum}, got {entries}")
        self.entries = entries
        self.maximum = maximum


class UnknownTier(LobbyError):
    """No active buy-in tier has this id."""

    def __init__(self, tier_id: str) -> None:
        super().__init__(f"unknown buy-in tier {tier_id!r} (see ListLobby)")
        self.tier_id = tier_id


class RequestReused(LobbyError):
    """A request id was used before for another tier or entry count."""

    def __init__(self, request_id: str, *, old: tuple[str, int], new: tuple[str, int]) -> None:
        super().__init__(
            f"request_id {request_id!r} was used for {old[1]} entries of tier {old[0]!r}; "
            f"use a new request_id for {new[1]} entries of {new[0]!r}"
        )
        self.request_id = request_id


class AttemptRollingBack(LobbyError):
    """An earlier attempt of the request is being rolled back; retry shortly."""

    def __init__(self, request_id: str) -> None:
        super().__init__(
            f"an earlier attempt of request {request_id!r} is being rolled back; retry shortly"
        )
        self.request_id = request_id


class InsufficientFunds(LobbyError):
    """The player cannot pay every entry of the request (nothing was reserved)."""

    def __init__(
        self, player_id: str, *, available: int, required: int, entries: int, tier_name: str
    ) -> None:
        super().__init__(
            f"insufficient funds: {entries} × {tier_name} needs {required} cents, "
            f"player {player_id!r} has {available} available; nothing was reserved"
        )
        self.player_id = player_id
        self.available = available
        self.required = required


class EntryNotFound(LobbyError):
    """No entry matches the Unregister."""

    def __init__(self, entry_id: str, table_id: str, player_id: str) -> None:
        what = entry_id or f"of player {player_id!r} at table {table_id!r}"
        super().__init__(f"no entry {what}")
        self.entry_id = entry_id
        self.table_id = table_id


class NotYourEntry(LobbyError):
    """A player tried to withdraw another player's entry."""

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"entry {entry_id!r} belongs to another player")
        self.entry_id = entry_id


class TableAlreadyFilled(LobbyError):
    """Entries can no longer be withdrawn: the table filled."""

    def __init__(self, table_id: str, table_name: str, status: str) -> None:
        if status == "cancelled":
            message = (
                f"table {table_name!r} was cancelled: every entry's buy-in is being given "
                "back, there is nothing to unregister"
            )
        else:
            message = (
                f"table {table_name!r} is full: the third player registered, so entries can "
                "no longer unregister"
            )
        super().__init__(message)
        self.table_id = table_id
        self.status = status


class InvalidDisplayName(LobbyError):
    """A display name breaks the rules (``electric_domain.lobby.profile``)."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"display_name {problem}")
        self.problem = problem


class SettingsVersionConflict(LobbyError):
    """An update expected another version of the player's settings."""

    def __init__(self, player_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"settings of player {player_id!r} are at version {actual}, not {expected}; "
            "read them again"
        )
        self.player_id = player_id
        self.expected = expected
        self.actual = actual


class TableNotCancellable(LobbyError):
    """The table started (or finished): it can no longer be cancelled."""

    def __init__(self, table_id: str, status: str) -> None:
        super().__init__(
            f"table {table_id!r} is {status}: only a table that has not started can be cancelled"
        )
        self.table_id = table_id
        self.status = status


class TableNotFound(LobbyError):
    """No table has this id."""

    def __init__(self, table_id: str) -> None:
        super().__init__(f"no table {table_id!r}")
        self.table_id = table_id

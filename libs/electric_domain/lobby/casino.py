"""The casino lobby's rules: casino tables, seats and game sessions (issue 13 point 1).

Pure: no I/O, no clock (``now`` is always passed in), no randomness. The registration
service loads the state, calls these functions and stores what they decide.

- Table ids are ``thb-<n>`` / ``uth-<n>``.
- Texas Hold'em Bonus (THB, seed 001): a table is private to one player, created on demand
  when the player joins (the service supplies the next table number). A player already
  seated at a THB table gets that seat back.
- Live Ultimate Texas Hold'em (UTH, seed 004): a table seats any number of players, one
  seat each; seats are numbered from 1, a join takes the lowest free seat. Joining the same
  table again returns the player's seat.
- A game session (one per seat) expires after :data:`SESSION_IDLE_LIMIT` (20 minutes, seed
  001) without activity: join, :func:`touch` (any game action reported by the table service
  or the client's TouchSession) refresh it; :func:`expired` lists those the sweeper releases
  with reason IDLE_EXPIRED. Leaving releases with reason LEFT.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from electric_domain.lobby.errors import LobbyError

#: A game session ends after this long without activity (seed 001).
SESSION_IDLE_LIMIT = timedelta(minutes=20)


class CasinoGame(Enum):
    """The house-banked games (their table id prefix is the value)."""

    THB = "thb"
    UTH = "uth"


class ReleaseReason(Enum):
    """Why a seat was released (CasinoSeatReleased.reason)."""

    LEFT = "left"
    IDLE_EXPIRED = "idle_expired"


class UnknownCasinoTable(LobbyError):
    """No open casino table has this id (or it is of another game)."""

    def __init__(self, table_id: str) -> None:
        super().__init__(f"unknown casino table {table_id!r} (see ListCasinoLobby)")
        self.table_id = table_id


class PrivateTable(LobbyError):
    """A THB table is private to the player it was created for."""

    def __init__(self, table_id: str) -> None:
        super().__init__(f"casino table {table_id!r} is private to another player")
        self.table_id = table_id


class NotSeated(LobbyError):
    """The player has no seat (session) at this casino table."""

    def __init__(self, table_id: str, player_id: str) -> None:
        super().__init__(f"player {player_id!r} is not seated at casino table {table_id!r}")
        self.table_id = table_id
        self.player_id = player_id


def table_id_for(game: CasinoGame, number: int) -> str:
    """``thb-<n>`` / ``uth-<n>``."""
    if number < 1:
        raise ValueError("casino table numbers start at 1")
    return f"{game.value}-{number}"


def game_of(table_id: str) -> CasinoGame:
    """The game of a casino table id; :class:`UnknownCasinoTable` when it is none."""
    prefix, _, number = table_id.partition("-")
    try:
        game = CasinoGame(prefix)
    except ValueError:
        raise UnknownCasinoTable(table_id) from None
    if not number.isdigit() or int(number) < 1:
        raise UnknownCasinoTable(table_id)
    return game


@dataclass(frozen=True)
class CasinoTable:
    """An open casino table. ``owner_id``: the player of a private (THB) table."""

    table_id: str
    game: CasinoGame
    owner_id: str = ""


@dataclass(frozen=True)
class Session:
    """A seat and its game session."""

    session_id: str
    table_id: str
    game: CasinoGame
    player_id: str
    seat: int
    started_at: datetime
    last_active_at: datetime

    def idle_for(self, now: datetime) -> timedelta:
        """Time since the last activity (never negative)."""
        return max(now - self.last_active_at, timedelta(0))

    def expires_at(self) -> datetime:
        """When the session ends without further activity."""
        return self.last_active_at + SESSION_IDLE_LIMIT


@dataclass(frozen=True)
class Joined:
    """What a join decided."""

    session: Session
    #: The private THB table created for this join (None: an existing table).
    created_table: CasinoTable | None
    #: True when the player already had this seat (nothing new; the session is refreshed).
    already_seated: bool


def join(
    game: CasinoGame,
    player_id: str,
    *,
    table_id: str,
    tables: Mapping[str, CasinoTable],
    sessions: Sequence[Session],
    session_id: str,
    next_thb_number: int,
    now: datetime,
) -> Joined:
    """Seat ``player_id`` (module doc). ``table_id``: the table asked for (UTH: required;
    THB: empty = the player's own table, created when missing). ``sessions``: the open
    sessions of the table asked for and of the player. ``session_id``: the id a new session
    gets. ``next_thb_number``: the number a new THB table gets."""
    if not player_id:
        raise ValueError("player_id is required")
    mine = [s for s in sessions if s.player_id == player_id and s.game is game]
    if game is CasinoGame.THB:
        if table_id:
            table = _table(tables, table_id, game)
            if table.owner_id != player_id:
                raise PrivateTable(table_id)
        own = [s for s in mine if not table_id or s.table_id == table_id]
        if own:
            return Joined(touch(own[0], now), None, already_seated=True)
        if table_id:  # the player's own table, seat released: sit again
            return Joined(_new(session_id, table_id, game, player_id, 1, now), None, False)
        created = CasinoTable(table_id_for(game, next_thb_number), game, owner_id=player_id)
        return Joined(_new(session_id, created.table_id, game, player_id, 1, now), created, False)
    _table(tables, table_id, game)
    here = [s for s in mine if s.table_id == table_id]
    if here:
        return Joined(touch(here[0], now), None, already_seated=True)
    taken = {s.seat for s in sessions if s.table_id == table_id}
    seat = next(n for n in range(1, len(taken) + 2) if n not in taken)
    return Joined(_new(session_id, table_id, game, player_id, seat, now), None, False)


def _table(tables: Mapping[str, CasinoTable], table_id: str, game: CasinoGame) -> CasinoTable:
    table = tables.get(table_id)
    if table is None or table.game is not game or game_of(table_id) is not game:
        raise UnknownCasinoTable(table_id)
    return table


def _new(
    session_id: str, table_id: str, game: CasinoGame, player_id: str, seat: int, now: datetime
) -> Session:
    if not session_id:
        raise ValueError("session_id is required")
    return Session(session_id, table_id, game, player_id, seat, now, now)


def touch(session: Session, now: datetime) -> Session:
    """Activity: the session's idle time starts again (a clock going backwards is ignored)."""
    return replace(session, last_active_at=max(session.last_active_at, now))


def leave(sessions: Iterable[Session], table_id: str, player_id: str) -> Session:
    """The player's session at ``table_id`` to release with reason LEFT; :class:`NotSeated`
    when there is none."""
    for s in sessions:
        if s.table_id == table_id and s.player_id == player_id:
            return s
    raise NotSeated(table_id, player_id)


def expired(sessions: Iterable[Session], now: datetime) -> list[Session]:
    """Sessions idle for :data:`SESSION_IDLE_LIMIT` or longer at ``now`` (the sweeper releases
    them with reason IDLE_EXPIRED), oldest activity first."""
    out = [s for s in sessions if s.idle_for(now) >= SESSION_IDLE_LIMIT]
    return sorted(out, key=lambda s: (s.last_active_at, s.session_id))


def next_expiry(sessions: Iterable[Session]) -> datetime | None:
    """When the next session expires (the sweeper may sleep until then), None if none."""
    return min((s.expires_at() for s in sessions), default=None)


def seated_counts(sessions: Iterable[Session]) -> dict[str, int]:
    """Players seated per table (the lobby's "number seated")."""
    counts: dict[str, int] = {}
    for s in sessions:
        counts[s.table_id] = counts.get(s.table_id, 0) + 1
    return counts

"""Registration's casino decisions, one transaction each: load, let the casino lobby rules
(``electric_domain.lobby.casino``) decide, write the rows and append the events
(``casino-table-<table_id>``: CasinoTableOpened, CasinoSeatTaken, CasinoSeatReleased).

Time is an input: every decision takes ``now`` from the injected ``clock`` (tests pass a fake
one), so idle expiry is tested without waiting 20 minutes.

Causality (docs/logging.md): the events of a JoinCasinoTable / LeaveCasinoTable call carry the
call's correlation id and its request id as causation (bound by the gRPC server; the store
takes them from the context). What no request caused (the start-up's UTH tables, an idle
expiry) is correlated by the table id.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from electric_domain.casino.common.config import CasinoConfig
from electric_domain.lobby.casino import (
    SESSION_IDLE_LIMIT,
    CasinoGame,
    CasinoTable,
    Joined,
    NotSeated,
    ReleaseReason,
    Session,
    expired,
    join,
    leave,
    next_expiry,
    table_id_for,
    touch,
)
from electric_domain.lobby.casino_lobby import GameLine, casino_lobby
from electric_eventlog import ANY, EventStore, causality, utc_now
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from electric_registration import codec
from electric_registration.casino import repo
from electric_registration.store.tiers import seed_lock

#: A join racing another for the same seat or table number (a unique index refuses the
#: loser) is retried this many times, after a short jittered pause.
JOIN_ATTEMPTS = 30
casino_stream = codec.casino_stream


class CasinoLobby:
    """Casino tables, seats and sessions (module doc)."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        config: CasinoConfig,
        *,
        clock: Callable[[], datetime] = utc_now,
        uth_tables: int = 1,
    ) -> None:
        self.engine = engine
        self.store = store
        self.config = config
        self.clock = clock
        self.uth_tables = uth_tables

    def _append(self, conn: Connection, table_id: str, events: Sequence[Message]) -> None:
        codec.append(
            self.store,
            conn,
            codec.casino_stream(table_id),
            ANY,
            events,
            correlation_id=causality.correlation_id() or table_id,
            at=self.clock(),
        )

    def ensure_tables(self) -> list[str]:
        """Open the shared UTH tables ``uth-1`` … ``uth-<uth_tables>`` that are missing."""
        opened: list[str] = []
        with self.engine.begin() as conn:
            seed_lock(conn)  # several registration instances may start together
            have = repo.tables(conn)
            for n in range(1, self.uth_tables + 1):
                tid = table_id_for(CasinoGame.UTH, n)
                if tid in have:
                    continue
                repo.add_table(conn, CasinoTable(tid, CasinoGame.UTH), n, self.clock())
                self._append(conn, tid, [codec.casino_table_opened(tid, "uth")])
                opened.append(tid)
        return opened

    def lobby(self, viewer_id: str = "") -> tuple[list[GameLine], list[Session]]:
        """The lobby's games and the viewer's open sessions."""
        with self.engine.connect() as conn:
            tables = repo.tables(conn)
            seated = repo.seated_counts(conn)
            mine = repo.player_sessions(conn, viewer_id) if viewer_id else []
        return casino_lobby(self.config, tables.values(), seated, viewer_id=viewer_id), mine

    def join(self, game: CasinoGame, player_id: str, table_id: str = "") -> Joined:
        """Seat the player (retried when a concurrent join took the seat or number)."""
        for attempt in range(JOIN_ATTEMPTS):
            try:
                with self.engine.begin() as conn:
                    return self._join(conn, game, player_id, table_id)
            except IntegrityError:
                if attempt == JOIN_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise AssertionError("unreachable")

    def _join(self, conn: Connection, game: CasinoGame, player_id: str, table_id: str) -> Joined:
        now = self.clock()
        tables = repo.tables(conn)
        if game is CasinoGame.THB and not table_id:  # back to the player's own table
            own = [t for t in tables.values() if t.game is game and t.owner_id == player_id]
            table_id = own[0].table_id if own else ""
        number = repo.next_number(conn, CasinoGame.THB)
        joined = join(
            game,
            player_id,
            table_id=table_id,
            tables=tables,
            sessions=repo.sessions_for(conn, table_id, player_id),
            session_id=uuid.uuid4().hex,
            next_thb_number=number,
            now=now,
        )
        s = joined.session
        if joined.already_seated:
            repo.touch(conn, s)
            return joined
        events: list[Message] = []
        if joined.created_table is not None:
            repo.add_table(conn, joined.created_table, number, now)
            events.append(codec.casino_table_opened(s.table_id, game.value, player_id))
        repo.add_session(conn, s)
        events.append(codec.casino_seat_taken(s))
        self._append(conn, s.table_id, events)
        return joined

    def _release(self, conn: Connection, s: Session, reason: ReleaseReason) -> None:
        self._append(conn, s.table_id, [codec.casino_seat_released(s, reason)])

    def leave(self, table_id: str, player_id: str) -> Session:
        """Release the player's seat with reason LEFT (:class:`NotSeated` if none)."""
        with self.engine.begin() as conn:
            s = leave(repo.sessions_for(conn, table_id, player_id), table_id, player_id)
            if not repo.release(conn, s):
                raise NotSeated(table_id, player_id)
            self._release(conn, s, ReleaseReason.LEFT)
            return s

    def touch(self, table_id: str, player_id: str) -> Session:
        """Activity at the table: the session's idle time starts again."""
        with self.engine.begin() as conn:
            s = touch(
                leave(repo.sessions_for(conn, table_id, player_id), table_id, player_id),
                self.clock(),
            )
            repo.touch(conn, s)
            return s

    def sweep(self, until: datetime | None = None) -> list[Session]:
        """Release every session idle for 20 minutes at the clock's now (IDLE_EXPIRED), each
        in its own transaction and only if it is still idle (a touch in between wins).
        ``until``: the time up to which activity is known (``activity.known_until``): idle
        time is counted only up to it, never over activity still unread."""
        now = self.clock() if until is None else min(self.clock(), until)
        cutoff = now - SESSION_IDLE_LIMIT
        with self.engine.connect() as conn:
            due = expired(repo.idle_since(conn, cutoff), now)
        released: list[Session] = []
        for s in due:
            with self.engine.begin() as conn:
                if repo.release(conn, s, idle_cutoff=cutoff):
                    self._release(conn, s, ReleaseReason.IDLE_EXPIRED)
                    released.append(s)
        return released

    def next_expiry(self) -> datetime | None:
        """When the next open session expires."""
        with self.engine.connect() as conn:
            return next_expiry(repo.all_sessions(conn))


class ExpirySweeper:
    """Background loop: :meth:`CasinoLobby.sweep`, then sleep until the next expiry (at most
    ``interval`` seconds, so activity recorded meanwhile is seen)."""

    def __init__(
        self,
        lobby: CasinoLobby,
        *,
        interval: float = 30.0,
        known_until: Callable[[datetime], datetime | None] | None = None,
    ) -> None:
        self.lobby = lobby
        self.interval = interval
        #: Up to when activity is known at the clock's now (None: the clock's now itself);
        #: a None answer defers the sweep (``activity.known_until``).
        self.known_until = known_until
        self.deferred = 0  # sweeps skipped because the activity consumer's progress is unknown
        #: Called with the sessions each sweep released (metrics, tests).
        self.on_released: Callable[[list[Session]], None] = lambda _s: None

    async def run_once(self) -> list[Session]:
        """One sweep."""
        until = None
        if self.known_until is not None:
            until = self.known_until(self.lobby.clock())
            if until is None:
                self.deferred += 1
                return []
        released = await asyncio.to_thread(self.lobby.sweep, until)
        if released:
            self.on_released(released)
        return released

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``."""
        while not stop.is_set():
            await self.run_once()
            nxt = await asyncio.to_thread(self.lobby.next_expiry)
            wait = self.interval
            if nxt is not None:
                wait = min(wait, max((nxt - self.lobby.clock()).total_seconds(), 0.05))
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
            except TimeoutError:
                continue

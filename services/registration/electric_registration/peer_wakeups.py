"""Wake-ups of WatchMyTables streams across registration instances (PostgreSQL LISTEN/NOTIFY).

Several registration instances share one database (docs/scaling.md §4). A change is
committed by whichever instance handled it: the Register that reached it, the table event
its consumer was assigned. A player's WatchMyTables stream may be open on another instance,
which learned of the change only at its 2 s re-read (``WATCH_POLL_SECONDS``). So every
instance also announces the players it woke on a PostgreSQL channel, and every instance
listens to it and wakes its own streams of those players.

- **After the commit.** :meth:`PeerWakeups.notify` is called where the local
  :class:`~electric_registration.notify.Notifier` is, after the change committed, so a peer
  woken by the announcement re-reads the committed change. ``NOTIFY`` itself is delivered
  only when its own (autocommit) statement commits.
- **Off the caller's thread.** The announcement goes through a queue to a sender thread that
  packs what queued up into as few ``pg_notify`` payloads as fit under PostgreSQL's 8,000
  bytes (:func:`packed`), so a handler on the event loop never waits for the database.
- **Only to someone.** The listeners connect as ``electric-registration-peers``; the sender
  counts them in ``pg_stat_activity`` (at most every 5 s, every second while alone) and a
  lone instance announces nothing.
- **Not to itself.** A payload names its instance; an instance skips its own (it woke its
  streams already).
- **Moves too.** A change that only moved a table on is announced with the move itself
  (``"m"``), so a peer moves its watchers' bars on with no read, as the instance that
  applied it does (:mod:`.bars`). Changes that need a read are merged when they come in a
  row; a move keeps its place among them (a move sent after a later change would move a
  peer's bar back).
- **Best effort.** A lost announcement (database restart, listener reconnecting) costs the
  2 s re-read, as before; both threads reconnect, backing off.

SQLite (the embedded platform) is one process: nothing to announce, :func:`peer_wakeups`
returns the local notifier's ``notify``.
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from electric_registration.notify import Notifier, Notify, TableMoved

log = logging.getLogger(__name__)

CHANNEL = "electric_registration_players"
#: Players per announced change in one payload: ids are at most 100 characters, so one
#: change's players always fit in a payload.
PLAYERS_PER_PAYLOAD = 60
#: The listeners' ``application_name``: an instance announces only while another one's is
#: connected (checked at most every ``PEERS_CHECK_SECONDS``).
LISTENER_NAME = "electric-registration-peers"
PEERS_CHECK_SECONDS = 5.0
#: Most bytes of one payload (PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more).
PAYLOAD_BYTES = 7_900


#: Players woken by one change, and the move when all it did was move a table on.
_Announcement = tuple[list[str], TableMoved | None]


def packed(instance_id: str, announcements: Iterable[_Announcement]) -> Iterator[str]:
    """JSON payloads ``{"i": instance, "a": [[players, move or null], ...]}``, in order, as
    few as fit under :data:`PAYLOAD_BYTES` (one ``pg_notify`` each): a busy instance's
    announcements of one send cost one statement, not one per change (with a statement per
    move, the announcements were 10 % of a lone registration's busy samples in the bench's
    profile; 5 % packed). The move, when all the change
    did was move that table on, lets a peer move its bars on with no read."""
    items: list[str] = []
    size = 0
    head = json.dumps({"i": instance_id}, separators=(",", ":"))[:-1] + ',"a":['
    for players, moved in announcements:
        unique = sorted(set(players))
        move = None if moved is None else _move_json(moved)
        for start in range(0, len(unique), PLAYERS_PER_PAYLOAD):
            item = json.dumps(
                [unique[start : start + PLAYERS_PER_PAYLOAD], move], separators=(",", ":")
            )
            if items and len(head) + size + len(item) + len(items) + 2 > PAYLOAD_BYTES:
                yield head + ",".join(items) + "]}"
                items, size = [], 0
            items.append(item)
            size += len(item)
    if items:
        yield head + ",".join(items) + "]}"


def _move_json(moved: TableMoved) -> dict[str, Any]:
    deadline = moved.turn_deadline
    return {
        "t": moved.table_id,
        "h": moved.hand_number,
        "s": [list(seat_stack) for seat_stack in moved.stacks],
        "ts": moved.turn_seat,
        "d": None if deadline is None else round(deadline.timestamp() * 1000),
    }


def _move_from(got: dict[str, Any]) -> TableMoved:
    deadline = got["d"]
    return TableMoved(
        table_id=str(got["t"]),
        hand_number=int(got["h"]),
        stacks=tuple((int(seat), int(stack)) for seat, stack in got["s"]),
        turn_seat=int(got["ts"]),
        turn_deadline=None if deadline is None else datetime.fromtimestamp(deadline / 1000, UTC),
    )


def announced(payload: str, instance_id: str) -> list[_Announcement]:
    """The changes a peer's payload announces, in order; [] for this instance's own or a
    malformed one. (A payload of the format before the packing, ``{"i", "p"}``, is one
    change that needs a read: a peer not yet upgraded.)"""
    try:
        got = json.loads(payload)
        if got["i"] == instance_id:
            return []
        if "a" not in got:
            return [([p for p in got["p"] if isinstance(p, str)], None)]
        return [
            (
                [p for p in players if isinstance(p, str)],
                None if move is None else _move_from(move),
            )
            for players, move in got["a"]
        ]
    except (ValueError, KeyError, TypeError):
        log.warning("registration.peer_wakeup_malformed", extra={"payload": payload[:200]})
        return []


def _merged(queued: list[_Announcement]) -> list[_Announcement]:
    """``queued`` in order, each run of consecutive changes without a move merged into one
    (a peer reads once for them). Moves stay single and in place: a move announced after a
    later change would move a peer's bar back."""
    out: list[_Announcement] = []
    for players, moved in queued:
        if moved is None and out and out[-1][1] is None:
            out[-1] = (out[-1][0] + players, None)
        else:
            out.append((list(players), moved))
    return out


class PeerWakeups:
    """Announces this instance's wake-ups on :data:`CHANNEL` and wakes ``notifier``'s
    streams for the peers' ones. :meth:`start` the two threads, :meth:`stop` them."""

    def __init__(
        self,
        engine: Engine,
        notifier: Notifier,
        instance_id: str,
        *,
        peers_check_seconds: float = PEERS_CHECK_SECONDS,
    ) -> None:
        self.engine = engine
        self.notifier = notifier
        self.instance_id = instance_id
        self.peers_check_seconds = peers_check_seconds
        self._peers_checked_at = -float("inf")
        self._peers = 0
        self.sent = 0  # payloads announced
        self.skipped = 0  # sends skipped: no peer listening
        self.received = 0  # peers' payloads that woke something here (or could have)
        self._outbox: queue.SimpleQueue[_Announcement | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.listening = threading.Event()  # set once LISTEN is in place (tests)

    def notify(self, players: Iterable[str], moved: TableMoved | None = None) -> None:
        """Wake this instance's streams of ``players`` and announce them to the peers
        (thread-safe, never blocks). ``moved`` moves this instance's bars on with no read;
        and the peers' too (it is in the announcement)."""
        wanted = list(players)
        self.notifier.notify(wanted, moved)
        if wanted:
            self._outbox.put((wanted, moved))

    def start(self) -> None:
        """Start the sender and the listener threads."""
        for name, target in (("sender", self._send_forever), ("listener", self._listen_forever)):
            thread = threading.Thread(target=target, name=f"peer-wakeups-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stop both threads (within about a second)."""
        self._stopping.set()
        self._outbox.put(None)
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def _send_forever(self) -> None:
        while not self._stopping.is_set():
            first = self._outbox.get()
            if first is None:
                return
            queued = [first]
            while True:  # what queued up meanwhile goes in the same round of announcements
                try:
                    more = self._outbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._stopping.set()
                    break
                queued.append(more)
            self._retrying("send", functools.partial(self._send, _merged(queued)))

    def _send(self, announcements: list[_Announcement]) -> None:
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if not self._peers_listening(conn):
                self.skipped += 1
                return
            for payload in packed(self.instance_id, announcements):
                conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": payload})
                self.sent += 1

    def _peers_listening(self, conn: Connection) -> bool:
        """Whether another instance's listener is connected (checked at most every
        ``peers_check_seconds``): a lone instance announces nothing (announcing to nobody and
        reading its own announcements back were still 5 % of its busy samples, 1.5 % now). A
        peer that starts meanwhile misses at most that long of changes, which its 2 s
        re-read covers."""
        now = time.monotonic()
        if now - self._peers_checked_at >= self.peers_check_seconds:
            listeners = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE application_name = :a AND datname = current_database()"
                ),
                {"a": LISTENER_NAME},
            ).scalar_one()
            self._peers = int(listeners) - (1 if self.listening.is_set() else 0)
            # Alone, look again sooner: a peer starting now is announced to within a second.
            alone = self._peers <= 0
            self._peers_checked_at = now - (self.peers_check_seconds * 0.8 if alone else 0)
        return self._peers > 0

    def _listen_forever(self) -> None:
        while not self._stopping.is_set():
            self._retrying("listen", self._listen)

    def _listen(self) -> None:
        raw = self.engine.raw_connection()  # kept out of the pool: it carries the LISTEN
        try:
            conn: Any = raw.driver_connection  # the psycopg connection
            conn.autocommit = True
            conn.execute(f"SET application_name = '{LISTENER_NAME}'")  # peers count these
            conn.execute(f"LISTEN {CHANNEL}")
            self.listening.set()
            while not self._stopping.is_set():
                for note in conn.notifies(timeout=1.0):
                    changes = announced(note.payload, self.instance_id)
                    if changes:
                        self.received += 1
                    for players, moved in changes:
                        self.notifier.notify(players, moved)
        finally:
            self.listening.clear()
            raw.invalidate()

    def _retrying(self, what: str, work: Callable[[], None]) -> None:
        delay = 0.5
        while not self._stopping.is_set():
            try:
                work()
                return
            except Exception as exc:  # the database is away: the 2 s re-read covers the gap
                log.warning(
                    "registration.peer_wakeups_failed", extra={"step": what, "error": str(exc)}
                )
                self._stopping.wait(delay)
                delay = min(delay * 2, 10.0)


def peer_wakeups(
    engine: Engine, notifier: Notifier, instance_id: str
) -> tuple[Notify, PeerWakeups | None]:
    """The ``notify`` the handlers call, and the :class:`PeerWakeups` behind it on
    PostgreSQL (None on SQLite, where ``notify`` is the notifier's own)."""
    if engine.dialect.name != "postgresql":
        return notifier.notify, None
    wakeups = PeerWakeups(engine, notifier, instance_id)
    return wakeups.notify, wakeups

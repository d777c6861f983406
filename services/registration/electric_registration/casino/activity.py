"""Game activity from the table service's casino events keeps sessions alive: handlers by
payload type on registration's existing table-topic worker (``TableStatusConsumer.worker``).

A round started (Deal), a bet placed, or a decision the player made refreshes the player's
session at that table, at the event's ``occurred_at`` (never backwards). An automatic
decision after a timeout (``timed_out``) is not activity: the player is away. A decision
carries no table id: it refreshes the player's sessions (one per table).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as tc
from electric_clients.convert import utc_datetime
from electric_eventlog import ConsumerWorker
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection

from electric_registration.casino import repo


def _touch(conn: Connection, envelope: Envelope, player_id: str, table_id: str) -> None:
    if player_id:
        repo.touch_activity(conn, player_id, table_id, utc_datetime(envelope.occurred_at))


def _started(conn: Connection, envelope: Envelope, e: tc.CasinoRoundStarted) -> AfterCommit | None:
    _touch(conn, envelope, e.player_id, e.table_id)
    return None


def _bet(conn: Connection, envelope: Envelope, e: tc.CasinoBetPlaced) -> AfterCommit | None:
    _touch(conn, envelope, e.player_id, e.table_id)
    return None


def _decided(conn: Connection, envelope: Envelope, e: tc.CasinoDecisionMade) -> AfterCommit | None:
    if not e.timed_out:
        _touch(conn, envelope, e.player_id, "")
    return None


def register_activity(worker: ConsumerWorker) -> None:
    """Add the casino activity handlers to registration's table-topic worker."""
    worker.on(tc.CasinoRoundStarted, _started)
    worker.on(tc.CasinoBetPlaced, _bet)
    worker.on(tc.CasinoDecisionMade, _decided)


def known_until(
    worker: ConsumerWorker, lag: Callable[[], int | None]
) -> Callable[[datetime], datetime | None]:
    """Up to when the table service's casino activity has reached registration, for the idle
    expiry (issue 28 item 5: six active THB players were expired while this consumer lagged
    in a chaos run): ``now`` when ``worker`` has nothing left to read; else the time of the
    latest event it has read, so a session is judged idle only over time whose activity has
    been read; None (no expiry yet) when it lags and has read nothing, or its lag is not
    known yet."""

    def until(now: datetime) -> datetime | None:
        behind = lag()
        if behind == 0:
            return now
        if behind is None or worker.progress_at is None:
            return None
        return min(now, worker.progress_at)

    return until

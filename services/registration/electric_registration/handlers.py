"""Registration's application services: load state, decide, append events with own rows.

Skeleton scope (issue 2): keep one open table per tier, each opened with a TableOpened
event that commits to the multiplier seed. Register/Unregister arrive with issue 7.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid

from electric.common.v1 import money_pb2
from electric.registration.v1 import events_pb2
from electric_eventlog import NO_STREAM, EventStore, utc_now
from sqlalchemy import Engine

from electric_registration.store import repo

#: Pay table version used for draws until the configurable pay table is wired (issue 7).
PAYTABLE_VERSION = "electric-default-1"
#: Default prize pool multipliers (DESIGN §5), for the lobby's prize range.
DEFAULT_MULTIPLIERS: tuple[int, ...] = (2, 3, 4, 5, 10, 100, 1000, 10000)


def table_stream(table_id: str) -> str:
    """Event stream of a registration table."""
    return f"registration-table-{table_id}"


def commit_seed(seed: bytes) -> str:
    """Hex SHA-256 commitment of a multiplier seed."""
    return hashlib.sha256(seed).hexdigest()


def ensure_open_tables(
    engine: Engine, store: EventStore, *, correlation_id: str
) -> list[events_pb2.TableOpened]:
    """Open a table for every active tier that has none open (idempotent).

    Each table is opened in its own transaction: the row, the TableOpened event and its
    outbox row commit together. Returns the events appended.
    """
    with engine.connect() as conn:
        tiers = repo.list_tiers(conn)
    opened: list[events_pb2.TableOpened] = []
    for tier in tiers:
        with engine.begin() as conn:
            repo.lock_tier(conn, tier.tier_id)
            if repo.open_table_count(conn, tier.tier_id) > 0:
                continue
            number = repo.table_count(conn, tier.tier_id) + 1
            table_id = str(uuid.uuid4())
            seed = secrets.token_bytes(32)
            event = events_pb2.TableOpened(
                table_id=table_id,
                table_name=f"{tier.name} #{number}",
                tier_id=tier.tier_id,
                buy_in=money_pb2.Money(cents=tier.buy_in_cents, currency="USD"),
                rake=money_pb2.Money(cents=tier.rake_cents, currency="USD"),
                seats=tier.seats,
                multiplier_seed_commitment=commit_seed(seed),
                paytable_version=PAYTABLE_VERSION,
                starting_stack=tier.starting_stack,
            )
            now = utc_now()
            [envelope] = store.append(
                conn,
                table_stream(table_id),
                NO_STREAM,
                [event],
                correlation_id=correlation_id,
                causation_id=correlation_id,
                occurred_at=now,
            )
            repo.insert_table(
                conn,
                table_id=table_id,
                tier_id=tier.tier_id,
                table_name=event.table_name,
                seats=tier.seats,
                seed_hex=seed.hex(),
                commitment=event.multiplier_seed_commitment,
                paytable_version=PAYTABLE_VERSION,
                stream_version=envelope.stream_version,
                opened_at=now,
            )
            opened.append(event)
    return opened

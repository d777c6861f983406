"""electric_eventlog: event store, outbox, relay, buses, idempotent consumers and replay.

Typical service use (see docs/event-store.md for the full guide)::

    engine = create_engine(url)                  # postgresql+psycopg://... or sqlite:///...
    migrate(engine)                              # the event log's own tables
    store = EventStore(engine, producer="wallet")
    with engine.begin() as conn:                 # one transaction: own rows + events + outbox
        conn.execute(...)                        # projections, idempotency records
        store.append(conn, "wallet-account-42", 3, [TransferPosted(...)],
                     correlation_id=req_id, causation_id=req_id)
"""

from __future__ import annotations

from .bus import (
    EventBus,
    Handler,
    Headers,
    OutgoingMessage,
    ReceivedMessage,
    decode_envelope,
    envelope_message,
)
from .consumer import ConsumerWorker, Effect, IdempotentConsumer, is_transient
from .engine import create_engine, read_only
from .errors import (
    ConcurrencyError,
    DuplicateEventError,
    EventLogError,
    SchemaError,
    StreamNotFoundError,
)
from .hashing import canonical_bytes, compute_hash
from .inprocess import InProcessBus
from .migrate import downgrade, migrate, upgrade
from .model import ANY, NO_STREAM, STREAM_EXISTS, Expected, ExpectedVersion, NewEvent, Snapshot
from .outbox import fetch_unsent, mark_sent, purge_sent, unsent_count
from .outbox_relay import OutboxRelay
from .registry import PayloadRegistry, default_registry, pack, type_name_of
from .replay import fold_stream, replay_store, replay_topic
from .store import EventStore, utc_now
from .topics import dlq_topic_for, namespaced, partitions_for, topic_for
from .verify import BrokenLink, ChainVerifier, VerificationReport, verify, verify_envelopes

__all__ = [
    "ANY",
    "NO_STREAM",
    "STREAM_EXISTS",
    "BrokenLink",
    "ChainVerifier",
    "ConcurrencyError",
    "ConsumerWorker",
    "DuplicateEventError",
    "Effect",
    "EventBus",
    "EventLogError",
    "EventStore",
    "Expected",
    "ExpectedVersion",
    "Handler",
    "Headers",
    "IdempotentConsumer",
    "InProcessBus",
    "NewEvent",
    "OutboxRelay",
    "OutgoingMessage",
    "PayloadRegistry",
    "ReceivedMessage",
    "SchemaError",
    "Snapshot",
    "StreamNotFoundError",
    "VerificationReport",
    "canonical_bytes",
    "compute_hash",
    "create_engine",
    "decode_envelope",
    "default_registry",
    "dlq_topic_for",
    "downgrade",
    "envelope_message",
    "fetch_unsent",
    "fold_stream",
    "is_transient",
    "mark_sent",
    "migrate",
    "namespaced",
    "pack",
    "partitions_for",
    "purge_sent",
    "read_only",
    "replay_store",
    "replay_topic",
    "topic_for",
    "type_name_of",
    "unsent_count",
    "upgrade",
    "utc_now",
    "verify",
    "verify_envelopes",
]

"""PostgreSQL bulk appends of a group-commit batch (docs/event-store.md, "Group commit").

When several plain appends (``EventStore.append_in_new_tx``: no rows of the caller's own)
are in one batch, :func:`bulk_append_one_trip` writes them together in ONE round trip:
a savepoint, ``SELECT … FROM eventlog_head … FOR UPDATE`` (the position lock, held until
the batch commits), then ONE statement (:data:`ONE_TRIP`, its snapshot taken after the
lock was granted, so it sees every commit) that checks each append's expected version
against its stream's tip (a conflicting append is left out and gets its own
``ConcurrencyError``; nothing is written for it), assigns versions, positions and the
SHA-256 chain in SQL (the tail of each event was encoded by the caller's thread), inserts
every event and its outbox row and moves the head row — then, when nothing else is in the
transaction, the COMMIT. Should the statement fail (a duplicate event id), the savepoint
is rolled back and the caller runs the appends one by one instead, each failing alone.

The pieces for a service's own bulk executor (the wallet's ``batch.py``), which reads the
tips itself in its first round trip: :data:`LOCK_HEAD`, :data:`TIPS`, :func:`assign`
(pre-check, number and hash on the client), :data:`INSERT` with :func:`insert_params`.

Positions stay gap-free and commit-ordered: they are assigned under the head-row lock,
and the head row moves by exactly the number of events inserted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import psycopg
from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Connection

from .errors import EventLogError, SchemaError
from .hashing import HASH_TAG, canonical_tail
from .hashing import field as encode_field
from .model import Expected

LOCK_HEAD = "SELECT last_position FROM eventlog_head WHERE id = 1 FOR UPDATE"
TIPS = (
    "SELECT s.id, t.stream_version, t.hash FROM unnest(%(ids)s::text[]) AS s(id)"
    " JOIN LATERAL (SELECT stream_version, hash FROM eventlog_events"
    " WHERE stream_id = s.id ORDER BY stream_version DESC LIMIT 1) AS t ON true"
)
INSERT = (
    "WITH ev AS (INSERT INTO eventlog_events (global_position, stream_id, stream_version,"
    " event_id, event_type, occurred_at, recorded_at, correlation_id, causation_id, producer,"
    " payload_type_url, payload, prev_hash, hash)"
    " SELECT gp, sid, sv, eid, et, oa, %(recorded_at)s::timestamptz, corr, caus,"
    " %(producer)s::text, tu, pl, prev, h FROM unnest(%(gp)b::int8[], %(sid)b::text[],"
    " %(sv)b::int8[], %(eid)b::text[], %(et)b::text[], %(oa)b::timestamptz[],"
    " %(corr)b::text[], %(caus)b::text[], %(tu)b::text[], %(pl)b::bytea[], %(prev)b::text[],"
    " %(h)b::text[]) AS n(gp, sid, sv, eid, et, oa, corr, caus, tu, pl, prev, h)"
    " RETURNING global_position),"
    " ob AS (INSERT INTO eventlog_outbox (global_position, topic, created_at)"
    " SELECT global_position, %(topic)s::text, %(recorded_at)s::timestamptz FROM ev"
    " WHERE %(topic)s::text <> '')"
    " UPDATE eventlog_head SET last_position = %(last)s::bigint WHERE id = 1"
)


@dataclass
class PreparedAppend:
    """One append, encoded by the caller's thread before it joins a batch."""

    stream_id: str
    expected: Expected
    envelopes: list[Envelope]
    tails: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.tails:
            self.tails = [canonical_tail(e) for e in self.envelopes]


def assign(
    items: list[PreparedAppend], position: int, tips: dict[str, tuple[int, str]], check: Any
) -> tuple[list[list[Envelope] | BaseException], dict[str, list[Any]], int]:
    """Pre-check each item against ``tips`` (stream → (version, hash), updated in place),
    then give its envelopes versions, positions after ``position`` and their hashes.
    Returns per item its envelopes or its error, the insert's column arrays, and the last
    position assigned."""
    outcomes: list[list[Envelope] | BaseException] = []
    cols: dict[str, list[Any]] = {
        k: [] for k in ("gp", "sid", "sv", "eid", "et", "oa", "corr", "caus", "tu", "pl")
    }
    cols["prev"], cols["h"] = [], []
    for item in items:
        version, prev = tips.get(item.stream_id, (0, ""))
        try:
            check(item.stream_id, item.expected, version)
        except EventLogError as exc:
            outcomes.append(exc)
            continue
        stream_field = encode_field(item.stream_id.encode())
        for envelope, tail in zip(item.envelopes, item.tails, strict=True):
            version += 1
            position += 1
            digest = hashlib.sha256(
                b"".join(
                    (
                        HASH_TAG,
                        encode_field(prev.encode()),
                        stream_field,
                        encode_field(str(version).encode()),
                        encode_field(str(position).encode()),
                        tail,
                    )
                )
            ).hexdigest()
            envelope.stream_version = version
            envelope.global_position = position
            envelope.prev_hash = prev
            envelope.hash = digest
            for key, value in (
                ("gp", position),
                ("sid", item.stream_id),
                ("sv", version),
                ("eid", envelope.event_id),
                ("et", envelope.event_type),
                ("oa", envelope.occurred_at.ToDatetime(tzinfo=UTC)),
                ("corr", envelope.correlation_id),
                ("caus", envelope.causation_id),
                ("tu", envelope.payload.type_url),
                ("pl", envelope.payload.value),
                ("prev", prev),
                ("h", digest),
            ):
                cols[key].append(value)
            prev = digest
        tips[item.stream_id] = (version, prev)
        outcomes.append(item.envelopes)
    return outcomes, cols, position


def insert_params(
    cols: dict[str, list[Any]], *, last: int, recorded_at: datetime, producer: str, topic: str
) -> dict[str, Any]:
    """Parameters of :data:`INSERT` (events, outbox rows, head row = ``last``)."""
    return {**cols, "recorded_at": recorded_at, "producer": producer, "topic": topic, "last": last}


def _driver(conn: Connection) -> psycopg.Connection[Any]:
    if not conn.in_transaction():
        conn.begin()
    return cast("psycopg.Connection[Any]", conn.connection.dbapi_connection)


def _hash_sql(prev: str, version: str, position: str, stream: str, tail: str) -> str:
    """SQL of ``hashing.compute_hash`` (canonical encoding v1) of one event."""

    def framed(text: str) -> str:
        return f"int8send(octet_length({text})::bigint) || convert_to({text}, 'UTF8')"

    return (
        f"encode(sha256(%(tag)b::bytea || {framed(prev)} || {framed(stream)} || "
        f"{framed(f'({version})::text')} || {framed(f'({position})::text')} || {tail}), 'hex')"
    )


#: The whole batch in ONE statement, sent right after LOCK_HEAD in one pipeline (so its
#: snapshot is taken after the position lock was granted): a recursive walk over the
#: events in batch order carries every stream's tip (a jsonb object) and the position;
#: an item's first event decides the item's expected-version check (``mode``: 0 any,
#: 1 exact, 2 exists), a rejected item's events are skipped; accepted events get their
#: version, position and hash chain in SQL, then are inserted with their outbox rows and
#: the head row moves to the last position. Returns one row per event.
ONE_TRIP = (
    "WITH RECURSIVE "
    "head AS (SELECT last_position AS base FROM eventlog_head WHERE id = 1), "
    "items AS (SELECT * FROM unnest(%(i_sid)b::text[], %(i_mode)b::int4[], %(i_exp)b::int8[])"
    " WITH ORDINALITY AS i(sid, mode, exp, ord)), "
    "tips0 AS (SELECT coalesce(jsonb_object_agg(s.sid, jsonb_build_array(t.stream_version,"
    " t.hash)), '{}'::jsonb) AS tips FROM (SELECT DISTINCT sid FROM items) AS s"
    " JOIN LATERAL (SELECT stream_version, hash FROM eventlog_events WHERE stream_id = s.sid"
    " ORDER BY stream_version DESC LIMIT 1) AS t ON true), "
    "evs AS (SELECT e.*, e.ord = min(e.ord) OVER (PARTITION BY e.item) AS first"
    " FROM unnest(%(e_item)b::int8[], %(e_eid)b::text[], %(e_et)b::text[],"
    " %(e_oa)b::timestamptz[], %(e_corr)b::text[], %(e_caus)b::text[], %(e_tu)b::text[],"
    " %(e_pl)b::bytea[], %(e_tail)b::bytea[])"
    " WITH ORDINALITY AS e(item, eid, et, oa, corr, caus, tu, pl, tail, ord)), "
    "walk AS ("
    " SELECT 0::bigint AS ord, NULL::boolean AS ok, NULL::bigint AS actual,"
    " tips0.tips AS tips, head.base AS pos, NULL::bigint AS sv, NULL::text AS prev,"
    " NULL::text AS hash FROM tips0, head"
    " UNION ALL"
    " SELECT e.ord, d.ok, c.v, CASE WHEN d.ok THEN jsonb_set(w.tips, ARRAY[i.sid],"
    " jsonb_build_array(c.v + 1, h.hash)) ELSE w.tips END,"
    " CASE WHEN d.ok THEN w.pos + 1 ELSE w.pos END,"
    " CASE WHEN d.ok THEN c.v + 1 END, CASE WHEN d.ok THEN c.h END, h.hash"
    " FROM walk AS w JOIN evs AS e ON e.ord = w.ord + 1 JOIN items AS i ON i.ord = e.item"
    " CROSS JOIN LATERAL (SELECT coalesce((w.tips -> i.sid ->> 0)::bigint, 0) AS v,"
    " coalesce(w.tips -> i.sid ->> 1, '') AS h) AS c"
    " CROSS JOIN LATERAL (SELECT CASE WHEN NOT e.first THEN w.ok WHEN i.mode = 0 THEN true"
    " WHEN i.mode = 1 THEN c.v = i.exp ELSE c.v > 0 END AS ok) AS d"
    " CROSS JOIN LATERAL (SELECT CASE WHEN d.ok THEN "
    + _hash_sql("c.h", "c.v + 1", "w.pos + 1", "i.sid", "e.tail")
    + " END AS hash) AS h), "
    "ins AS (INSERT INTO eventlog_events (global_position, stream_id, stream_version,"
    " event_id, event_type, occurred_at, recorded_at, correlation_id, causation_id, producer,"
    " payload_type_url, payload, prev_hash, hash)"
    " SELECT w.pos, i.sid, w.sv, e.eid, e.et, e.oa, %(recorded_at)s::timestamptz, e.corr,"
    " e.caus, %(producer)s::text, e.tu, e.pl, w.prev, w.hash"
    " FROM walk AS w JOIN evs AS e ON e.ord = w.ord JOIN items AS i ON i.ord = e.item"
    " WHERE w.ok RETURNING global_position), "
    "ob AS (INSERT INTO eventlog_outbox (global_position, topic, created_at)"
    " SELECT global_position, %(topic)s::text, %(recorded_at)s::timestamptz FROM ins"
    " WHERE %(topic)s::text <> ''), "
    "up AS (UPDATE eventlog_head SET last_position = (SELECT max(pos) FROM walk)"
    " WHERE id = 1) "
    "SELECT ord, ok, actual, pos, sv, prev, hash FROM walk WHERE ord > 0 ORDER BY ord"
)


def bulk_append_one_trip(
    conn: Connection,
    items: list[PreparedAppend],
    *,
    producer: str,
    topic: str,
    recorded_at: datetime,
    check: Any,
    commit: bool = False,
) -> list[list[Envelope] | BaseException] | None:
    """Append ``items`` in the caller's transaction in one round trip (module doc). Per
    item: its stored envelopes, or the exception of its failed check. None: the statement
    failed and was rolled back to its savepoint; run the items one by one instead.
    ``check(stream_id, expected, actual)`` raises the store's expected-version errors.
    ``commit``: nothing else is in the transaction; its COMMIT joins the round trip."""
    raw = _driver(conn)
    params: dict[str, Any] = {
        "tag": HASH_TAG,
        "recorded_at": recorded_at,
        "producer": producer,
        "topic": topic,
        "i_sid": [item.stream_id for item in items],
        "i_mode": [],
        "i_exp": [],
    }
    for item in items:
        mode, wanted = _mode(item.expected)
        params["i_mode"].append(mode)
        params["i_exp"].append(wanted)
    keys = ("e_item", "e_eid", "e_et", "e_oa", "e_corr", "e_caus", "e_tu", "e_pl", "e_tail")
    for key in keys:
        params[key] = []
    for n, item in enumerate(items, start=1):
        for envelope, tail in zip(item.envelopes, item.tails, strict=True):
            for key, value in zip(
                keys,
                (
                    n,
                    envelope.event_id,
                    envelope.event_type,
                    envelope.occurred_at.ToDatetime(tzinfo=UTC),
                    envelope.correlation_id,
                    envelope.causation_id,
                    envelope.payload.type_url,
                    envelope.payload.value,
                    tail,
                ),
                strict=True,
            ):
                params[key].append(value)
    try:
        with raw.cursor() as sp, raw.cursor() as lock, raw.cursor() as cur:
            with raw.pipeline():  # one flush: nothing waits for a result in between
                sp.execute("SAVEPOINT electric_bulk_append")
                lock.execute(LOCK_HEAD)
                cur.execute(ONE_TRIP, params)
                # COMMIT as a statement of the pipeline (it commits the savepoint's work
                # too: no RELEASE then), not ``raw.commit()``: psycopg's commit syncs the
                # pipeline and waits, and the pipeline's exit then synced again, an empty
                # extra round trip per batch (found in the wallet's executor, issue 16).
                sp.execute("COMMIT" if commit else "RELEASE SAVEPOINT electric_bulk_append")
            rows = cur.fetchall()
    except psycopg.Error:
        raw.execute("ROLLBACK TO SAVEPOINT electric_bulk_append")
        return None
    outcomes: list[list[Envelope] | BaseException] = []
    at = 0
    for item in items:
        first = rows[at]
        if not first[1]:
            try:
                check(item.stream_id, item.expected, int(first[2]))
            except EventLogError as exc:
                outcomes.append(exc)
            else:  # pragma: no cover - SQL and client agree on the check
                outcomes.append(SchemaError("bulk append: check disagreement"))
        else:
            for envelope, row in zip(
                item.envelopes, rows[at : at + len(item.envelopes)], strict=True
            ):
                envelope.global_position = int(row[3])
                envelope.stream_version = int(row[4])
                envelope.prev_hash = row[5]
                envelope.hash = row[6]
            outcomes.append(item.envelopes)
        at += len(item.envelopes)
    return outcomes


def _mode(expected: Expected) -> tuple[int, int]:
    from .model import ANY, STREAM_EXISTS

    if expected is ANY:
        return 0, 0
    if expected is STREAM_EXISTS:
        return 2, 0
    return 1, expected if isinstance(expected, int) else 0

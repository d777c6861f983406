"""SQL of the PostgreSQL single-append fast path of :class:`~.store.EventStore`."""

from __future__ import annotations

# PostgreSQL + psycopg fast path (docs/event-store.md, "Performance"): the whole append
# is ONE network round trip, a pipeline of three statements that the server runs in
# order, each with its own READ COMMITTED snapshot:
#   1. _PG_ALLOCATE: the head-row UPDATE (the same allocation and lock as _ALLOCATE);
#   2. _PG_TIP: the stream tip, read after the lock was granted (for the error message);
#   3. _PG_INSERT: reads the tip again (same lock, so the same answer), checks the expected
#      version, computes versions, positions and the SHA-256 chain in SQL over the
#      canonical encoding (the client sends each event's position-independent tail,
#      hashing.canonical_tail) and inserts the events and their outbox rows.
# The head-row lock is thus held for the server-side work and the commit only, never
# across a client round trip. Arrays go in binary format (%b): no client-side quoting.
_PG_ALLOCATE = (
    "UPDATE eventlog_head SET last_position = last_position + %(count)s::bigint WHERE id = 1 "
    "RETURNING last_position"
)
_PG_TIP = (
    "SELECT stream_version, hash FROM eventlog_events WHERE stream_id = %(stream_id)s::text "
    "ORDER BY stream_version DESC LIMIT 1"
)


def _pg_hash(prev: str, version: str, position: str, tail: str) -> str:
    """SQL for hashing.compute_hash of one event (``canonical_bytes``, field by field)."""

    def field(text: str) -> str:
        return f"int8send(octet_length({text})::bigint) || convert_to({text}, 'UTF8')"

    return (
        f"encode(sha256(%(tag)b::bytea || {field(prev)} || %(stream_field)b::bytea || "
        f"{field(f'({version})::text')} || {field(f'({position})::text')} || {tail}), 'hex')"
    )


_PG_INSERT = (
    "WITH RECURSIVE "
    "tip AS (SELECT coalesce(t.stream_version, 0) AS v, coalesce(t.hash, '') AS h "
    " FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT stream_version, hash"
    " FROM eventlog_events WHERE stream_id = %(stream_id)s::text"
    " ORDER BY stream_version DESC LIMIT 1) AS t ON true), "
    "head AS (SELECT last_position - %(count)s::bigint AS base FROM eventlog_head WHERE id = 1), "
    "new AS (SELECT * FROM unnest(%(eid)b::text[], %(et)b::text[], %(oa)b::timestamptz[],"
    " %(caus)b::text[], %(tu)b::text[], %(pl)b::bytea[], %(tail)b::bytea[])"
    " WITH ORDINALITY AS n(eid, et, oa, caus, tu, pl, tail, ord)), "
    "chain AS ("
    " SELECT n.ord, tip.v + 1 AS sv, head.base + 1 AS gp, tip.h AS prev, "
    + _pg_hash("tip.h", "tip.v + 1", "head.base + 1", "n.tail")
    + " AS hash FROM tip, head, new AS n WHERE n.ord = 1 AND CASE %(mode)s::int"
    " WHEN 0 THEN true WHEN 1 THEN tip.v = %(expected)s::bigint ELSE tip.v > 0 END"
    " UNION ALL"
    " SELECT n.ord, c.sv + 1, c.gp + 1, c.hash, "
    + _pg_hash("c.hash", "c.sv + 1", "c.gp + 1", "n.tail")
    + " FROM chain AS c JOIN new AS n ON n.ord = c.ord + 1), "
    "ev AS (INSERT INTO eventlog_events (global_position, stream_id, stream_version,"
    " event_id, event_type, occurred_at, recorded_at, correlation_id, causation_id,"
    " producer, payload_type_url, payload, prev_hash, hash)"
    " SELECT c.gp, %(stream_id)s::text, c.sv, n.eid, n.et, n.oa, %(recorded_at)s::timestamptz,"
    " %(correlation_id)s::text, n.caus, %(producer)s::text, n.tu, n.pl, c.prev, c.hash"
    " FROM chain AS c JOIN new AS n ON n.ord = c.ord"
    " RETURNING global_position, stream_version, prev_hash, hash), "
    "ob AS (INSERT INTO eventlog_outbox (global_position, topic, created_at)"
    " SELECT global_position, %(topic)s::text, %(recorded_at)s::timestamptz FROM ev"
    " WHERE %(topic)s::text <> '') "
    "SELECT global_position, stream_version, prev_hash, hash FROM ev ORDER BY global_position"
)
#: ``mode`` of _PG_INSERT's expected-version check.
_MODE_ANY, _MODE_EXACT, _MODE_EXISTS = 0, 1, 2

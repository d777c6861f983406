"""Per-message encoding costs, and the alternatives measured before choosing (issue 26
item 8): ``python -m bench encoding``.

Rows (microseconds per message; the peer is the alternative measured in the same run):

* **protobuf, the table's view and an event:** ``SerializeToString`` and ``ParseFromString``
  with the implementation in use (upb, the C one, since protobuf 4) against the pure-Python
  implementation, run in a child process with ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``.
  The messages are filled generically: every field set, three elements per repeated field,
  nested messages to depth 4 (about the size of a 3-seat view mid-hand).
* **the access log line:** structlog's ``JSONRenderer`` with the standard library's ``json``
  (in use) against ``orjson`` and ``msgspec`` when they are importable (they are not
  dependencies: ``pip install orjson msgspec`` to see those rows).
* **an event's chain hash:** ``electric_eventlog.hashing.compute_hash`` of a stored event.
* **one SQL statement** (PostgreSQL from ``DATABASE_URL``, else the local default; skipped
  when it does not answer): an INSERT of one row into a temporary table through
  SQLAlchemy Core (as the services write their rows) against the same INSERT through a raw
  psycopg cursor, both inside one transaction on the same server: the Python a statement
  costs on top of its round trip.

Settings: ``BENCH_ENCODING_ROUNDS`` (default 20000).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench import Row

AREA = "encoding"
DEFAULT_PG = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"
ROUNDS = int(os.environ.get("BENCH_ENCODING_ROUNDS", "20000"))


def _fill(message: Any, depth: int = 0) -> Any:
    """Set every field of ``message`` (three elements per repeated field, to depth 4)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    for field in message.DESCRIPTOR.fields:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            continue
        repeated = field.is_repeated
        count = 3 if repeated else 1
        for i in range(count):
            if field.type == F.TYPE_MESSAGE:
                if depth >= 4:
                    break
                target = getattr(message, field.name)
                child = target.add() if repeated else target
                _fill(child, depth + 1)
                continue
            value: Any
            if field.type == F.TYPE_STRING:
                value = f"{field.name}-{i}-0123456789abcdef"
            elif field.type == F.TYPE_BYTES:
                value = bytes(32)
            elif field.type == F.TYPE_BOOL:
                value = True
            elif field.type == F.TYPE_ENUM:
                value = field.enum_type.values[-1].number
            elif field.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
                value = 1.5
            else:
                value = 1000 + i
            if repeated:
                getattr(message, field.name).append(value)
            else:
                setattr(message, field.name, value)
    return message


def _per_call_us(fn: Callable[[], object], rounds: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - t0) / rounds * 1e6


def protobuf_costs(rounds: int) -> dict[str, float]:
    """µs per encode/decode of the view and of an event, with this process's protobuf."""
    from electric.table.v1 import events_pb2, table_pb2

    view = _fill(table_pb2.TableView())
    event = _fill(events_pb2.ActionTaken())
    out: dict[str, float] = {}
    for name, msg in (("TableView", view), ("ActionTaken", event)):
        data = msg.SerializeToString()
        out[f"{name} encode"] = _per_call_us(msg.SerializeToString, rounds)
        fresh = type(msg)()
        out[f"{name} decode"] = _per_call_us(lambda f=fresh, d=data: f.ParseFromString(d), rounds)
        out[f"{name} bytes"] = float(len(data))
    return out


def _pure_python_costs(rounds: int) -> dict[str, float]:
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    code = (
        "import json, sys; from bench.bench_encoding import protobuf_costs; "
        f"print(json.dumps(protobuf_costs({rounds})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _log_event() -> dict[str, Any]:
    """The access line of one Act (``rpc.completed``), as the processors hand it over."""
    return {
        "event": "rpc.completed",
        "level": "info",
        "logger": "electric.table",
        "timestamp": "2026-12-07T08:00:00.123456Z",
        "service": "table",
        "rpc": "/electric.table.v1.TableService/Act",
        "code": "OK",
        "duration_ms": 3.21,
        "peer": "ipv4:127.0.0.1:51234",
        "request_id": "6f1c0c1e-8d2b-4c4e-9a57-3f0f4b1d2a77",
        "correlation_id": "b0e0a6c2-5f3a-4d1e-8a0c-1f2e3d4c5b6a",
        "causation_id": "9d8c7b6a-5f4e-4d3c-8b2a-1a0f9e8d7c6b",
        "player_id": "bot-0042",
        "table_id": "828284b9-0c1d-4e2f-8a3b-4c5d6e7f8091",
    }


def log_costs(rounds: int) -> dict[str, float]:
    """µs per rendered access line: structlog's JSONRenderer with each serializer."""
    import structlog

    event = _log_event()
    out = {
        "json": _per_call_us(
            lambda: structlog.processors.JSONRenderer()(None, "", dict(event)), rounds
        )
    }
    if importlib.util.find_spec("orjson") is not None:
        import orjson

        render = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        out["orjson"] = _per_call_us(lambda: render(None, "", dict(event)), rounds)
    if importlib.util.find_spec("msgspec") is not None:
        import msgspec

        encoder = msgspec.json.Encoder()
        render = structlog.processors.JSONRenderer(serializer=lambda o, **_: encoder.encode(o))
        out["msgspec"] = _per_call_us(lambda: render(None, "", dict(event)), rounds)
    return out


def hash_cost(rounds: int) -> float:
    """µs per chain hash of a stored event (the envelope of a filled ActionTaken)."""
    from electric.eventlog.v1.envelope_pb2 import Envelope
    from electric.table.v1 import events_pb2
    from electric_eventlog.hashing import compute_hash

    envelope = Envelope(stream_id="table-828284b9", stream_version=90, event_type="x")
    envelope.payload.Pack(_fill(events_pb2.ActionTaken()))
    return _per_call_us(lambda: compute_hash(envelope), rounds)


def statement_costs(rounds: int) -> tuple[float, float] | None:
    """µs per one-row INSERT: (SQLAlchemy Core, raw psycopg); None without PostgreSQL."""
    import psycopg
    from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert
    from sqlalchemy.engine import make_url

    url = make_url(os.environ.get("DATABASE_URL") or DEFAULT_PG)
    try:
        engine = create_engine(url.set(drivername="postgresql+psycopg"))
        with engine.connect() as probe:
            probe.exec_driver_sql("SELECT 1")
    except Exception:
        return None
    rows = Table(
        "bench_rows",
        MetaData(),
        Column("id", Integer),
        Column("name", String),
        prefixes=["TEMPORARY"],
    )
    try:
        with engine.begin() as conn:
            rows.create(conn)
            n = iter(range(10**9))
            core = _per_call_us(
                lambda: conn.execute(insert(rows).values(id=next(n), name="table-828284b9")),
                rounds,
            )
            cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            sql = "INSERT INTO bench_rows (id, name) VALUES (%s, %s)"
            raw = _per_call_us(lambda: cur.execute(sql, (next(n), "table-828284b9")), rounds)
    finally:
        engine.dispose()
    assert isinstance(cur, psycopg.Cursor)
    return core, raw


def run() -> list[Row]:
    from google.protobuf.internal import api_implementation

    impl = api_implementation.Type()
    ours = protobuf_costs(ROUNDS)
    pure = _pure_python_costs(max(1, ROUNDS // 10))
    rows: list[Row] = []
    for key in ("TableView encode", "TableView decode", "ActionTaken encode", "ActionTaken decode"):
        size = ours[f"{key.split()[0]} bytes"]
        rows.append(
            Row(
                AREA,
                f"protobuf {key} ({impl})",
                ours[key],
                "us",
                "pure-Python protobuf",
                pure[key],
                f"{size:.0f} bytes, every field set",
            )
        )
    logs = log_costs(ROUNDS)
    for name in ("orjson", "msgspec"):
        peer = logs.get(name)
        rows.append(
            Row(
                AREA,
                "access log line, JSONRenderer (stdlib json)",
                logs["json"],
                "us",
                f"{name} serializer" if peer is not None else f"{name} (not installed)",
                peer,
                "structlog 26; one rpc.completed line",
            )
        )
    rows.append(
        Row(
            AREA,
            "event chain hash (compute_hash)",
            hash_cost(ROUNDS),
            "us",
            note="SHA-256 over the canonical bytes of a filled ActionTaken envelope",
        )
    )
    statements = statement_costs(max(1, ROUNDS // 10))
    if statements is not None:
        rows.append(
            Row(
                AREA,
                "one-row INSERT, SQLAlchemy Core",
                statements[0],
                "us",
                "raw psycopg cursor",
                statements[1],
                "same server, one transaction; the round trip is in both",
            )
        )
    return rows

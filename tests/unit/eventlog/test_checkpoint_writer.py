"""Signed checkpoints (issue 14, point 6): the Merkle root as RFC 6962 defines it, the signed
bytes, the JSON record, and the writer (heads from the store, deltas, parts, sequences, no
checkpoint when the store did not move, the file copy)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from electric_eventlog import ANY, EventStore, InProcessBus, create_engine, migrate
from electric_eventlog.checkpoint import (
    CHECKPOINT_TOPIC,
    Checkpoint,
    CheckpointFormatError,
    Leaf,
    from_json,
    merkle_root,
    to_json,
)
from electric_eventlog.checkpoint_writer import CheckpointWriter
from electric_eventlog.hashing import field
from electric_eventlog.testing import event


def _leaf_hash(leaf: Leaf) -> bytes:
    data = field(leaf.stream_id.encode()) + field(str(leaf.version).encode())
    return hashlib.sha256(b"\x00" + data + field(leaf.hash.encode())).digest()


def _node(a: bytes, b: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + a + b).digest()


def test_merkle_root_follows_rfc6962_split() -> None:
    leaves = [Leaf(f"s{i}", i + 1, f"{i:064x}") for i in range(5)]
    h = [_leaf_hash(x) for x in leaves]
    # n = 5: k = 4 -> MTH(D[0:4]) and MTH(D[4:5]) (RFC 6962 section 2.1).
    expected = _node(_node(_node(h[0], h[1]), _node(h[2], h[3])), h[4])
    assert merkle_root(reversed(leaves)) == expected.hex()  # order-independent: sorted inside
    assert merkle_root([]) == hashlib.sha256(b"").hexdigest()
    assert merkle_root(leaves[:1]) == h[0].hex()
    changed = [*leaves[:4], Leaf("s4", 5, "f" * 64)]
    assert merkle_root(changed) != merkle_root(leaves)


def _record(key: Ed25519PrivateKey) -> Checkpoint:
    return Checkpoint(
        producer="table",
        instance_id="i1",
        sequence=3,
        global_position=42,
        since_position=40,
        stream_count=7,
        merkle_root="ab" * 32,
        created_at_micros=1_700_000_000_000_000,
        kid="checkpoint-table-1",
        leaves=(Leaf("table-t1", 9, "cd" * 32),),
    ).signed(key)


def test_signature_covers_every_field_and_survives_json() -> None:
    key = Ed25519PrivateKey.generate()
    record = _record(key)
    parsed = from_json(to_json(record))
    assert parsed == record and parsed.signature == record.signature
    assert parsed.signature_valid(key.public_key())
    assert not parsed.signature_valid(Ed25519PrivateKey.generate().public_key())
    data = json.loads(to_json(record))
    for name, value in (
        ("global_position", 43),
        ("merkle_root", "00" * 32),
        ("producer", "wallet"),
        ("kid", "other"),
        ("leaves", [["table-t1", 9, "ce" * 32]]),
    ):
        forged = from_json(json.dumps({**data, name: value}))
        assert not forged.signature_valid(key.public_key()), name
    with pytest.raises(CheckpointFormatError):
        from_json(json.dumps({**data, "format": "other"}))
    with pytest.raises(CheckpointFormatError):
        from_json(b"not json")


def _store(tmp_path: Path) -> tuple[EventStore, str]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = create_engine(url)
    migrate(engine)
    return EventStore(engine, producer="table"), url


def test_writer_signs_heads_deltas_and_parts(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    key = Ed25519PrivateKey.generate()
    bus = InProcessBus()
    file = tmp_path / "cp" / "table.jsonl"
    writer = CheckpointWriter(
        store.engine, bus, producer="table", kid="k1", private_key=key, file=file, max_leaves=2
    )
    envs = []
    for i in range(3):
        envs += store.append_in_new_tx(f"s{i}", ANY, [event(f"{i}-a"), event(f"{i}-b")])

    async def scenario() -> None:
        first = await writer.write_once()
        assert [r.part for r in first] == [1, 2] and {r.parts for r in first} == {2}
        assert all(r.global_position == 6 and r.stream_count == 3 for r in first)
        assert [leaf.stream_id for r in first for leaf in r.leaves] == ["s0", "s1", "s2"]
        heads = [Leaf(e.stream_id, e.stream_version, e.hash) for e in envs if e.stream_version == 2]
        assert first[0].merkle_root == merkle_root(heads)
        assert all(r.signature_valid(key.public_key()) for r in first)
        assert await writer.write_once() == []  # nothing moved: nothing written
        more = store.append_in_new_tx("s1", ANY, [event("1-c")])
        second = await writer.write_once()
        assert len(second) == 1 and second[0].sequence == 2 and second[0].since_position == 6
        assert second[0].leaves == (Leaf("s1", 3, more[0].hash),)
        on_bus = [m async for m in bus.read_topic(CHECKPOINT_TOPIC)]
        assert [from_json(m.value) for m in on_bus] == [*first, *second]
        assert {m.key for m in on_bus} == {b"table"}

    asyncio.run(scenario())
    lines = file.read_bytes().splitlines()
    assert [from_json(line) for line in lines] == writer.written
    store.engine.dispose()


def test_writer_runs_periodically_and_writes_a_final_checkpoint(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    key = Ed25519PrivateKey.generate()
    bus = InProcessBus()
    writer = CheckpointWriter(
        store.engine,
        bus,
        producer="table",
        kid="k1",
        private_key=key,
        interval=0.05,
        keep_written=100,  # every record, to check the sequence from 1
    )

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(writer.run(stop))
        for i in range(3):
            await asyncio.to_thread(store.append_in_new_tx, f"s{i}", ANY, [event(str(i))])
            # Wait for the periodic checkpoint of this position (not a fixed sleep: a
            # loaded machine may run the writer late).
            with store.engine.connect() as conn:
                head = store.last_position(conn)
            for _ in range(1000):
                if writer.last_position == head:
                    break
                await asyncio.sleep(0.01)
            assert writer.last_position == head
        stop.set()
        await task
        store.append_in_new_tx("late", ANY, [event("late")])
        await writer.close()

    asyncio.run(scenario())
    positions = [r.global_position for r in writer.written]
    assert positions == sorted(set(positions)) and positions[-1] == 4 and len(positions) >= 3
    assert [r.sequence for r in writer.written] == list(range(1, len(positions) + 1))
    store.engine.dispose()

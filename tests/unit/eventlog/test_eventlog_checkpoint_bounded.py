"""The checkpoint writer's memory does not grow with the number of streams (issue 18: the
wallet, a stream per transfer, grew ~420 bytes per stream because the writer kept every
chain head in memory; docs/chaos.md, "The wallet's memory under sustained load").

The root is now streamed from the store through ``TreeHasher``: it must equal the RFC 6962
root of every head (``merkle_root``), on SQLite and PostgreSQL (``COLLATE "C"`` order).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import types
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from electric_eventlog import ANY, EventStore, InProcessBus, migrate
from electric_eventlog.checkpoint import Leaf, TreeHasher, merkle_root
from electric_eventlog.checkpoint_writer import CheckpointWriter
from electric_eventlog.testing import event
from sqlalchemy import Engine


def _leaves(n: int) -> list[Leaf]:
    return [
        Leaf(f"s-{i:04d}", i % 3 + 1, hashlib.sha256(str(i).encode()).hexdigest()) for i in range(n)
    ]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 257])
def test_tree_hasher_equals_merkle_root(n: int) -> None:
    leaves = _leaves(n)
    tree = TreeHasher()
    for leaf in leaves:
        tree.add(leaf)
    assert tree.root() == merkle_root(reversed(leaves)) and tree.count == n


def test_tree_hasher_refuses_leaves_out_of_order() -> None:
    tree = TreeHasher()
    tree.add(Leaf("b", 1, "0" * 64))
    with pytest.raises(ValueError, match="out of order"):
        tree.add(Leaf("a", 1, "0" * 64))
    with pytest.raises(ValueError, match="out of order"):
        tree.add(Leaf("b", 2, "0" * 64))  # one head per stream


_CODE = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
)


def _reachable_leaves(writer: CheckpointWriter) -> int:
    """Leaf objects the writer keeps alive (its own state; not the engine or the bus)."""
    roots: list[Any] = [v for k, v in vars(writer).items() if k not in ("engine", "bus")]
    seen: set[int] = set()
    count = 0
    while roots:
        obj = roots.pop()
        # Not into code or modules: a function's globals reach every module, and through
        # them whatever other tests of the same process left alive.
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, type, *_CODE)):
            continue
        seen.add(id(obj))
        if isinstance(obj, Leaf):
            count += 1
            continue
        roots.extend(gc.get_referents(obj))
    return count


def test_writer_keeps_no_head_per_stream(backend_engine: Engine) -> None:
    """10 checkpoints over 1,000 new streams (a stream per transfer, like the wallet): the
    writer holds the leaves of at most ``keep_written`` checkpoints, not one per stream,
    and every root is the root of all heads. The old writer held all 1,000."""
    migrate(backend_engine)
    store = EventStore(backend_engine, producer="wallet")
    key = Ed25519PrivateKey.generate()
    writer = CheckpointWriter(
        backend_engine, InProcessBus(), producer="wallet", kid="k", private_key=key, keep_written=2
    )
    heads: dict[str, Leaf] = {}

    async def scenario() -> None:
        for r in range(10):
            for i in range(100):
                stream = f"wallet-transfer-{r:02d}-{i:03d}"
                (env,) = store.append_in_new_tx(stream, ANY, [event(stream)])
                heads[stream] = Leaf(stream, env.stream_version, env.hash)
            # one older stream moves on (a post of a pending transfer): version 2
            if r:
                moved = f"wallet-transfer-{r - 1:02d}-000"
                (env,) = store.append_in_new_tx(moved, ANY, [event(moved + "-post")])
                heads[moved] = Leaf(moved, env.stream_version, env.hash)
            (record,) = await writer.write_once()
            assert record.stream_count == len(heads)
            assert record.merkle_root == merkle_root(heads.values())
            assert len(record.leaves) == (100 if r == 0 else 101)

    asyncio.run(scenario())
    assert _reachable_leaves(writer) <= 2 * 101
    assert len(writer.written) == 2

"""Signed checkpoints: a store's chain heads at a global position, anchored outside the store.

The per-stream hash chains (:mod:`.hashing`) make a changed event visible, but someone with
write access to the database can rewrite an event *and* recompute every hash after it. A
checkpoint published outside the database closes that hole: at global position ``N`` it
states the head (last version and its stored hash) of every stream of the store, summarised
as a Merkle root, signed with the producing service's Ed25519 key. A later rewrite of any
event at a position ``<= N`` changes the head hash of its stream, so the root recomputed from
the store no longer matches the signed one.

Definitions (version 1; docs/audit.md, "Trust model"):

* **Heads at N**: for every stream with an event at a global position ``<= N``, the leaf
  ``(stream_id, version, hash)`` of its last such event (``hash`` as stored: lowercase hex).
* **Leaf data**: ``field(stream_id) || field(version) || field(hash)`` with ``field`` the
  8-byte big-endian length prefix of the chain encoding (text UTF-8, integers base-10 ASCII).
* **Merkle root** (RFC 6962 §2.1, the Certificate Transparency tree hash) over the leaves
  sorted by the UTF-8 bytes of ``stream_id``: ``MTH({}) = SHA-256("")``;
  ``MTH({d}) = SHA-256(0x00 || d)``; ``MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) ||
  MTH(D[k:n]))`` with ``k`` the largest power of two smaller than ``n``. Lowercase hex.
* **Delta leaves**: a checkpoint also lists the heads of the streams that changed in
  ``(since_position, N]`` (``since_position`` = the writer's previous checkpoint, 0 for its
  first), so an auditor can say *which* stream and versions were rewritten, not only that
  the root differs. Many leaves are split over several parts (``part``/``parts``), each a
  complete signed record carrying the same root.
* **Signed bytes**: ``"electric.eventlog.v1/checkpoint-v1"`` followed by ``field`` of
  producer, instance_id, sequence, part, parts, global_position, since_position,
  stream_count, merkle_root, created_at (microseconds since the epoch), kid and
  ``leaves_digest`` = hex SHA-256 of the concatenated leaf data of the record's leaves in
  their order. The signature is Ed25519 over these bytes, base64url without padding.

Records travel as JSON (:func:`to_json`) on the checkpoints topic
``electric.checkpoints`` (key = producer) and, in embedded mode, as JSON lines in a file.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .bus import OutgoingMessage
from .hashing import field as encode_field

#: The topic every service publishes its checkpoints to (key = producer).
CHECKPOINT_TOPIC = "electric.checkpoints"
#: The role a checkpoint key's JWK lists in ``electric_roles`` (its ``electric_subjects``:
#: the one producer whose checkpoints it may sign).
CHECKPOINT_ROLE = "checkpoint"
FORMAT = "electric.checkpoint.v1"
SIGN_TAG = b"electric.eventlog.v1/checkpoint-v1"
CONTENT_TYPE = b"application/json; format=electric.checkpoint.v1"
#: Most leaves one record carries (a record stays far below Kafka's 1 MB message limit).
MAX_LEAVES_PER_PART = 2000


class CheckpointFormatError(ValueError):
    """A checkpoint record cannot be parsed."""


@dataclass(frozen=True, order=True)
class Leaf:
    """The head of one stream: its last version at the checkpoint and that event's hash."""

    stream_id: str
    version: int
    hash: str

    def data(self) -> bytes:
        """The leaf data hashed into the tree (module doc)."""
        return (
            encode_field(self.stream_id.encode())
            + encode_field(str(self.version).encode())
            + encode_field(self.hash.encode())
        )


def _sort_key(leaf: Leaf) -> bytes:
    return leaf.stream_id.encode()


def _tree_hash(hashes: Sequence[bytes]) -> bytes:
    n = len(hashes)
    if n == 1:
        return hashes[0]
    k = 1 << ((n - 1).bit_length() - 1)  # largest power of two < n
    return hashlib.sha256(b"\x01" + _tree_hash(hashes[:k]) + _tree_hash(hashes[k:])).digest()


def merkle_root(leaves: Iterable[Leaf]) -> str:
    """RFC 6962 Merkle tree hash of ``leaves`` (sorted here by stream id), lowercase hex."""
    ordered = sorted(leaves, key=_sort_key)
    if not ordered:
        return hashlib.sha256(b"").hexdigest()
    level = [hashlib.sha256(b"\x00" + leaf.data()).digest() for leaf in ordered]
    return _tree_hash(level).hex()


class TreeHasher:
    """:func:`merkle_root` of leaves fed one at a time, already sorted by stream id, in
    O(log n) memory: the RFC 6962 tree of n leaves is the perfect subtrees of n's binary
    digits, largest first, joined from the right. The checkpoint writer streams a store's
    heads through it instead of keeping every head in memory (docs/chaos.md, "The wallet's
    memory under sustained load")."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, bytes]] = []  # (leaves, subtree hash), sizes falling
        self._last: bytes | None = None
        self.count = 0

    def add(self, leaf: Leaf) -> None:
        key = _sort_key(leaf)
        if self._last is not None and key <= self._last:
            raise ValueError(f"leaves out of order at {leaf.stream_id!r}")
        self._last = key
        size, node = 1, hashlib.sha256(b"\x00" + leaf.data()).digest()
        while self._stack and self._stack[-1][0] == size:
            _, left = self._stack.pop()
            size, node = size * 2, hashlib.sha256(b"\x01" + left + node).digest()
        self._stack.append((size, node))
        self.count += 1

    def root(self) -> str:
        if not self._stack:
            return hashlib.sha256(b"").hexdigest()
        node = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            node = hashlib.sha256(b"\x01" + left + node).digest()
        return node.hex()


class Heads:
    """The chain heads of a store, maintained as events are seen in global-position order."""

    def __init__(self) -> None:
        self._heads: dict[str, Leaf] = {}
        self._changed_at: dict[str, int] = {}
        self.position = 0

    def apply(self, stream_id: str, version: int, hash_: str, position: int) -> None:
        """Record an event (events must come in increasing global position)."""
        self._heads[stream_id] = Leaf(stream_id, version, hash_)
        self._changed_at[stream_id] = position
        self.position = max(self.position, position)

    def __len__(self) -> int:
        return len(self._heads)

    def get(self, stream_id: str) -> Leaf | None:
        """The head of ``stream_id``, if it has one."""
        return self._heads.get(stream_id)

    def leaves(self) -> list[Leaf]:
        """Every head, sorted by stream id."""
        return sorted(self._heads.values(), key=_sort_key)

    def changed_since(self, position: int) -> list[Leaf]:
        """Heads of the streams with an event after ``position``, sorted by stream id."""
        return sorted(
            (self._heads[s] for s, at in self._changed_at.items() if at > position),
            key=_sort_key,
        )

    def root(self) -> str:
        """The Merkle root of every head."""
        return merkle_root(self._heads.values())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Checkpoint:
    """One signed checkpoint record (one part of a checkpoint; module doc)."""

    producer: str
    instance_id: str
    sequence: int
    global_position: int
    since_position: int
    stream_count: int
    merkle_root: str
    created_at_micros: int
    kid: str
    leaves: tuple[Leaf, ...] = ()
    part: int = 1
    parts: int = 1
    signature: str = field(default="", compare=False)

    def leaves_digest(self) -> str:
        """Hex SHA-256 over the leaf data of this record's leaves, in order."""
        digest = hashlib.sha256()
        for leaf in self.leaves:
            digest.update(leaf.data())
        return digest.hexdigest()

    def signed_bytes(self) -> bytes:
        """The bytes the signature covers (module doc)."""
        parts = (
            self.producer,
            self.instance_id,
            str(self.sequence),
            str(self.part),
            str(self.parts),
            str(self.global_position),
            str(self.since_position),
            str(self.stream_count),
            self.merkle_root,
            str(self.created_at_micros),
            self.kid,
            self.leaves_digest(),
        )
        return SIGN_TAG + b"".join(encode_field(p.encode()) for p in parts)

    def signed(self, private_key: Ed25519PrivateKey) -> Checkpoint:
        """This record with its Ed25519 signature."""
        return replace(self, signature=_b64(private_key.sign(self.signed_bytes())))

    def signature_valid(self, public_key: Ed25519PublicKey) -> bool:
        """True when ``signature`` is a valid signature of this record by ``public_key``."""
        try:
            public_key.verify(_unb64(self.signature), self.signed_bytes())
        except (InvalidSignature, ValueError):
            return False
        return True

    @property
    def label(self) -> str:
        """``checkpoint <producer> #<sequence> part p/n at position N`` (for messages)."""
        return (
            f"checkpoint {self.producer} #{self.sequence} part {self.part}/{self.parts} "
            f"at position {self.global_position}"
        )


def build_checkpoints(
    heads: Heads,
    *,
    producer: str,
    instance_id: str,
    sequence: int,
    since_position: int,
    created_at_micros: int,
    kid: str,
    private_key: Ed25519PrivateKey,
    max_leaves: int = MAX_LEAVES_PER_PART,
) -> list[Checkpoint]:
    """The signed record(s) of one checkpoint of ``heads`` at ``heads.position``."""
    return sign_checkpoint(
        heads.changed_since(since_position),
        root=heads.root(),
        stream_count=len(heads),
        global_position=heads.position,
        producer=producer,
        instance_id=instance_id,
        sequence=sequence,
        since_position=since_position,
        created_at_micros=created_at_micros,
        kid=kid,
        private_key=private_key,
        max_leaves=max_leaves,
    )


def sign_checkpoint(
    changed: Sequence[Leaf],
    *,
    root: str,
    stream_count: int,
    global_position: int,
    producer: str,
    instance_id: str,
    sequence: int,
    since_position: int,
    created_at_micros: int,
    kid: str,
    private_key: Ed25519PrivateKey,
    max_leaves: int = MAX_LEAVES_PER_PART,
) -> list[Checkpoint]:
    """The signed record(s) of one checkpoint: the heads ``changed`` since
    ``since_position`` (sorted by stream id), split in parts of ``max_leaves``, each with
    the Merkle ``root`` of all ``stream_count`` heads at ``global_position``."""
    chunks = [changed[i : i + max_leaves] for i in range(0, len(changed), max_leaves)] or [[]]
    return [
        Checkpoint(
            producer=producer,
            instance_id=instance_id,
            sequence=sequence,
            global_position=global_position,
            since_position=since_position,
            stream_count=stream_count,
            merkle_root=root,
            created_at_micros=created_at_micros,
            kid=kid,
            leaves=tuple(chunk),
            part=index,
            parts=len(chunks),
        ).signed(private_key)
        for index, chunk in enumerate(chunks, start=1)
    ]


def to_dict(checkpoint: Checkpoint) -> dict[str, Any]:
    """The JSON object of a record."""
    return {
        "format": FORMAT,
        "producer": checkpoint.producer,
        "instance_id": checkpoint.instance_id,
        "sequence": checkpoint.sequence,
        "part": checkpoint.part,
        "parts": checkpoint.parts,
        "global_position": checkpoint.global_position,
        "since_position": checkpoint.since_position,
        "stream_count": checkpoint.stream_count,
        "merkle_root": checkpoint.merkle_root,
        "created_at_micros": checkpoint.created_at_micros,
        "kid": checkpoint.kid,
        "leaves": [[leaf.stream_id, leaf.version, leaf.hash] for leaf in checkpoint.leaves],
        "signature": checkpoint.signature,
    }


def to_json(checkpoint: Checkpoint) -> bytes:
    """The record as compact JSON (one line)."""
    return json.dumps(to_dict(checkpoint), separators=(",", ":"), sort_keys=True).encode()


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CheckpointFormatError(f"'{name}' must be a non-negative integer")
    return value


def _str(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise CheckpointFormatError(f"'{name}' must be a string")
    return value


def _leaf(item: Any) -> Leaf:
    if (
        not isinstance(item, list)
        or len(item) != 3
        or not isinstance(item[0], str)
        or not isinstance(item[1], int)
        or not isinstance(item[2], str)
    ):
        raise CheckpointFormatError("every leaf must be [stream_id, version, hash]")
    return Leaf(item[0], item[1], item[2])


def from_dict(data: Mapping[str, Any]) -> Checkpoint:
    """Parse a record's JSON object (raises :class:`CheckpointFormatError`)."""
    if data.get("format") != FORMAT:
        raise CheckpointFormatError(f"format is not {FORMAT}")
    leaves = data.get("leaves")
    if not isinstance(leaves, list):
        raise CheckpointFormatError("'leaves' must be a list")
    return Checkpoint(
        producer=_str(data, "producer"),
        instance_id=_str(data, "instance_id"),
        sequence=_int(data, "sequence"),
        global_position=_int(data, "global_position"),
        since_position=_int(data, "since_position"),
        stream_count=_int(data, "stream_count"),
        merkle_root=_str(data, "merkle_root"),
        created_at_micros=_int(data, "created_at_micros"),
        kid=_str(data, "kid"),
        leaves=tuple(_leaf(item) for item in leaves),
        part=_int(data, "part"),
        parts=_int(data, "parts"),
        signature=_str(data, "signature"),
    )


def from_json(raw: bytes | str) -> Checkpoint:
    """Parse one JSON record (raises :class:`CheckpointFormatError`)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise CheckpointFormatError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CheckpointFormatError("a checkpoint must be a JSON object")
    return from_dict(data)


def checkpoint_message(checkpoint: Checkpoint, topic: str = CHECKPOINT_TOPIC) -> OutgoingMessage:
    """The bus message of a record: key = producer (one producer's records stay in order)."""
    return OutgoingMessage(
        topic=topic,
        key=checkpoint.producer.encode(),
        value=to_json(checkpoint),
        headers=(
            ("content-type", CONTENT_TYPE),
            ("producer", checkpoint.producer.encode()),
            ("global-position", str(checkpoint.global_position).encode()),
        ),
    )

"""``electric-audit verify``: the stores and topics against the services' signed checkpoints.

Checkpoints (:mod:`electric_eventlog.checkpoint`) are read from the ``electric.checkpoints``
topic (with ``--kafka``) and/or from JSON-lines files (``--checkpoints PATH``: a file or a
directory of ``*.jsonl``, as embedded mode writes under ``<var_dir>/checkpoints``). Public
keys come from ``--checkpoint-keys PATH`` (a JWKS file, or a directory holding
``checkpoint-<service>.jwks.json`` files). Three checks:

* ``checkpoints`` — every record parses, names a key of the given set that may sign
  checkpoints of its producer (``electric_roles`` ``checkpoint``, ``electric_subjects``), and
  its Ed25519 signature verifies; per writer instance the sequence numbers and parts have
  no gap (a deleted checkpoint shows).
* ``anchor-store`` — for each validly signed checkpoint of a producer whose store is read:
  the store reaches the checkpoint's position ``N``; every head the checkpoint lists is the
  store's event with that stream and version, with that stored hash, and is still the head
  at ``N``; the Merkle root of the store's heads at ``N`` equals the signed root. A rewrite
  (even with every hash recomputed) is reported at the stream, with the first rewritten
  version bracketed by the signed heads of that stream that still match.
* ``anchor-topic`` — the same for the producer's event topic, when read.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from electric_eventlog.checkpoint import (
    CHECKPOINT_ROLE,
    CHECKPOINT_TOPIC,
    Checkpoint,
    CheckpointFormatError,
    Heads,
    from_json,
)
from electric_platform.keys import KeyMaterialError, KeySet, VerificationKey

from electric_audit.checks import CheckResult
from electric_audit.sources import Located, Source, SourceError


@dataclass(frozen=True)
class Anchor:
    """One checkpoint record and where it was read (``file:… line n`` / ``topic:… offset``)."""

    checkpoint: Checkpoint
    where: str

    def location(self) -> str:
        return f"{self.where} ({self.checkpoint.label})"


@dataclass
class Anchors:
    """Everything read about checkpoints: the records, unreadable ones, the public keys."""

    records: list[Anchor]
    unreadable: list[tuple[str, str]]
    keys: KeySet | None
    #: True when checkpoints were asked for (``--checkpoints`` given or found on Kafka).
    expected: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The checkpoint options of ``verify``."""
    group = parser.add_argument_group("signed checkpoints (docs/audit.md, trust model)")
    group.add_argument(
        "--checkpoints",
        action="append",
        default=[],
        metavar="PATH",
        help="checkpoint JSON lines: a file or a directory of *.jsonl (embedded mode: "
        "<var_dir>/checkpoints); with --kafka the electric.checkpoints topic is read too",
    )
    group.add_argument(
        "--checkpoint-keys",
        action="append",
        default=[],
        metavar="PATH",
        help="public keys: a JWKS file, or a directory of checkpoint-<service>.jwks.json",
    )


def _key_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("checkpoint-*.jwks.json"))
    return [path]


def load_keys(paths: Sequence[str]) -> KeySet | None:
    """The public keys in ``paths`` (None when none are given); raises :class:`SourceError`."""
    if not paths:
        return None
    found: dict[str, VerificationKey] = {}
    for text in paths:
        files = _key_files(Path(text))
        if not files:
            raise SourceError(f"{text}: no checkpoint-*.jwks.json in this directory")
        for file in files:
            try:
                keyset = KeySet.from_json(file.read_text(encoding="utf-8"))
            except (OSError, KeyMaterialError) as exc:
                raise SourceError(f"{file}: {exc}") from exc
            for kid, key in keyset.keys.items():
                if kid in found and found[kid].jwk() != key.jwk():
                    raise SourceError(f"{file}: kid {kid!r} names two different keys")
                found[kid] = key
    return KeySet(found)


def anchors_from_lines(
    name: str, lines: Iterable[bytes | str]
) -> tuple[list[Anchor], list[tuple[str, str]]]:
    """Records of a JSON-lines file (blank lines skipped) and the unreadable lines."""
    records: list[Anchor] = []
    bad: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"file:{name} line {number}"
        try:
            records.append(Anchor(from_json(line), where))
        except CheckpointFormatError as exc:
            bad.append((where, str(exc)))
    return records, bad


def anchors_from_messages(
    messages: Iterable[Any], topic: str = CHECKPOINT_TOPIC
) -> tuple[list[Anchor], list[tuple[str, str]]]:
    """Records of the checkpoints topic (``ReceivedMessage``-like messages)."""
    records: list[Anchor] = []
    bad: list[tuple[str, str]] = []
    for message in messages:
        where = f"topic:{topic} partition {message.partition} offset {message.offset}"
        try:
            records.append(Anchor(from_json(message.value), where))
        except CheckpointFormatError as exc:
            bad.append((where, str(exc)))
    return records, bad


def _checkpoint_files(text: str) -> list[Path]:
    path = Path(text)
    if path.is_dir():
        return sorted(path.glob("*.jsonl"))
    if not path.exists():
        raise SourceError(f"{text}: no such checkpoint file or directory")
    return [path]


async def _read_topic(bootstrap: str, namespace: str) -> list[Any]:
    from electric_eventlog.kafka import KafkaBus

    bus = KafkaBus(bootstrap, client_id="electric-audit", namespace=namespace)
    return [message async for message in bus.read_topic(CHECKPOINT_TOPIC)]


def load_anchors(args: argparse.Namespace, timeout: float = 120) -> Anchors:
    """The checkpoints and keys ``verify``'s arguments name (raises :class:`SourceError`)."""
    records: list[Anchor] = []
    bad: list[tuple[str, str]] = []
    for text in getattr(args, "checkpoints", []):
        for file in _checkpoint_files(text):
            try:
                lines = file.read_bytes().splitlines()
            except OSError as exc:
                raise SourceError(f"{file}: {exc.strerror}") from exc
            found, broken = anchors_from_lines(file.name, lines)
            records += found
            bad += broken
    if getattr(args, "kafka", None):
        try:
            messages = asyncio.run(
                asyncio.wait_for(_read_topic(args.kafka, args.namespace), timeout)
            )
        except Exception as exc:  # aiokafka raises many kinds: all are "cannot read"
            raise SourceError(f"kafka {args.kafka}: {exc.__class__.__name__}: {exc}") from exc
        found, broken = anchors_from_messages(messages)
        records += found
        bad += broken
    keys = load_keys(getattr(args, "checkpoint_keys", []))
    expected = bool(getattr(args, "checkpoints", [])) or bool(records or bad)
    return Anchors(records, bad, keys, expected)


def _order(anchor: Anchor) -> tuple[int, str, str, int, int]:
    c = anchor.checkpoint
    return (c.global_position, c.producer, c.instance_id, c.sequence, c.part)


def check_signatures(anchors: Anchors) -> tuple[CheckResult, list[Anchor]]:
    """The ``checkpoints`` check; returns it and the validly signed records, in order."""
    result = CheckResult("checkpoints")
    for where, reason in anchors.unreadable:
        result.checked += 1
        result.fail(where, f"unreadable checkpoint: {reason}")
    valid: list[Anchor] = []
    seen: dict[tuple[str, str], dict[int, set[int]]] = defaultdict(dict)
    parts: dict[tuple[str, str, int], int] = {}
    for anchor in sorted(anchors.records, key=_order):
        c = anchor.checkpoint
        result.checked += 1
        key = anchors.keys.keys.get(c.kid) if anchors.keys is not None else None
        if anchors.keys is None:
            result.fail(anchor.location(), "no public keys given (--checkpoint-keys)")
        elif key is None:
            result.fail(anchor.location(), f"key {c.kid!r} is not among the given public keys")
        elif not key.allows(CHECKPOINT_ROLE, c.producer):
            result.fail(
                anchor.location(), f"key {c.kid!r} may not sign checkpoints of {c.producer!r}"
            )
        elif not c.signature_valid(key.public):
            result.fail(
                anchor.location(),
                f"signature does not verify with key {c.kid!r} (forged or altered record)",
            )
        else:
            valid.append(anchor)
            seen[(c.producer, c.instance_id)].setdefault(c.sequence, set()).add(c.part)
            parts[(c.producer, c.instance_id, c.sequence)] = c.parts
    for (producer, instance), sequences in seen.items():
        for number in range(1, max(sequences) + 1):
            got = sequences.get(number)
            want = set(range(1, parts.get((producer, instance, number), 1) + 1))
            if got is None or not want <= got:
                missing = "" if got is None else f" parts {sorted(want - got)} of"
                result.fail(
                    f"checkpoints of {producer} instance {instance}",
                    f"{missing} sequence {number} missing (a deleted checkpoint?)".strip(),
                )
    return result, valid


@dataclass
class _View:
    """One producer's events in one source, in global-position order, indexed."""

    source: Source
    producer: str
    events: list[Located]
    by_version: dict[tuple[str, int], Located]

    @property
    def last_position(self) -> int:
        return self.events[-1].envelope.global_position if self.events else 0


def _views(sources: Sequence[Source], kind: str) -> list[_View]:
    views: list[_View] = []
    for source in sources:
        if source.kind != kind:
            continue
        by_producer: dict[str, list[Located]] = defaultdict(list)
        seen: set[str] = set()
        for located in source.events:
            if located.envelope.event_id in seen:
                continue  # a topic re-delivery
            seen.add(located.envelope.event_id)
            by_producer[located.envelope.producer].append(located)
        for producer, events in by_producer.items():
            events.sort(key=lambda x: x.envelope.global_position)
            index: dict[tuple[str, int], Located] = {}
            for x in events:
                index.setdefault((x.envelope.stream_id, x.envelope.stream_version), x)
            views.append(_View(source, producer, events, index))
    return views


#: Every signed head, by stream: version -> hash.
Signed = dict[str, dict[int, str]]


def _bracket(view: _View, stream: str, signed: Signed, bad: int) -> str:
    """Where the first rewritten event of ``stream`` lies, from every signed head of it."""
    good = [
        v
        for v, h in signed.get(stream, {}).items()
        if v < bad and (x := view.by_version.get((stream, v))) is not None and x.envelope.hash == h
    ]
    low = max(good, default=0) + 1
    if low == bad:
        return f"the first rewritten event is version {bad}"
    first = view.by_version.get((stream, low))
    where = f" (from position {first.envelope.global_position})" if first else ""
    return f"the first rewritten event is one of versions {low}..{bad}{where}"


def _check_one(
    view: _View,
    anchor: Anchor,
    heads: Heads,
    root: str,
    signed: Signed,
) -> tuple[str, str] | None:
    """The first discrepancy between ``view`` and one checkpoint record (location, reason)."""
    c = anchor.checkpoint
    label = view.source.label
    if view.last_position < c.global_position:
        return (
            f"{label} position {view.last_position}",
            f"ends at position {view.last_position}, before {c.label} "
            f"({anchor.where}): events {view.last_position + 1}..{c.global_position} are gone",
        )
    # Content first: of the signed heads that are gone or differ, the one whose event comes
    # first in the store (a rewrite changes every later hash; the earliest is the cause).
    found: list[tuple[int, str, str, str, int]] = []
    for leaf in c.leaves:
        located = view.by_version.get((leaf.stream_id, leaf.version))
        if located is None:
            before = view.by_version.get((leaf.stream_id, leaf.version - 1))
            found.append(
                (
                    before.envelope.global_position if before else 0,
                    f"{label} stream {leaf.stream_id} version {leaf.version}",
                    f"missing: {c.label} ({anchor.where}) signed it as the stream's head",
                    "",
                    0,
                )
            )
        elif located.envelope.hash != leaf.hash:
            stored = located.envelope.hash
            found.append(
                (
                    located.envelope.global_position,
                    located.location(),
                    f"hash {stored[:16]}… differs from the head {leaf.hash[:16]}… signed by "
                    f"{c.label} ({anchor.where}): rewritten; ",
                    leaf.stream_id,
                    leaf.version,
                )
            )
    if found:
        _, location, reason, stream, version = min(found)
        if stream:  # a rewritten head: bracket the first rewritten version
            reason += _bracket(view, stream, signed, version)
        return location, reason
    for leaf in c.leaves:
        head = heads.get(leaf.stream_id)
        if head is not None and head.version != leaf.version:
            return (
                f"{label} stream {leaf.stream_id} version {head.version}",
                f"the head at position {c.global_position} is version {head.version}, "
                f"{c.label} ({anchor.where}) signed version {leaf.version}",
            )
    if root != c.merkle_root:
        return (
            f"{label} position {c.global_position}",
            f"Merkle root of the heads at position {c.global_position} ({len(heads)} streams) "
            f"differs from {c.label} ({anchor.where}; {c.stream_count} streams): an earlier "
            "checkpoint locates the stream",
        )
    return None


def _check_view(view: _View, anchors: Sequence[Anchor], result: CheckResult) -> None:
    mine = [a for a in anchors if a.checkpoint.producer == view.producer]
    signed: Signed = defaultdict(dict)
    for a in mine:
        for leaf in a.checkpoint.leaves:
            signed[leaf.stream_id][leaf.version] = leaf.hash
    heads = Heads()
    next_event = 0
    roots: dict[int, str] = {}
    for anchor in mine:  # ascending global position
        position = anchor.checkpoint.global_position
        while (
            next_event < len(view.events)
            and view.events[next_event].envelope.global_position <= position
        ):
            e = view.events[next_event].envelope
            heads.apply(e.stream_id, e.stream_version, e.hash, e.global_position)
            next_event += 1
        if position not in roots:
            roots[position] = heads.root()
        result.checked += 1
        found = _check_one(view, anchor, heads, roots[position], signed)
        if found is not None:
            result.fail(*found)


def check_anchors(
    sources: Sequence[Source], anchors: Anchors, valid: Sequence[Anchor], kind: str
) -> CheckResult:
    """``anchor-store`` (``kind`` "store") or ``anchor-topic`` (``kind`` "topic")."""
    result = CheckResult(f"anchor-{kind}")
    producers = {a.checkpoint.producer for a in valid}
    for view in _views(sources, kind):
        if view.producer in producers:
            _check_view(view, valid, result)
        elif kind == "store" and anchors.expected:
            result.checked += 1
            result.fail(
                f"{view.source.label} position {view.last_position}",
                f"no validly signed checkpoint of producer {view.producer!r}: the store is not "
                "anchored",
            )
    return result


def run_checkpoint_checks(sources: Sequence[Source], anchors: Anchors) -> list[CheckResult]:
    """``checkpoints``, ``anchor-store`` and ``anchor-topic``."""
    signatures, valid = check_signatures(anchors)
    return [
        signatures,
        check_anchors(sources, anchors, valid, "store"),
        check_anchors(sources, anchors, valid, "topic"),
    ]

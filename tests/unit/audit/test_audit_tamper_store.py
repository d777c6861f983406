"""The tamper suite of issue 14 against a store, on SQLite and PostgreSQL (``backend``): each
tampering is detected by ``electric-audit verify`` at the right place — the hash chains
catch in-place edits, the signed checkpoints catch rewrites with every hash recomputed,
and a forged checkpoint is refused. Plus the documented window: a rewrite of events after
the last checkpoint is not detectable until the next one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from electric_audit.cli import main
from electric_audit.sources import store_name
from electric_eventlog import ANY, EventStore, create_engine, schema
from electric_eventlog.checkpoint import Heads, build_checkpoints, to_json
from electric_eventlog.testing import event
from electric_platform.checkpointing import new_checkpoint_key
from sqlalchemy import delete

from tests.support.anchoring import (
    Anchored,
    build_anchored,
    execute,
    rewrite,
    rows,
    update_row,
)
from tests.support.backends import Backend


@pytest.fixture
def anchored(backend: Backend, tmp_path: Path) -> Anchored:
    return build_anchored(backend.url, tmp_path)


def verify(capsys: pytest.CaptureFixture[str], a: Anchored, *extra: str) -> tuple[int, Any]:
    argv = ["verify", "--json", "--store", a.url, "--checkpoints", str(a.checkpoints)]
    code = main([*argv, "--checkpoint-keys", str(a.keys), *extra])
    out = capsys.readouterr().out
    return code, {r["check"]: r for r in map(json.loads, out.splitlines())}


def where(a: Anchored, stream: str, version: int, position: int) -> str:
    return f"store:{store_name(a.url)} stream {stream} version {version} position {position}"


def test_untouched_store_matches_every_checkpoint(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = verify(capsys, anchored)
    assert code == 0, result
    assert result["checkpoints"] == {
        "check": "checkpoints",
        "ok": True,
        "checked": 4,
        "failed": 0,
        "first_failure": None,
    }
    assert result["anchor-store"]["checked"] == 4 and result["anchor-store"]["ok"]
    assert [r.global_position for r in anchored.records] == [3, 6, 9, 12]
    # Without the keys the signatures cannot be checked: that is a failure, not a pass.
    code = main(["verify", "--store", anchored.url, "--checkpoints", str(anchored.checkpoints)])
    assert code == 1
    capsys.readouterr()


def test_one_changed_byte_is_located_by_the_chain(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    target = anchored.at("s1", 2)
    payload = bytearray(target.payload.value)
    payload[-1] ^= 0x01
    update_row(anchored.url, target.global_position, payload=bytes(payload))
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["chains"]["failed"] == 1
    assert result["chains"]["first_failure"].startswith(
        where(anchored, "s1", 2, target.global_position) + ": hash mismatch"
    )
    # The stored hashes were not touched, so they still match what was signed: the
    # checkpoints anchor the hashes, the chain check ties each event to its hash.
    assert result["anchor-store"]["ok"]


def test_rewrite_with_hashes_recomputed_is_located_by_the_checkpoints(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    target = anchored.at("s1", 2)

    def change_a_byte(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        row = found[target.global_position - 1]
        payload = bytearray(bytes(row["payload"]))
        payload[-1] ^= 0x01
        row["payload"] = bytes(payload)
        return found

    rewrite(anchored.url, change_a_byte, renumber=False)
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["chains"]["ok"] and result["positions"]["ok"]  # the chain alone is fooled
    failure = result["anchor-store"]["first_failure"]
    assert failure.startswith(where(anchored, "s1", 2, target.global_position) + ": hash ")
    assert "rewritten; the first rewritten event is version 2" in failure
    assert "checkpoint table #2 part 1/1 at position 6" in failure
    # Every later checkpoint of that stream fails too; s0 and s2 do not.
    assert result["anchor-store"]["failed"] == 3


def test_deleted_event_is_located(anchored: Anchored, capsys: pytest.CaptureFixture[str]) -> None:
    target = anchored.at("s1", 2)
    events, outbox = schema.events, schema.outbox
    position = target.global_position
    execute(
        anchored.url,
        delete(outbox).where(outbox.c.global_position == position),
        delete(events).where(events.c.global_position == position),
    )
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["chains"]["first_failure"].startswith(
        where(anchored, "s1", 3, position + 3) + ": version 3 follows 1"
    )
    assert result["anchor-store"]["first_failure"].startswith(
        f"store:{store_name(anchored.url)} stream s1 version 2: missing"
    )


def test_deleted_event_with_everything_renumbered_is_located(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    target = anchored.at("s1", 2)
    rewrite(
        anchored.url,
        lambda found: [r for r in found if r["global_position"] != target.global_position],
        renumber=True,
    )
    code, result = verify(capsys, anchored)
    assert code == 1
    assert all(result[c]["ok"] for c in ("chains", "positions"))
    # Every event from the deleted one's position on moved (its position is hashed): the
    # earliest one that differs from its signed head is at the deleted event's position.
    failure = result["anchor-store"]["first_failure"]
    assert f" position {target.global_position}: hash " in failure
    assert "rewritten; the first rewritten event is version" in failure
    assert result["anchor-store"]["failed"] == 3


def _swap(found: list[dict[str, Any]], a: int, b: int) -> list[dict[str, Any]]:
    fields = ("event_id", "event_type", "payload_type_url", "payload")
    ra, rb = found[a - 1], found[b - 1]
    for name in fields:
        ra[name], rb[name] = rb[name], ra[name]
    return found


def test_two_swapped_events_are_located(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anchored.at("s1", 2), anchored.at("s1", 3)
    fields = ("event_type", "payload_type_url", "payload")
    values = {r["global_position"]: r for r in rows(anchored.url)}
    a, b = first.global_position, second.global_position
    update_row(anchored.url, a, event_id="swapping")
    update_row(anchored.url, b, **{f: values[a][f] for f in fields}, event_id=first.event_id)
    update_row(anchored.url, a, **{f: values[b][f] for f in fields}, event_id=second.event_id)
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["chains"]["first_failure"].startswith(
        where(anchored, "s1", 2, a) + ": hash mismatch"
    )


def test_two_swapped_events_with_hashes_recomputed_are_located(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anchored.at("s1", 2), anchored.at("s1", 3)
    rewrite(
        anchored.url,
        lambda found: _swap(found, first.global_position, second.global_position),
        renumber=False,
    )
    code, result = verify(capsys, anchored)
    assert code == 1 and result["chains"]["ok"]
    failure = result["anchor-store"]["first_failure"]
    assert failure.startswith(where(anchored, "s1", 2, first.global_position))
    assert "the first rewritten event is version 2" in failure


def test_forged_checkpoints_are_refused(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    """The administrator rewrites the store and replaces the checkpoints by records that
    match the rewrite, signed with a key of his own under the genuine kid."""
    target = anchored.at("s1", 2)

    def change(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found[target.global_position - 1]["payload"] = b"\x0a\x03bad"
        return found

    rewrite(anchored.url, change, renumber=False)
    forger = new_checkpoint_key("table")
    heads = Heads()
    forged = []
    since = 0
    by_position = {r["global_position"]: r for r in rows(anchored.url)}
    for sequence, genuine in enumerate(anchored.records, start=1):
        for position in range(heads.position + 1, genuine.global_position + 1):
            row = by_position[position]
            heads.apply(row["stream_id"], row["stream_version"], row["hash"], position)
        forged += build_checkpoints(
            heads,
            producer="table",
            instance_id=genuine.instance_id,
            sequence=sequence,
            since_position=since,
            created_at_micros=genuine.created_at_micros,
            kid=genuine.kid,
            private_key=forger.private,
        )
        since = heads.position
    anchored.checkpoints.write_bytes(b"".join(to_json(r) + b"\n" for r in forged))
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["checkpoints"]["failed"] == 4
    assert result["checkpoints"]["first_failure"].startswith(
        "file:table.jsonl line 1 (checkpoint table #1 part 1/1 at position 3): "
        f"signature does not verify with key '{anchored.records[0].kid}'"
    )
    # Nothing validly signed is left for the store: it is reported as not anchored.
    assert (
        "no validly signed checkpoint of producer 'table'"
        in (result["anchor-store"]["first_failure"])
    )


def test_a_deleted_checkpoint_is_noticed(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = anchored.checkpoints.read_bytes().splitlines()
    anchored.checkpoints.write_bytes(b"\n".join([lines[0], *lines[2:]]) + b"\n")
    code, result = verify(capsys, anchored)
    assert code == 1
    assert result["checkpoints"]["first_failure"].startswith(
        f"checkpoints of table instance {anchored.records[0].instance_id}: sequence 2 missing"
    )


def test_a_rewrite_after_the_last_checkpoint_is_the_documented_window(
    anchored: Anchored, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/audit.md, trust model: events after the last checkpoint are not anchored yet."""
    engine = create_engine(anchored.url)
    late = EventStore(engine, producer="table").append_in_new_tx("s1", ANY, [event("late")])[0]
    engine.dispose()

    def change(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found[late.global_position - 1]["payload"] = b"\x0a\x04evil"
        return found

    rewrite(anchored.url, change, renumber=False)
    code, result = verify(capsys, anchored)
    assert code == 0, result  # undetectable until the next checkpoint is published


def test_unreadable_checkpoints_or_keys_exit_2(tmp_path: Path) -> None:
    a = build_anchored(f"sqlite:///{tmp_path / 'store.db'}", tmp_path)
    base = ["verify", "--store", a.url]
    assert main([*base, "--checkpoints", str(tmp_path / "none")]) == 2
    assert main([*base, "--checkpoints", str(a.checkpoints), "--checkpoint-keys", "/"]) == 2
    (tmp_path / "bad.jwks.json").write_text("{}")
    keys = ["--checkpoint-keys", str(tmp_path / "bad.jwks.json")]
    assert main([*base, "--checkpoints", str(a.checkpoints), *keys]) == 2
    # A record that is not a checkpoint is a failed check (exit 1), not a usage error.
    with a.checkpoints.open("a") as out:
        out.write("{}\n")
    assert main([*base, "--checkpoints", str(a.checkpoints), "--checkpoint-keys", str(a.keys)]) == 1

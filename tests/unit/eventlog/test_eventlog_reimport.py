"""Re-import after a restore (issue 18 item 4): a store restored from a dump gets back the
events of its topic it lacks, exactly as stored, and refuses anything that does not continue
it (a gap, a broken chain, another producer) without writing."""

from __future__ import annotations

from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import ANY, EventStore, create_engine, migrate
from electric_eventlog.reimport import ReimportError, reimport
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine, text


def _engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate(engine)
    return engine


def _envelopes(engine: Engine) -> list[Envelope]:
    store = EventStore(engine, producer="wallet")
    with engine.connect() as conn:
        return list(store.iter_all(conn))


@pytest.fixture
def original(tmp_path: Path) -> list[Envelope]:
    engine = _engine(tmp_path / "original.db")
    store = EventStore(engine, producer="wallet")
    for n in range(12):  # three streams, interleaved
        store.append_in_new_tx(f"s-{n % 3}", ANY, [wrappers_pb2.StringValue(value=str(n))])
    got = _envelopes(engine)
    engine.dispose()
    return got


def _count(engine: Engine, table: str, where: str = "") -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table} {where}")).scalar_one())


def test_the_missing_tail_is_appended_as_stored(tmp_path: Path, original: list[Envelope]) -> None:
    restored = _engine(tmp_path / "restored.db")
    assert reimport(restored, "wallet", original[:5]) == 5  # "the dump"
    # The topic holds everything (and re-sent copies: duplicates are skipped).
    assert reimport(restored, "wallet", original + original[3:6]) == 7
    assert [e.SerializeToString(deterministic=True) for e in _envelopes(restored)] == [
        e.SerializeToString(deterministic=True) for e in original
    ]
    assert _count(restored, "eventlog_outbox", "WHERE sent_at IS NOT NULL") == 12
    assert _count(restored, "eventlog_outbox", "WHERE sent_at IS NULL") == 0
    assert reimport(restored, "wallet", original) == 0
    # The store goes on after the imported events: the next append continues the chain.
    store = EventStore(restored, producer="wallet")
    store.append_in_new_tx("s-0", ANY, [wrappers_pb2.StringValue(value="after")])
    last = _envelopes(restored)[-1]
    s0 = [e for e in original if e.stream_id == "s-0"][-1]
    assert (last.global_position, last.stream_version, last.prev_hash) == (
        13,
        s0.stream_version + 1,
        s0.hash,
    )


def test_a_gap_a_broken_chain_or_another_producer_is_refused(
    tmp_path: Path, original: list[Envelope]
) -> None:
    restored = _engine(tmp_path / "restored.db")
    reimport(restored, "wallet", original[:4])
    with pytest.raises(ReimportError, match="position"):
        reimport(restored, "wallet", original[:4] + original[5:])  # event 5 never relayed
    forged = Envelope()
    forged.CopyFrom(original[4])
    forged.prev_hash = "0" * 64
    with pytest.raises(ReimportError, match="does not continue"):
        reimport(restored, "wallet", [forged, *original[5:]])
    with pytest.raises(ReimportError, match="produced by"):
        reimport(restored, "payout", original)
    assert _count(restored, "eventlog_events") == 4  # nothing written by the refusals

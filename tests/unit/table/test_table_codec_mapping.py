"""Whole simulated tournaments (every kind of domain event: timeouts, time banks, sit-outs,
pre-turn actions, Electric Mode, eliminations) through the canonical codec and the
domain → table-event mapping, and back by replay."""

from __future__ import annotations

from typing import Any

import pytest
from electric.table.v1 import events_pb2 as tev
from electric_domain.tournament import Tournament, default_config
from electric_domain.tournament import events as dev
from electric_domain.tournament import simulate as sim
from electric_domain.tournament.engine_adapter import DeckEscrowed
from electric_table import codec, mapping

LINEUPS = [
    ("random", "tag", "timeout"),
    ("sitout", "random", "random"),
    ("tag", "tag", "random"),
    ("timeout", "sitout", "tag"),
]


def _info(t: Tournament) -> mapping.TableInfo:
    return mapping.TableInfo(
        table_id="t-1",
        table_name="T",
        seats=tuple(
            mapping.SeatInfo(i + 1, s.player_id, f"e{i}", s.player_id)
            for i, s in enumerate(t.state.seats)
        ),
        action_timer_ms=10_000,
    )


@pytest.mark.parametrize("index", range(12))
def test_history_round_trips_through_the_table_events(index: int) -> None:
    cfg = default_config()
    played = sim.play(cfg, sim.tournament_seed(99, index), sim.make_bots(LINEUPS[index % 4]))
    t = played.tournament
    history = list(t.history)
    proj = mapping.Projector(_info(t))
    mapped = mapping.to_protos(
        history,
        proj,
        level_ms=cfg.level_duration_ms,
        multiplier=t.state.multiplier,
        prize_pool_cents=t.state.prize_pool_cents,
        buy_in_cents=t.state.buy_in_cents,
    )
    assert len(mapped) == len(history)
    # Published records hide every deck seed; the secret goes to the service's own table.
    seeds = {m.secret_seed[0]: m.secret_seed[1] for m in mapped if m.secret_seed}
    assert len(seeds) == played.hands
    for m in mapped:
        record = mapping.domain_of(m.message)
        assert record is not None
        if record.redacted:
            assert '"seed_hex":""' in record.canonical_json
    # Decoding the records (restoring the seeds) gives the same events and the same state.
    decoded: list[Any] = [
        mapping.decode_record(mapping.domain_of(m.message), seeds) for m in mapped
    ]  # type: ignore[arg-type]
    assert decoded == history
    again = Tournament.replay(cfg, decoded)
    assert again.result() == t.result()
    assert again.state == t.state
    # Typed fields: action numbers 1..n per hand; places and prizes match the result.
    by_hand: dict[int, list[int]] = {}
    for m in mapped:
        if isinstance(m.message, tev.ActionTaken):
            by_hand.setdefault(m.message.hand_number, []).append(m.message.action_seq)
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in by_hand.values())
    finished = mapped[-1].message
    assert isinstance(finished, tev.TournamentFinished)
    result = t.result()
    assert result is not None
    assert sum(p.prize.cents for p in finished.places) == result.prize_pool_cents
    assert {p.seat - 1: p.place for p in finished.places} == {
        i: min(pl) for i, pl in enumerate(result.places)
    }
    kinds = {type(e).__name__ for e in history}
    if "timeout" in LINEUPS[index % 4]:
        assert "TimedOut" in kinds


def test_unknown_and_untagged_records_are_refused() -> None:
    with pytest.raises(codec.CodecError):
        codec.decode('{"$t":"tournament.Nope"}')
    with pytest.raises(codec.CodecError):
        codec.decode('{"a":1}')
    with pytest.raises(codec.CodecError):
        codec.encode(object())
    hidden = dev.HandEvent(1, DeckEscrowed((0, 1, 2), 3, "c", ""))
    _, text = codec.encode(hidden)
    record = tev.DomainRecord(type="tournament.HandEvent", canonical_json=text, redacted=True)
    with pytest.raises(codec.CodecError):
        mapping.decode_record(record, {})

"""Whole simulated tournaments (every kind of domain event: timeouts, time banks, sit-outs,
pre-turn actions, Electric Mode, eliminations) through the canonical codec and the
domain → table-event mapping, and back by replay."""

from __future__ import annotations

from typing import Any

import pytest
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_domain.tournament import Tournament, default_config
from electric_domain.tournament import events as dev
from electric_domain.tournament.engine_adapter import DeckEscrowed
from electric_math import simulate as sim
from electric_table.tournament import codec, mapping

from tests.support.table_kit import table_info

LINEUPS = [
    ("random", "tag", "timeout"),
    ("sitout", "random", "random"),
    ("tag", "tag", "random"),
    ("timeout", "sitout", "tag"),
]


class BatchMapper:
    """Maps each command's events right after the command, as the service does."""

    def __init__(self) -> None:
        self.done = 0
        self.mapped: list[mapping.Mapped] = []

    def observe(self, t: Tournament) -> None:
        batch = t.history[self.done :]
        self.done = len(t.history)
        self.mapped += mapping.to_protos(
            batch,
            table_info(t),
            t.hand_facts(batch),
            level_ms=t.config.level_duration_ms,
            multiplier=t.state.multiplier,
            prize_pool_cents=t.state.prize_pool_cents,
            buy_in_cents=t.state.buy_in_cents,
        )


@pytest.mark.parametrize("index", range(12))
def test_history_round_trips_through_the_table_events(index: int) -> None:
    cfg = default_config()
    mapper = BatchMapper()
    played = sim.play(
        cfg,
        sim.tournament_seed(99, index),
        sim.make_bots(LINEUPS[index % 4]),
        observe=mapper.observe,
    )
    t = played.tournament
    history = list(t.history)
    mapped = mapper.mapped
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
    _check_typed_fields(mapped)


def _check_typed_fields(mapped: list[mapping.Mapped]) -> None:
    """The projection the old stream-following projector computed, re-derived from the
    published events alone: stacks behind, street bets, the board and exposed all-ins."""
    behind: dict[int, int] = {}
    street_bets: dict[int, int] = {}
    folded: set[int] = set()
    board: list[str] = []
    streets = {3: table_pb2.STREET_FLOP, 4: table_pb2.STREET_TURN, 5: table_pb2.STREET_RIVER}
    for m in mapped:
        e = m.message
        if isinstance(e, tev.HandStarted):
            behind = {s.seat: s.stack for s in e.stacks if s.stack > 0}
            street_bets, folded, board = {}, set(), []
        elif isinstance(e, tev.BlindPosted):
            behind[e.seat] -= e.amount
            if e.blind_type != tev.BLIND_TYPE_ANTE:
                street_bets[e.seat] = street_bets.get(e.seat, 0) + e.amount
            assert e.all_in == (behind[e.seat] == 0)
        elif isinstance(e, tev.ActionTaken):
            before = street_bets.get(e.seat, 0)
            assert e.street == streets.get(len(board), table_pb2.STREET_PREFLOP)
            assert e.street_bet == before + e.amount_added
            behind[e.seat] -= e.amount_added
            street_bets[e.seat] = e.street_bet
            assert e.all_in == (e.amount_added > 0 and behind[e.seat] == 0)
            if e.action == table_pb2.ACTION_TYPE_FOLD:
                folded.add(e.seat)
            if e.action == table_pb2.ACTION_TYPE_BET:
                assert before == 0 and max(street_bets.values()) == e.street_bet
        elif isinstance(e, tev.StreetDealt):
            board += [c.text for c in e.cards]
            assert [c.text for c in e.board] == board
            assert e.street == streets[len(board)]
            street_bets = {}
        elif isinstance(e, tev.CardsShown):
            all_in = any(v == 0 and s not in folded for s, v in behind.items())
            assert (e.reason == tev.SHOW_REASON_ALL_IN) == all_in
        elif isinstance(e, tev.HandEngineEvent) and e.kind == "UncalledBetReturned":
            rec = mapping.domain_of(e)
            assert rec is not None
            ev = codec.decode(rec.canonical_json).event
            seat = next(s for s in behind if s - 1 == _seat_of(mapped, e.hand_number, ev.player))
            behind[seat] += ev.amount
        elif isinstance(e, tev.HandEngineEvent) and e.kind == "RoundClosed":
            street_bets = {}
        elif isinstance(e, tev.PotAwarded):
            for w in e.winners:
                behind[w.seat] += w.amount


def _seat_of(mapped: list[mapping.Mapped], hand: int, player: int) -> int:
    """The domain seat of engine player ``player`` in ``hand`` (from its DeckEscrowed)."""
    for m in mapped:
        e = m.message
        escrow = isinstance(e, tev.HandEngineEvent) and e.kind == "DeckEscrowed"
        if escrow and e.hand_number == hand:
            rec = mapping.domain_of(e)
            assert rec is not None
            seats: tuple[int, ...] = codec.decode(rec.canonical_json).event.seats
            return seats[player]
    raise AssertionError(f"no DeckEscrowed for hand {hand}")


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

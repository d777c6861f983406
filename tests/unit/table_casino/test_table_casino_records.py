"""THB domain events → table casino events → domain events: replay is exact, and the deck seed
is withheld from the published record until DeckRevealed."""

from __future__ import annotations

import random

import electric_domain.casino.thb.events as thb
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric_domain.casino.common.config import load_config
from electric_domain.casino.thb.round import ThbRound
from electric_table.casino.thb import records
from electric_table.casino.thb.handlers import _settlement_ops

KEY = records.RoundKey("r1", "thb-1", "thb", "alice")
CFG = load_config()


def play(seed: int) -> ThbRound:
    rng = random.Random(seed)
    r = ThbRound.start(
        CFG,
        round_id="r1",
        game_number="20261201-000000-THB1-1",
        ante_cents=500,
        deck_seed=rng.randbytes(32),
        at=1,
    )
    at = 2
    while not r.finished:
        options = {
            "fold": thb.Fold,
            "call_flop": thb.CallFlop,
            "check": thb.Check,
            "bet_turn": thb.Bet,
            "bet_river": thb.Bet,
        }
        choice = rng.choice([o for o in r.legal() if o in options])
        if rng.random() < 0.05:
            r.handle(thb.Void("test", at))
        else:
            r.handle(options[choice](at=at))
        at += 1
    return r


@pytest.mark.parametrize("seed", range(40))
def test_replay_from_the_published_records_is_exact(seed: int) -> None:
    r = play(seed)
    messages = records.to_protos(KEY, r.history)
    decoded = [e for e in (records.decode(m, r.state.seed_hex) for m in messages) if e]
    assert decoded == r.history
    assert ThbRound.replay(CFG, decoded).state == r.state
    started = messages[0]
    assert isinstance(started, cev.CasinoRoundStarted) and started.domain.redacted
    assert r.state.seed_hex not in started.SerializeToString().hex()
    bets = [m for m in messages if isinstance(m, cev.CasinoBetPlaced)]
    assert {b.spot: b.amount_cents for b in bets} == r.state.bets
    with pytest.raises(records.CodecError):
        records.decode(started, "")


def test_settlement_posts_losses_and_wins_and_voids_pushes() -> None:
    from electric_domain.casino.common.money import BetResult, Outcome

    ops = _settlement_ops(
        "r1",
        (
            BetResult("ante", 500, Outcome.PUSH),
            BetResult("flop", 1000, Outcome.WIN, 1000),
            BetResult("turn", 500, Outcome.LOSE),
            BetResult("river", 0, Outcome.PUSH),
        ),
    )
    assert ops == {"r1:ante": "void", "r1:flop": "post", "r1:turn": "post"}

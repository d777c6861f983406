"""Property tests over simulated tournaments (issue 4 "What it must show").

For random bot line-ups and seeds: chips are conserved after every command, every
tournament ends with exactly one winner holding all chips, prizes sum exactly to the prize
pool, and folding the recorded events rebuilds the identical final state.
"""

from __future__ import annotations

import hashlib

import pytest
from electric_domain.tournament.aggregate import Tournament
from electric_domain.tournament.config import default_config
from electric_domain.tournament.events import PlayerEliminated, TournamentFinished
from electric_math.simulate import make_bots, play
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CFG = default_config()
BOT_NAMES = ("random", "tag", "timeout", "sitout")


def _check_tournament(seed: bytes, bots: tuple[str, ...], buy_in: int) -> None:
    total = CFG.seats * CFG.starting_stack

    def conserved(t: Tournament) -> None:
        assert t.chips_in_play() == total
        assert all(s.stack >= 0 for s in t.state.seats)

    p = play(CFG, seed, make_bots(bots), buy_in_cents=buy_in, observe=conserved)
    t = p.tournament
    st_ = t.state
    assert st_.finished
    finished = [e for e in t.history if isinstance(e, TournamentFinished)]
    assert len(finished) == 1
    winners = [i for i, s in enumerate(st_.seats) if s.stack > 0]
    assert winners == [finished[0].winner]
    assert st_.seats[finished[0].winner].stack == total
    assert sum(1 for e in t.history if isinstance(e, PlayerEliminated)) == CFG.seats - 1
    assert sum(p.prizes) == p.pool == CFG.prize_pool_cents(p.multiplier, buy_in)
    # every place taken once, shared places only by players eliminated together
    assert sorted({pl for s in st_.seats for pl in s.places}) == [1, 2, 3]
    for s in st_.seats:
        assert sum(1 for o in st_.seats if o.places == s.places) == len(s.places)
    again = Tournament.replay(CFG, t.history)
    assert again.state == t.state
    assert again.result() == t.result()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.binary(min_size=32, max_size=32),
    bots=st.tuples(*(st.sampled_from(BOT_NAMES),) * 3),
    buy_in=st.sampled_from([t.buy_in_cents for t in CFG.buy_ins]),
)
def test_random_lineups(seed: bytes, bots: tuple[str, ...], buy_in: int) -> None:
    _check_tournament(seed, bots, buy_in)


@pytest.mark.parametrize("block", range(20))
def test_sweep_of_seeds(block: int) -> None:
    """2,000 more tournaments (20 blocks of 100) with the default line-up, fixed seeds."""
    for i in range(block * 100, block * 100 + 100):
        _check_tournament(
            hashlib.sha256(b"sweep" + i.to_bytes(4, "big")).digest(),
            ("random", "tag", "random"),
            100,
        )

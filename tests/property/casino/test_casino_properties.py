"""Property tests: money is conserved in every settlement; replay reproduces the round."""

from __future__ import annotations

from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.money import totals
from electric_domain.casino.thb import events as tev
from electric_domain.casino.thb import settlement as thb_settle
from electric_domain.casino.thb.round import ThbRound
from electric_domain.casino.uth import events as uev
from electric_domain.casino.uth import settlement as uth_settle
from electric_domain.casino.uth.round import UthRound
from hypothesis import given, settings
from hypothesis import strategies as st

CFG = load_config()
ranks = st.integers(min_value=1, max_value=7462)
cents = st.integers(min_value=1, max_value=100_000)


def _conserved(results: tuple[object, ...]) -> None:
    staked, returned, house = totals(results)  # type: ignore[arg-type]
    assert staked == returned + house
    for r in results:
        assert r.returned_cents >= 0  # type: ignore[attr-defined]


@given(cents, st.sampled_from([0, 1, 2, 3, 4]), st.booleans(), ranks, ranks, cents)
def test_casino_uth_settlement_conserves_money(
    ante: int, mult: int, folded: bool, pr: int, dr: int, trips: int
) -> None:
    res = uth_settle.settle(
        CFG.uth, ante=ante, trips=trips, play=mult * ante, folded=folded,
        player_rank=pr, dealer_rank=dr,
    )  # fmt: skip
    _conserved(res)
    assert sum(r.stake_cents for r in res) == 2 * ante + trips + (0 if folded else mult * ante)


@given(cents, st.booleans(), st.booleans(), st.booleans(), ranks, ranks)
def test_casino_thb_settlement_conserves_money(
    ante: int, folded: bool, turn: bool, river: bool, pr: int, dr: int
) -> None:
    res = thb_settle.settle(
        CFG.thb, ante=ante, flop=0 if folded else 2 * ante, turn=ante * turn,
        river=ante * river, folded=folded, player_rank=pr, dealer_rank=dr,
    )  # fmt: skip
    _conserved(res)


@settings(max_examples=60, deadline=None)
@given(
    st.binary(min_size=32, max_size=32),
    st.integers(min_value=100, max_value=50_000),
    st.lists(st.sampled_from(["fold", "call", "check", "bet"]), min_size=3, max_size=3),
    st.booleans(),
)
def test_casino_thb_replay_reproduces_round(
    seed: bytes, ante: int, moves: list[str], void: bool
) -> None:
    r = ThbRound.start(CFG, round_id="p", game_number="g", ante_cents=ante, deck_seed=seed, at=0)
    for i, m in enumerate(moves, start=1):
        if r.finished:
            break
        legal = r.legal()
        if void and i == 2:
            r.handle(tev.Void("fault", i))
            break
        if legal[0] == "fold":
            r.handle(tev.Fold(i) if m == "fold" else tev.CallFlop(i))
        else:
            r.handle(tev.Bet(i) if m == "bet" else tev.Check(i))
    again = ThbRound.replay(CFG, r.history)
    assert again.state == r.state
    final = [e for e in r.history if isinstance(e, tev.Settled | tev.RoundVoided)]
    for e in final:
        _conserved(e.results)


actions = st.sampled_from(["play_4x", "play_3x", "check", "play_2x", "play_1x", "fold", "none"])


@settings(max_examples=40, deadline=None)
@given(
    st.binary(min_size=32, max_size=32),
    st.lists(st.tuples(st.integers(100, 2000), st.integers(0, 500)), min_size=1, max_size=4),
    st.lists(actions, min_size=12, max_size=12),
)
def test_casino_uth_replay_and_conservation(
    seed: bytes, bets: list[tuple[int, int]], plan: list[str]
) -> None:
    u = CFG.uth
    players = tuple(f"p{i}" for i in range(len(bets)))
    r = UthRound.open(CFG, round_id="p", game_number="g", deck_seed=seed, at=0, players=players)
    for i, (ante, trips) in enumerate(bets):
        r.handle(uev.PlaceBet(i, "ante", ante, 1))
        if trips >= u.trips_min_cents:
            r.handle(uev.PlaceBet(i, "trips", trips, 2))
    t = u.betting_ms
    r.handle(uev.Tick(t))
    step = 0
    while not r.finished:
        t += 1
        for i in range(len(bets)):
            action = plan[step % len(plan)]
            step += 1
            if action in r.legal(i) and not r.finished:
                r.handle(uev.Decide(i, action, t))
        if not r.finished:
            t = max(t, r.next_wakeup_at() or t)
            r.handle(uev.Tick(t))
    again = UthRound.replay(CFG, r.history)
    assert again.state == r.state
    settled = [e for e in r.history if isinstance(e, uev.SeatSettled)]
    assert len(settled) == len(bets)
    for e in settled:
        _conserved(e.results)
        assert e.staked_cents == e.returned_cents + e.house_net_cents

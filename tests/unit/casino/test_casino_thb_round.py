"""The THB round: flow, limits, nicknames, NEW GAME / REPEAT BETS, void, replay."""

from __future__ import annotations

import pytest
from electric_domain.cards import parse_cards
from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.errors import Rejected
from electric_domain.casino.common.money import Outcome, totals
from electric_domain.casino.thb import events as ev
from electric_domain.casino.thb.nicknames import nickname
from electric_domain.casino.thb.round import ThbRound, repeat_ante
from electric_domain.deck import verify_deck

CFG = load_config()


def start(ante: int = 500, seed: bytes = bytes(32)) -> ThbRound:
    return ThbRound.start(
        CFG, round_id="r", game_number="20261201-000000-S1-1", ante_cents=ante,
        deck_seed=seed, at=0,
    )  # fmt: skip


def test_casino_thb_full_round_settles_and_reveals() -> None:
    r = start()
    assert r.legal() == ("fold", "call_flop")
    r.handle(ev.CallFlop(1))
    assert r.legal() == ("check", "bet_turn")
    r.handle(ev.Bet(2))
    r.handle(ev.Bet(3))
    s = r.state
    assert s.bets == {"ante": 500, "flop": 1000, "turn": 500, "river": 500}
    settled = next(e for e in r.history if isinstance(e, ev.Settled))
    assert settled.staked_cents == 2500
    assert settled.staked_cents == settled.returned_cents + settled.house_net_cents
    revealed = r.history[-1]
    assert isinstance(revealed, ev.DeckRevealed)
    started = r.history[0]
    assert isinstance(started, ev.RoundStarted)
    dealt = (*s.player_cards, *s.dealer_cards, *s.board)
    assert verify_deck(bytes.fromhex(revealed.deck_seed_hex), started.deck_commitment).ok
    assert len(set(dealt)) == 9
    assert r.legal() == ("new_game", "repeat_bets")
    assert repeat_ante(r) == 500


def test_casino_thb_fold_loses_ante() -> None:
    r = start()
    out = r.handle(ev.Fold(1))
    settled = next(e for e in out if isinstance(e, ev.Settled))
    assert [x.outcome for x in settled.results] == [Outcome.LOSE]
    assert not any(isinstance(e, ev.Showdown) for e in out)
    with pytest.raises(Rejected):
        r.handle(ev.CallFlop(2))


def test_casino_thb_limits_and_order() -> None:
    with pytest.raises(Rejected):
        start(ante=CFG.thb.ante_min_cents - 1)
    with pytest.raises(Rejected):
        start(ante=CFG.thb.ante_max_cents + 1)
    r = start()
    with pytest.raises(Rejected):
        r.handle(ev.Bet(1))  # no Bet before the flop call
    with pytest.raises(Rejected):
        repeat_ante(r)  # REPEAT BETS only when over


def test_casino_thb_void_refunds() -> None:
    r = start()
    r.handle(ev.CallFlop(1))
    out = r.handle(ev.Void("RNG fault", 2))
    voided = out[0]
    assert isinstance(voided, ev.RoundVoided)
    assert {x.outcome for x in voided.results} == {Outcome.REFUND}
    assert totals(voided.results) == (1500, 1500, 0)


def test_casino_thb_replay_identical() -> None:
    r = start(seed=bytes(range(32)))
    r.handle(ev.CallFlop(1))
    r.handle(ev.Check(2))
    r.handle(ev.Bet(3))
    again = ThbRound.replay(CFG, r.history)
    assert again.state == r.state


@pytest.mark.parametrize(
    ("cards", "name"),
    [("AsAd", "Bullets"), ("KhAc", "Big Slick"), ("7c2d", "The Hammer"), ("Td2c", "Doyle Brunson"),
     ("Qs7s", "Computer Hand"), ("2c2d", "Ducks"), ("9s5d", None)],
)  # fmt: skip
def test_casino_thb_nicknames(cards: str, name: str | None) -> None:
    a, b = parse_cards(cards)
    assert nickname(a, b) == name

"""The live UTH round: betting window, UNDO/DOUBLE/REPEAT, decisions, timeouts, void."""

from __future__ import annotations

import pytest
from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.errors import Rejected, RejectReason
from electric_domain.casino.common.money import Outcome
from electric_domain.casino.uth import events as ev
from electric_domain.casino.uth.round import UthRound

CFG = load_config()
U = CFG.uth
CLOSE = U.green_ms + U.yellow_ms
SEED = bytes(range(32))


def opened(players: tuple[str, ...] = ("ann", "bob"), **kw: object) -> UthRound:
    return UthRound.open(
        CFG, round_id="r1", game_number="20261201-000000-T1-1", deck_seed=SEED, at=0,
        players=players, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def kinds(events: list[ev.Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_casino_uth_lights_follow_the_configured_window() -> None:
    r = opened()
    assert r.light(0) == "green"
    assert r.light(U.green_ms) == "yellow"
    assert r.light(CLOSE) == "red"
    out = r.handle(ev.Tick(U.green_ms))
    assert out == [ev.LightChanged("yellow", U.green_ms)]


def test_casino_uth_ante_places_blind_and_limits_apply() -> None:
    r = opened()
    with pytest.raises(Rejected) as e:
        r.handle(ev.PlaceBet(0, "ante", U.ante_min_cents - 1, 1))
    assert e.value.reason is RejectReason.BAD_AMOUNT
    with pytest.raises(Rejected):
        r.handle(ev.PlaceBet(0, "trips", 100, 1))  # Trips needs an Ante first
    r.handle(ev.PlaceBet(0, "ante", 500, 1))
    r.handle(ev.PlaceBet(0, "trips", 100, 2))
    with pytest.raises(Rejected):
        r.handle(ev.PlaceBet(0, "ante", U.ante_max_cents, 3))
    r.handle(ev.Tick(CLOSE))
    closed = next(e for e in r.history if isinstance(e, ev.BettingClosed))
    assert closed.stakes == ((0, 500, 100),)


def test_casino_uth_undo_double_repeat_only_while_open() -> None:
    r = opened(previous_bets={"bob": (("ante", 300), ("trips", 200))})
    r.handle(ev.PlaceBet(0, "ante", 200, 1))
    r.handle(ev.PlaceBet(0, "ante", 100, 2))
    r.handle(ev.Undo(0, 3))
    assert r.state.seats[0].total("ante") == 200
    r.handle(ev.Double(0, 4))
    assert r.state.seats[0].total("ante") == 400
    with pytest.raises(Rejected) as e:
        r.handle(ev.Double(0, 5))
    assert e.value.reason is RejectReason.ALREADY_DOUBLED
    r.handle(ev.Repeat(1, 6))
    assert (r.state.seats[1].total("ante"), r.state.seats[1].total("trips")) == (300, 200)
    r.handle(ev.Tick(CLOSE))
    for cmd in (ev.Undo(0, CLOSE + 1), ev.Double(1, CLOSE + 1), ev.Repeat(1, CLOSE + 1),
                ev.PlaceBet(0, "ante", 100, CLOSE + 1)):  # fmt: skip
        with pytest.raises(Rejected):
            r.handle(cmd)


def test_casino_uth_timeouts_autocheck_then_autofold_at_river() -> None:
    r = opened()
    r.handle(ev.PlaceBet(0, "ante", 100, 1))
    r.handle(ev.PlaceBet(1, "ante", 100, 1))
    r.handle(ev.Tick(CLOSE))
    assert r.legal(0) == ("play_4x", "play_3x", "check")
    r.handle(ev.Decide(1, "play_4x", CLOSE + 10))
    d = U.decision_ms
    out = r.handle(ev.Tick(CLOSE + d))
    assert ev.AutoChecked(0, "preflop", CLOSE + d) in out
    assert r.legal(0) == ("play_2x", "check") and r.legal(1) == ()
    out = r.handle(ev.Tick(CLOSE + 2 * d))
    assert ev.AutoChecked(0, "flop", CLOSE + 2 * d) in out
    assert r.legal(0) == ("play_1x", "fold")
    out = r.handle(ev.Tick(CLOSE + 3 * d))
    assert ev.AutoFolded(0, CLOSE + 3 * d) in out
    settled = {e.seat: e for e in out if isinstance(e, ev.SeatSettled)}
    ante = {x.spot: x for x in settled[0].results}
    assert ante["ante"].outcome is Outcome.LOSE and ante["blind"].outcome is Outcome.LOSE
    assert r.finished and r.state.revealed
    assert kinds(out)[-2:] == ["DeckRevealed", "RoundEnded"]


def test_casino_uth_window_closes_early_when_everyone_decided() -> None:
    r = opened()
    r.handle(ev.PlaceBet(0, "ante", 100, 1))
    r.handle(ev.Tick(CLOSE))
    out = r.handle(ev.Decide(0, "check", CLOSE + 1))
    assert ev.CardsDealt("flop", r.state.board[:3], CLOSE + 1) in out
    with pytest.raises(Rejected):
        r.handle(ev.Decide(0, "play_4x", CLOSE + 2))  # not a flop action
    out = r.handle(ev.Decide(0, "play_2x", CLOSE + 2))
    assert any(isinstance(e, ev.SeatSettled) for e in out)
    play = {x.spot: x for x in r.state.settled[0]}["play"]  # type: ignore[attr-defined]
    assert play.stake_cents == 200


def test_casino_uth_no_bets_no_deal() -> None:
    r = opened()
    out = r.handle(ev.Tick(CLOSE))
    assert "CardsDealt" not in kinds(out) and r.finished


def test_casino_uth_void_refunds_everything() -> None:
    r = opened()
    r.handle(ev.PlaceBet(0, "ante", 100, 1))
    r.handle(ev.PlaceBet(0, "trips", 100, 1))
    r.handle(ev.Tick(CLOSE))
    r.handle(ev.Decide(0, "play_4x", CLOSE + 1))
    r2 = opened()
    r2.handle(ev.PlaceBet(0, "ante", 100, 1))
    r2.handle(ev.PlaceBet(0, "trips", 100, 1))
    r2.handle(ev.Tick(CLOSE))
    out = r2.handle(ev.Void("shuffler fault", CLOSE + 5))
    voided = out[0]
    assert isinstance(voided, ev.RoundVoided)
    ((seat, results),) = voided.refunds
    assert seat == 0 and {x.outcome for x in results} == {Outcome.REFUND}
    assert sum(x.returned_cents for x in results) == 300  # ante + blind + trips
    assert r2.finished
    with pytest.raises(Rejected):
        r2.handle(ev.Void("again", CLOSE + 6))


def test_casino_uth_replay_is_identical() -> None:
    r = opened()
    r.handle(ev.PlaceBet(0, "ante", 100, 1))
    r.handle(ev.PlaceBet(1, "ante", 300, 1))
    r.handle(ev.Tick(CLOSE + 3 * U.decision_ms))
    again = UthRound.replay(CFG, r.history)
    assert again.state == r.state and again.history == r.history


def test_casino_uth_one_seat_per_player() -> None:
    r = opened()
    with pytest.raises(Rejected):
        r.handle(ev.TakeSeat("ann", 1))
    r.handle(ev.TakeSeat("cid", 1))
    assert len(r.state.seats) == 3

"""``electric-audit math {electric,thb,uth} [--json]``."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from electric_audit.cli import main

UTH_KEYS = {"ev_per_ante", "ev_per_ante_decimal", "rtp_ante", "avg_stake", "rtp_total", "sd",
            "p_play_4x", "p_play_3x", "p_play_2x", "p_play_1x", "p_fold", "trips_rtp"}  # fmt: skip
THB_KEYS = {"ev_per_ante", "ev_per_ante_decimal", "rtp_ante", "avg_stake", "rtp_total", "sd",
            "p_call_flop", "p_bet_turn", "p_bet_river"}  # fmt: skip


@pytest.mark.parametrize(("game", "keys"), [("uth", UTH_KEYS), ("thb", THB_KEYS)])
def test_casino_cli_json_keys(
    game: str, keys: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["math", game, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert keys <= set(out)
    ev = Fraction(out["ev_per_ante"])
    assert out["ev_per_ante_decimal"] == f"{float(ev):.7f}"
    assert Fraction(out["exact"]["rtp_ante"]) == 1 + ev
    stake = Fraction(out["exact"]["avg_stake"])
    assert Fraction(out["exact"]["rtp_total"]) == 1 + ev / stake


def test_casino_cli_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["math", "thb"]) == 0
    text = capsys.readouterr().out
    assert "rtp_ante" in text and "0.9796308" in text


def test_casino_cli_electric_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["math", "electric", "--json", "--runs", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    e = Fraction(out["e_multiplier"])
    assert out["e_multiplier_decimal"] == f"{float(e):.7f}"
    assert "reserve_max_drawdown_p99_buy_ins" not in out


def test_math_refuses_stored_figures_of_another_config_version(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    from electric_domain.casino.common import config as casino_config

    real = casino_config.load_config()
    bumped = dataclasses.replace(real, version=real.version + 1)
    monkeypatch.setattr(casino_config, "load_config", lambda path=None: bumped)
    assert main(["math", "uth"]) == 2
    assert "regenerate" in capsys.readouterr().err

"""Config loading and the pay-table math check (docs/design.md §5 pay table; issue 4 item 1)."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from electric_domain.tournament.config import (
    ConfigError,
    default_config,
    load_config,
    parse_config,
)
from electric_math import mathsheet


def _raw() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("electric_domain.tournament.config").joinpath("electric-v1.yaml")
    return dict(yaml.safe_load(text.read_text("utf-8")))


def test_default_config_values() -> None:
    """rule=docs/design.md §5 defaults: tiers, rake, weights, levels, blinds, stack, timers."""
    cfg = default_config()
    assert [(t.buy_in_cents, t.rake_cents) for t in cfg.buy_ins] == [
        (100, 7),
        (500, 35),
        (1000, 70),
        (2500, 175),
        (5000, 350),
    ]
    pt = cfg.pay_table
    assert [(e.multiplier, e.weight, e.levels) for e in pt.entries] == [
        (2, 477_800, 3),
        (3, 359_956, 3),
        (4, 111_133, 3),
        (5, 46_000, 3),
        (10, 5_000, 4),
        (100, 100, 5),
        (1000, 10, 6),
        (10_000, 1, 6),
    ]
    assert pt.expected_multiplier() == Fraction(279, 100)
    assert [e.shares for e in pt.entries[:5]] == [(1,)] * 5
    assert [e.shares for e in pt.entries[5:]] == [(80, 10, 10)] * 3
    assert [(b.small_blind, b.big_blind, b.ante) for b in cfg.blind_levels] == [
        (10, 20, 0),
        (15, 30, 0),
        (20, 40, 5),
        (30, 60, 5),
        (40, 80, 10),
        (50, 100, 10),
    ]
    assert cfg.level_duration_ms == 120_000
    assert cfg.starting_stack == 500
    assert cfg.action_timer_ms == 10_000 and cfg.time_bank_ms == 10_000


@pytest.mark.parametrize(
    ("multiplier", "minutes"),
    [(2, 6), (3, 6), (4, 6), (5, 6), (10, 8), (100, 10), (1000, 12), (10_000, 12)],
)
def test_clock_minutes_per_multiplier(multiplier: int, minutes: int) -> None:
    """rule=seed 000 §1 (levels per multiplier; 6 to 12 minutes before Electric Mode)."""
    assert default_config().clock_ms(multiplier) == minutes * 60_000


def _mutate(path: list[Any], value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(_raw())
    node: Any = raw
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return raw


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["pay_table", "entries", 0, "weight"], 477_801, "weights sum to 1000001"),
        (["pay_table", "entries", 7, "multiplier"], 20_000, "E[multiplier]"),
        (["pay_table", "entries", 0, "weight"], "many", "expected an integer"),
        (["buy_ins", 0, "rake_cents"], 8, "rake_cents: 8 is not rake_bps"),
        (["blind_levels", 0, "big_blind"], 25, "twice the small blind"),
        (["pay_table", "entries", 7, "levels"], 7, "blind_levels defines only 6"),
        (["pay_table", "entries", 5, "shares"], [10, 80, 10], "lower place"),
        (["pay_table", "entries", 5, "shares"], [70, 10, 10, 10], "only 3 seats"),
        (["starting_stack"], _DELETE, "starting_stack: missing"),
        (["surprise"], 1, "surprise: unknown field"),
    ],
)
def test_invalid_configs_fail_with_precise_message(
    path: list[Any], value: Any, message: str
) -> None:
    """rule=docs/design.md §5 math check: weights sum exactly; E = 3×(1−rake) within 0.01%."""
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_config(_mutate(path, value))


def test_rtp_tolerance_boundary() -> None:
    """rule=docs/design.md §5: E[multiplier] within 0.01% passes, just beyond fails."""
    raw = _raw()
    # move 1 weight from 2x to 3x: E rises by 1e-6 (0.36 ppm) -> still within 100 ppm
    raw["pay_table"]["entries"][0]["weight"] -= 1
    raw["pay_table"]["entries"][1]["weight"] += 1
    parse_config(raw)
    raw = _raw()
    # move 300 weights from 2x to 3x: +300e-6 -> 107.5 ppm > 100 ppm
    raw["pay_table"]["entries"][0]["weight"] -= 300
    raw["pay_table"]["entries"][1]["weight"] += 300
    with pytest.raises(ConfigError, match=r"within 100 ppm; deviation is 107\.5 ppm"):
        parse_config(raw)


def test_load_config_from_file_names_the_file(tmp_path: Path) -> None:
    raw = _mutate(["pay_table", "entries", 0, "weight"], 1)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"bad\.yaml: pay_table\.entries: weights sum"):
        load_config(p)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(_raw()))
    assert load_config(good) == default_config()


def test_mathsheet_prints_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert mathsheet.main(["--runs", "50", "--tournaments", "100000"]) == 0
    out = capsys.readouterr().out
    assert "E[multiplier]            = 2.790000" in out
    assert "RTP vs net buy-ins       = 100.0000%" in out
    assert "SD of prize pool         = 10.5733" in out
    assert "max drawdown p99.9" in out


def test_reserve_swing_is_seeded_and_plausible() -> None:
    cfg = default_config()
    a = mathsheet.simulate_reserve(cfg, runs=40, tournaments=200_000, block=1000, seed=7)
    b = mathsheet.simulate_reserve(cfg, runs=40, tournaments=200_000, block=1000, seed=7)
    assert (a.p50, a.p999, a.worst) == (b.p50, b.p999, b.worst)
    assert 0 < a.p50 <= a.p99 <= a.p999 <= a.worst

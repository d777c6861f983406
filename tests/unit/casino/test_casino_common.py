"""Casino config validation, game numbers, rounding."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from electric_domain.casino.common import config as cc
from electric_domain.casino.common.game_number import (
    game_number,
    next_game_number,
    start_time_text,
)
from electric_domain.casino.common.money import win_amount

RAW: dict[str, Any] = yaml.safe_load(
    (Path(cc.__file__).parent / cc.DEFAULT_CONFIG_NAME).read_text("utf-8")
)


def test_casino_packaged_config_loads() -> None:
    cfg = cc.load_config()
    assert cfg.version == 1
    assert [str(r) if r else None for r in cfg.uth.blind_pays] == [
        None, None, None, None, "1:1", "3:2", "3:1", "10:1", "50:1", "500:1"]  # fmt: skip
    assert cfg.thb.ante_pays_from == cc.CATEGORY_NAMES.index("straight")
    assert cfg.uth.betting_ms == cfg.uth.green_ms + cfg.uth.yellow_ms


def _broken(path: tuple[str, ...], value: object) -> dict[str, Any]:
    raw = copy.deepcopy(RAW)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("version",), 0, "version"),
        (("rounding",), "bankers", "rounding"),
        (("thb", "ante_min_cents"), -5, "thb.ante_min_cents"),
        (("thb", "ante_max_cents"), 50, "ante_min_cents"),
        (("thb", "ante_pays_from"), "great_hand", "ante_pays_from"),
        (("uth", "green_ms"), "soon", "uth.green_ms"),
        (("uth", "blind_pays", "flush"), "3-2", "blind_pays.flush"),
        (("uth", "blind_pays", "flush"), "7:3", "n:1 and n:2"),
        (("uth", "trips_pays", "straight"), "0:1", "positive"),
        (("uth", "trips_pays", "full_house"), "2:1", "pays less"),
        (("uth", "blind_pays", "five_aces"), "9:1", "unknown hand category"),
        (("uth", "dealer_qualifier"), None, "dealer_qualifier"),
    ],
)
def test_casino_config_rejects(path: tuple[str, ...], value: object, needle: str) -> None:
    with pytest.raises(cc.ConfigError, match=needle):
        cc.parse_config(_broken(path, value))


def test_casino_config_file_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(_broken(("uth", "decision_ms"), 9000)), "utf-8")
    assert cc.load_config(p).uth.decision_ms == 9000
    p.write_text("- not a mapping\n", "utf-8")
    with pytest.raises(cc.ConfigError):
        cc.load_config(p)


def test_casino_game_numbers_are_gmt_time_and_unique() -> None:
    t = 1_764_560_531_250  # 2025-12-01 03:42:11.250 GMT
    first = next_game_number(t, "T1", None)
    assert first == "20251201-034211-T1-1"
    assert start_time_text(first) == "03:42:11"
    second = next_game_number(t + 500, "T1", first)  # same second
    assert second == "20251201-034211-T1-2"
    assert next_game_number(t + 1000, "T1", second) == "20251201-034212-T1-1"
    assert next_game_number(t, "T2", second) == "20251201-034211-T2-1"
    with pytest.raises(ValueError):
        game_number(t, "T-1")


@pytest.mark.parametrize(
    ("stake", "ratio", "win"),
    [(100, cc.Ratio(3, 2), 150), (25, cc.Ratio(3, 2), 37), (1, cc.Ratio(3, 2), 1),
     (3, cc.Ratio(500, 1), 1500), (7, cc.Ratio(1, 1), 7)],
)  # fmt: skip
def test_casino_floor_cent_rounding(stake: int, ratio: cc.Ratio, win: int) -> None:
    assert win_amount(stake, ratio) == win

"""Versioned casino round configuration: limits, windows and pay tables, validated.

:func:`parse_config` is pure (a mapping in, a :class:`CasinoConfig` out or a
:class:`ConfigError` naming the field). :func:`load_config` reads the YAML (default: the
packaged ``casino-rounds-v1.yaml``) and is the only function here that touches files.

Hand categories are named ``high_card`` … ``straight_flush`` plus ``royal_flush`` (the top
straight flush), index ``0..9`` (:data:`CATEGORY_NAMES`); a pay table maps a category to a
:class:`Ratio`. Categories not listed push (Blind) or lose (Trips).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG_NAME = "casino-rounds-v1.yaml"
CATEGORY_NAMES = (
    "high_card",
    "pair",
    "two_pair",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
)
ROUNDING_RULES = ("floor_cent",)


class ConfigError(ValueError):
    """The configuration is malformed; the message names the offending field."""


@dataclass(frozen=True, slots=True)
class Ratio:
    """A payout ratio ``win:stake`` (``3:2`` pays 3 for every 2 staked)."""

    win: int
    stake: int

    @property
    def value(self) -> Fraction:
        return Fraction(self.win, self.stake)

    def __str__(self) -> str:
        return f"{self.win}:{self.stake}"


@dataclass(frozen=True, slots=True)
class ThbConfig:
    """Texas Hold'em Bonus table settings."""

    ante_min_cents: int
    ante_max_cents: int
    flop_multiple: int
    turn_multiple: int
    river_multiple: int
    ante_pays_from: int  # category index


@dataclass(frozen=True, slots=True)
class UthConfig:
    """Live Ultimate Texas Hold'em table settings."""

    ante_min_cents: int
    ante_max_cents: int
    trips_min_cents: int
    trips_max_cents: int
    green_ms: int
    yellow_ms: int
    decision_ms: int
    dealer_qualifier: int  # category index
    blind_pays: tuple[Ratio | None, ...]  # by category index; None = push
    trips_pays: tuple[Ratio | None, ...]  # by category index; None = loses

    @property
    def betting_ms(self) -> int:
        return self.green_ms + self.yellow_ms


@dataclass(frozen=True, slots=True)
class CasinoConfig:
    version: int
    rounding: str
    thb: ThbConfig
    uth: UthConfig


def _int(m: Mapping[str, Any], key: str, where: str, minimum: int = 0) -> int:
    v = m.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise ConfigError(f"{where}.{key}: an integer >= {minimum} is required, got {v!r}")
    return v


def _section(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = raw.get(key)
    if not isinstance(v, Mapping):
        raise ConfigError(f"{key}: a mapping is required")
    return v


def _category(v: object, where: str) -> int:
    if v not in CATEGORY_NAMES:
        raise ConfigError(f"{where}: unknown hand category {v!r}")
    return CATEGORY_NAMES.index(str(v))


def parse_ratio(text: object, where: str) -> Ratio:
    """``"3:2"`` → ``Ratio(3, 2)``; both sides positive integers."""
    parts = str(text).split(":")
    try:
        win, stake = (int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"{where}: a ratio like '3:2' is required, got {text!r}") from None
    if win <= 0 or stake <= 0:
        raise ConfigError(f"{where}: ratio sides must be positive, got {text!r}")
    return Ratio(win, stake)


def _pay_table(m: Mapping[str, Any], key: str, where: str) -> tuple[Ratio | None, ...]:
    table = _section(m, key)
    out: list[Ratio | None] = [None] * len(CATEGORY_NAMES)
    for name, text in table.items():
        cat = _category(name, f"{where}.{key}")
        out[cat] = parse_ratio(text, f"{where}.{key}.{name}")
        if out[cat] is not None and out[cat].stake not in (1, 2):  # type: ignore[union-attr]
            raise ConfigError(f"{where}.{key}.{name}: only n:1 and n:2 ratios are supported")
    # a stronger hand never pays less than a weaker one
    best = Fraction(0)
    for cat, ratio in enumerate(out):
        value = ratio.value if ratio is not None else Fraction(0)
        if value < best:
            raise ConfigError(f"{where}.{key}: {CATEGORY_NAMES[cat]} pays less than a weaker hand")
        best = value
    return tuple(out)


def _limits(m: Mapping[str, Any], lo: str, hi: str, where: str) -> tuple[int, int]:
    a, b = _int(m, lo, where, 1), _int(m, hi, where, 1)
    if a > b:
        raise ConfigError(f"{where}.{lo}: must not exceed {hi}")
    return a, b


def parse_config(raw: Mapping[str, Any]) -> CasinoConfig:
    """Validate a parsed YAML mapping."""
    version = _int(raw, "version", "", 1)
    rounding = raw.get("rounding")
    if rounding not in ROUNDING_RULES:
        raise ConfigError(f"rounding: one of {ROUNDING_RULES} is required, got {rounding!r}")
    t = _section(raw, "thb")
    t_lo, t_hi = _limits(t, "ante_min_cents", "ante_max_cents", "thb")
    thb = ThbConfig(
        t_lo,
        t_hi,
        _int(t, "flop_multiple", "thb", 1),
        _int(t, "turn_multiple", "thb", 1),
        _int(t, "river_multiple", "thb", 1),
        _category(t.get("ante_pays_from"), "thb.ante_pays_from"),
    )
    u = _section(raw, "uth")
    u_lo, u_hi = _limits(u, "ante_min_cents", "ante_max_cents", "uth")
    tr_lo, tr_hi = _limits(u, "trips_min_cents", "trips_max_cents", "uth")
    uth = UthConfig(
        u_lo,
        u_hi,
        tr_lo,
        tr_hi,
        _int(u, "green_ms", "uth", 1),
        _int(u, "yellow_ms", "uth", 0),
        _int(u, "decision_ms", "uth", 1),
        _category(u.get("dealer_qualifier"), "uth.dealer_qualifier"),
        _pay_table(u, "blind_pays", "uth"),
        _pay_table(u, "trips_pays", "uth"),
    )
    return CasinoConfig(version, str(rounding), thb, uth)


def load_config(path: str | Path | None = None) -> CasinoConfig:
    """Load and validate a YAML file (default: the packaged file)."""
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_CONFIG_NAME).read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    raw = yaml.safe_load(text)
    if not isinstance(raw, Mapping):
        raise ConfigError("the configuration must be a mapping")
    return parse_config(raw)

"""Versioned Electric Poker configuration: typed model, validation, and loading.

`parse_config` is pure (a mapping in, a validated `TournamentConfig` out, or a `ConfigError`
naming the offending field). `load_config` reads a YAML file (default: the packaged
``electric-v1.yaml``); it is the only function here that touches the file system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from electric_domain.tournament.schedule import ButtonRule

DEFAULT_CONFIG_NAME = "electric-v1.yaml"


class ConfigError(ValueError):
    """A configuration file is malformed or fails a math check; the message names the field."""


@dataclass(frozen=True, slots=True)
class BuyInTier:
    """One buy-in level: the gross amount a player pays and the house's part of it (cents)."""

    buy_in_cents: int
    rake_cents: int

    @property
    def net_cents(self) -> int:
        return self.buy_in_cents - self.rake_cents


@dataclass(frozen=True, slots=True)
class PayTableEntry:
    """One Prize Pool Multiplier: its weight, its blind levels and the shares of places 1..k."""

    multiplier: int
    weight: int
    levels: int
    shares: tuple[int, ...]

    @property
    def positions_paid(self) -> int:
        return len(self.shares)


@dataclass(frozen=True, slots=True)
class BlindLevel:
    """Forced bets of one level, in chips."""

    small_blind: int
    big_blind: int
    ante: int


@dataclass(frozen=True, slots=True)
class PayTable:
    """Weighted multipliers; weights sum exactly to ``weight_total``."""

    weight_total: int
    rtp_tolerance_ppm: int
    entries: tuple[PayTableEntry, ...]

    def entry(self, multiplier: int) -> PayTableEntry:
        for e in self.entries:
            if e.multiplier == multiplier:
                return e
        raise KeyError(f"multiplier {multiplier} is not in the pay table")

    def probability(self, multiplier: int) -> Fraction:
        return Fraction(self.entry(multiplier).weight, self.weight_total)

    def expected_multiplier(self) -> Fraction:
        return sum(
            (Fraction(e.multiplier * e.weight, self.weight_total) for e in self.entries),
            Fraction(0),
        )

    def second_moment(self) -> Fraction:
        return sum(
            (Fraction(e.multiplier**2 * e.weight, self.weight_total) for e in self.entries),
            Fraction(0),
        )


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """Everything configurable about an Electric Poker sit-and-go (validated)."""

    version: str
    seats: int
    rake_bps: int
    buy_ins: tuple[BuyInTier, ...]
    pay_table: PayTable
    blind_levels: tuple[BlindLevel, ...]
    level_duration_ms: int
    starting_stack: int
    action_timer_ms: int
    time_bank_ms: int
    sit_out_after_consecutive_timeouts: int
    #: How the button moves between hands (`schedule.ButtonRule`; default seed rule 11).
    button_rule: ButtonRule = ButtonRule.NEXT_PLAYER

    @property
    def rake(self) -> Fraction:
        return Fraction(self.rake_bps, 10_000)

    def tier(self, buy_in_cents: int) -> BuyInTier:
        for t in self.buy_ins:
            if t.buy_in_cents == buy_in_cents:
                return t
        raise KeyError(f"no buy-in tier of {buy_in_cents} cents")

    def levels_for(self, multiplier: int) -> int:
        return self.pay_table.entry(multiplier).levels

    def clock_ms(self, multiplier: int) -> int:
        """Tournament clock until Electric Mode (levels × level length)."""
        return self.levels_for(multiplier) * self.level_duration_ms

    def prize_pool_cents(self, multiplier: int, buy_in_cents: int) -> int:
        self.tier(buy_in_cents)
        return multiplier * buy_in_cents


# ---------------------------------------------------------------------------------------------
# parsing helpers: each names the path of the field it checks


def _req(m: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in m:
        raise ConfigError(f"{path}{key}: missing")
    return m[key]


def _int(value: Any, path: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{path}: must be >= {minimum}, got {value}")
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: expected a non-empty list")
    return value


def _no_extra(m: Mapping[str, Any], allowed: set[str], path: str) -> None:
    extra = sorted(set(m) - allowed)
    if extra:
        raise ConfigError(f"{path}{extra[0]}: unknown field")


_TOP = {
    "version",
    "seats",
    "rake_bps",
    "buy_ins",
    "pay_table",
    "blind_levels",
    "level_duration_ms",
    "starting_stack",
    "action_timer_ms",
    "time_bank_ms",
    "sit_out_after_consecutive_timeouts",
    "button_rule",
}


def parse_config(raw: Any) -> TournamentConfig:
    """Validate a decoded configuration document; raise `ConfigError` naming the bad field."""
    m = _mapping(raw, "config")
    _no_extra(m, _TOP, "")
    version = _req(m, "version", "")
    if not isinstance(version, str) or not version:
        raise ConfigError("version: expected a non-empty string")
    seats = _int(_req(m, "seats", ""), "seats", minimum=2)
    rake_bps = _int(_req(m, "rake_bps", ""), "rake_bps", minimum=0)
    if rake_bps >= 10_000:
        raise ConfigError(f"rake_bps: must be < 10000, got {rake_bps}")

    tiers: list[BuyInTier] = []
    for i, t in enumerate(_list(_req(m, "buy_ins", ""), "buy_ins")):
        p = f"buy_ins[{i}]."
        tm = _mapping(t, p[:-1])
        _no_extra(tm, {"buy_in_cents", "rake_cents"}, p)
        b = _int(_req(tm, "buy_in_cents", p), p + "buy_in_cents", minimum=1)
        r = _int(_req(tm, "rake_cents", p), p + "rake_cents", minimum=0)
        if Fraction(r) != Fraction(b * rake_bps, 10_000):
            raise ConfigError(
                f"{p}rake_cents: {r} is not rake_bps {rake_bps} of {b} cents "
                f"(expected {Fraction(b * rake_bps, 10_000)})"
            )
        if any(x.buy_in_cents == b for x in tiers):
            raise ConfigError(f"{p}buy_in_cents: duplicate tier {b}")
        tiers.append(BuyInTier(b, r))

    levels_raw = _list(_req(m, "blind_levels", ""), "blind_levels")
    levels: list[BlindLevel] = []
    for i, lv in enumerate(levels_raw):
        p = f"blind_levels[{i}]."
        lm = _mapping(lv, p[:-1])
        _no_extra(lm, {"small_blind", "big_blind", "ante"}, p)
        sb = _int(_req(lm, "small_blind", p), p + "small_blind", minimum=1)
        bb = _int(_req(lm, "big_blind", p), p + "big_blind", minimum=1)
        ante = _int(_req(lm, "ante", p), p + "ante", minimum=0)
        if bb != 2 * sb:
            raise ConfigError(f"{p}big_blind: must be twice the small blind ({2 * sb}), got {bb}")
        if levels and (bb < levels[-1].big_blind):
            raise ConfigError(f"{p}big_blind: levels must not decrease")
        levels.append(BlindLevel(sb, bb, ante))

    pt = _mapping(_req(m, "pay_table", ""), "pay_table")
    _no_extra(pt, {"weight_total", "rtp_tolerance_ppm", "entries"}, "pay_table.")
    total = _int(_req(pt, "weight_total", "pay_table."), "pay_table.weight_total", minimum=1)
    tol = _int(
        _req(pt, "rtp_tolerance_ppm", "pay_table."), "pay_table.rtp_tolerance_ppm", minimum=0
    )
    entries: list[PayTableEntry] = []
    for i, e in enumerate(_list(_req(pt, "entries", "pay_table."), "pay_table.entries")):
        p = f"pay_table.entries[{i}]."
        em = _mapping(e, p[:-1])
        _no_extra(em, {"multiplier", "weight", "levels", "shares"}, p)
        mult = _int(_req(em, "multiplier", p), p + "multiplier", minimum=1)
        w = _int(_req(em, "weight", p), p + "weight", minimum=1)
        lv_count = _int(_req(em, "levels", p), p + "levels", minimum=1)
        if lv_count > len(levels):
            raise ConfigError(
                f"{p}levels: {lv_count} levels but blind_levels defines only {len(levels)}"
            )
        shares_raw = _list(_req(em, "shares", p), p + "shares")
        shares = tuple(_int(s, f"{p}shares[{j}]", minimum=1) for j, s in enumerate(shares_raw))
        if len(shares) > seats:
            raise ConfigError(f"{p}shares: {len(shares)} places paid but only {seats} seats")
        if list(shares) != sorted(shares, reverse=True):
            raise ConfigError(f"{p}shares: a lower place may not pay more than a higher one")
        if entries and mult <= entries[-1].multiplier:
            raise ConfigError(f"{p}multiplier: multipliers must be strictly increasing")
        entries.append(PayTableEntry(mult, w, lv_count, shares))
    wsum = sum(e.weight for e in entries)
    if wsum != total:
        raise ConfigError(
            f"pay_table.entries: weights sum to {wsum}, not weight_total {total} "
            f"(off by {wsum - total:+d})"
        )
    table = PayTable(total, tol, tuple(entries))
    expected = table.expected_multiplier()
    target = seats * (1 - Fraction(rake_bps, 10_000))
    deviation = abs(expected - target) / target
    if deviation > Fraction(tol, 1_000_000):
        raise ConfigError(
            f"pay_table: E[multiplier] = {float(expected):.6f} ({expected}) but must equal "
            f"seats × (1 − rake) = {float(target):.6f} within {tol} ppm; "
            f"deviation is {float(deviation) * 1e6:.1f} ppm "
            f"(RTP {float(expected / target) * 100:.4f}% of net buy-ins)"
        )

    cfg = TournamentConfig(
        version=version,
        seats=seats,
        rake_bps=rake_bps,
        buy_ins=tuple(tiers),
        pay_table=table,
        blind_levels=tuple(levels),
        level_duration_ms=_int(_req(m, "level_duration_ms", ""), "level_duration_ms", minimum=1),
        starting_stack=_int(_req(m, "starting_stack", ""), "starting_stack", minimum=1),
        action_timer_ms=_int(_req(m, "action_timer_ms", ""), "action_timer_ms", minimum=1),
        time_bank_ms=_int(_req(m, "time_bank_ms", ""), "time_bank_ms", minimum=0),
        sit_out_after_consecutive_timeouts=_int(
            _req(m, "sit_out_after_consecutive_timeouts", ""),
            "sit_out_after_consecutive_timeouts",
            minimum=1,
        ),
        button_rule=_button_rule(m.get("button_rule", ButtonRule.NEXT_PLAYER.value)),
    )
    if cfg.starting_stack < levels[0].big_blind:
        raise ConfigError("starting_stack: smaller than the first big blind")
    return cfg


def _button_rule(value: Any) -> ButtonRule:
    choices = [r.value for r in ButtonRule]
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"button_rule: expected one of {choices}, got {value!r}")
    return ButtonRule(value)


def load_config(path: str | Path | None = None) -> TournamentConfig:
    """Read and validate a YAML configuration (default: the packaged electric-v1)."""
    if path is None:
        text = resources.files(__name__).joinpath(DEFAULT_CONFIG_NAME).read_text("utf-8")
        where = DEFAULT_CONFIG_NAME
    else:
        text = Path(path).read_text("utf-8")
        where = str(path)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from exc
    try:
        return parse_config(raw)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


_DEFAULT: TournamentConfig | None = None


def default_config() -> TournamentConfig:
    """The packaged electric-v1 configuration (parsed once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_config()
    return _DEFAULT


__all__ = [
    "BlindLevel",
    "BuyInTier",
    "ConfigError",
    "PayTable",
    "PayTableEntry",
    "TournamentConfig",
    "default_config",
    "load_config",
    "parse_config",
]

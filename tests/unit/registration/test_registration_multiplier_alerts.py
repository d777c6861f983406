"""Multiplier monitoring (DESIGN §5): the draw counters, the configured probabilities and the
deviation test of deploy/prometheus/alerts.yml (implemented in Python by
``multiplier_deviation_alerts``; the infra static test checks the rules use the same
thresholds and formula)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from electric_domain.lobby import tier_id_for
from electric_domain.tournament import default_config
from electric_registration.metrics import (
    MIN_VARIANCE,
    RARE_MIN_DRAWS,
    Z_LIMIT,
    RegistrationMetrics,
    multiplier_deviation_alerts,
)
from prometheus_client import CollectorRegistry

CONFIG = default_config()
PAY_TABLE = CONFIG.pay_table
FILLED = "electric_registration_tables_filled_total"
PROBABILITIES = {e.multiplier: e.weight / PAY_TABLE.weight_total for e in PAY_TABLE.entries}


def _sample(n: int, probabilities: dict[int, float], seed: int) -> dict[int, int]:
    rng = random.Random(seed)
    multipliers = list(probabilities)
    drawn = rng.choices(multipliers, weights=[probabilities[m] for m in multipliers], k=n)
    return {m: drawn.count(m) for m in multipliers}


def test_configured_probabilities_and_draw_counters_are_exported() -> None:
    registry = CollectorRegistry()
    metrics = RegistrationMetrics(registry)
    metrics.configure(CONFIG)
    total = Fraction(0)
    for entry in PAY_TABLE.entries:
        value = registry.get_sample_value(
            "electric_registration_multiplier_configured_probability",
            {"multiplier": str(entry.multiplier)},
        )
        assert value == pytest.approx(float(PAY_TABLE.probability(entry.multiplier)), rel=1e-12)
        total += Fraction(value).limit_denominator(PAY_TABLE.weight_total)
        for tier in CONFIG.buy_ins:
            labels = {"tier": tier_id_for(tier.buy_in_cents), "multiplier": str(entry.multiplier)}
            # Present at 0 before the first draw, so increase() counts that draw.
            assert registry.get_sample_value(FILLED, labels) == 0
    assert total == 1
    metrics.filled.labels(tier_id_for(500), "10").inc()
    labels = {"tier": "electric-500", "multiplier": "10"}
    assert registry.get_sample_value(FILLED, labels) == 1


def test_exact_configured_frequencies_fire_nothing() -> None:
    draws = {e.multiplier: e.weight for e in PAY_TABLE.entries}  # one million tournaments
    assert multiplier_deviation_alerts(draws, PROBABILITIES) == {}


@pytest.mark.parametrize("seed", range(5))
def test_draws_from_the_configured_table_fire_nothing(seed: int) -> None:
    draws = _sample(200_000, PROBABILITIES, seed)
    assert multiplier_deviation_alerts(draws, PROBABILITIES) == {}


def test_no_draws_fire_nothing() -> None:
    assert multiplier_deviation_alerts({}, PROBABILITIES) == {}


def test_a_skewed_draw_fires_the_deviation_alert() -> None:
    # 2x drawn 50% of the time instead of 47.78%, taken from 3x: z ≈ 6.3 for 2x at n = 20,000.
    skewed = dict(PROBABILITIES)
    skewed[2] += 0.0222
    skewed[3] -= 0.0222
    draws = _sample(20_000, skewed, seed=7)
    fired = multiplier_deviation_alerts(draws, PROBABILITIES)
    assert fired.get(2) == "MultiplierFrequencyDeviation"
    assert fired.get(3) == "MultiplierFrequencyDeviation"
    # The same skew on few tournaments is not significant yet.
    assert multiplier_deviation_alerts(_sample(2_000, skewed, seed=7), PROBABILITIES) == {}


def test_low_counts_are_guarded() -> None:
    # Ten draws, all 2x: far from the table in ratio, but n·p·(1−p) = 2.5 < 9 and 2x is not
    # rare, so nothing fires (the normal approximation does not hold on so few draws).
    assert multiplier_deviation_alerts({2: 10}, PROBABILITIES) == {}
    n = 10
    variance = n * PROBABILITIES[2] * (1 - PROBABILITIES[2])
    assert variance < MIN_VARIANCE


def test_rare_multiplier_excess() -> None:
    base = {e.multiplier: e.weight // 10 for e in PAY_TABLE.entries}  # 100,000 tournaments
    base[10_000] = 0
    # One 10,000x in 100,000 tournaments (0.1 expected): luck, not an alert.
    assert multiplier_deviation_alerts({**base, 10_000: 1}, PROBABILITIES) == {}
    # RARE_MIN_DRAWS of them: P ≈ 1e-7 under the table: the draw is broken.
    fired = multiplier_deviation_alerts({**base, 10_000: RARE_MIN_DRAWS}, PROBABILITIES)
    assert fired == {10_000: "RareMultiplierExcess"}
    # Too few of a rare multiplier is not alerted (its absence is expected).
    assert multiplier_deviation_alerts({**base, 1_000: 0}, PROBABILITIES) == {}


def test_threshold_is_a_z_score() -> None:
    # Just below the limit does not fire; just above does (|z| > Z_LIMIT).
    n = 10_000
    p = PROBABILITIES[2]
    sd = (n * p * (1 - p)) ** 0.5
    probs = {2: p, 3: 1 - p}
    k = n * p + (Z_LIMIT - 0.01) * sd
    assert multiplier_deviation_alerts({2: k, 3: n - k}, probs) == {}
    k = n * p + (Z_LIMIT + 0.01) * sd
    assert multiplier_deviation_alerts({2: k, 3: n - k}, probs) == {
        2: "MultiplierFrequencyDeviation",
        3: "MultiplierFrequencyDeviation",
    }

"""Provably fair multiplier draw (DESIGN §5 "committed before they matter"; issue 4 item 2)."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from electric_domain.tournament.config import default_config
from electric_domain.tournament.fairness import (
    MULTIPLIER_LABEL,
    Drbg,
    draw_multiplier,
    verify_multiplier,
    weighted_index,
)


def test_drbg_matches_documented_construction() -> None:
    """rule=documented DRBG: HMAC-SHA256(seed, label || u64be(i)) blocks."""
    seed = bytes(range(32))
    expected = b"".join(
        hmac.new(seed, MULTIPLIER_LABEL + i.to_bytes(8, "big"), hashlib.sha256).digest()
        for i in range(3)
    )
    assert Drbg(seed, MULTIPLIER_LABEL).read(96) == expected


def test_draw_is_first_accepted_word_mod_total() -> None:
    """rule=no modulo bias: the first 32-bit word below the limit, mod weight_total."""
    table = default_config().pay_table
    for k in range(200):
        seed = hashlib.sha256(k.to_bytes(4, "big")).digest()
        stream = Drbg(seed, MULTIPLIER_LABEL).read(64)
        limit = (1 << 32) - ((1 << 32) % 1_000_000)
        words = [int.from_bytes(stream[i : i + 4], "big") for i in range(0, 64, 4)]
        u = next(w for w in words if w < limit) % 1_000_000
        d = draw_multiplier(seed, table)
        assert d.u == u
        assert (
            d.multiplier
            == table.entries[weighted_index(tuple(e.weight for e in table.entries), u)].multiplier
        )


@pytest.mark.parametrize(
    ("u", "multiplier"),
    [
        (0, 2),
        (477_799, 2),
        (477_800, 3),
        (837_755, 3),
        (837_756, 4),
        (948_888, 4),
        (948_889, 5),
        (994_888, 5),
        (994_889, 10),
        (999_888, 10),
        (999_889, 100),
        (999_988, 100),
        (999_989, 1000),
        (999_998, 1000),
        (999_999, 10_000),
    ],
)
def test_weight_boundaries(u: int, multiplier: int) -> None:
    """rule=docs/design.md §5 pay table: each multiplier owns exactly `weight` values of u."""
    table = default_config().pay_table
    idx = weighted_index(tuple(e.weight for e in table.entries), u)
    assert table.entries[idx].multiplier == multiplier


def test_auditor_verify() -> None:
    """rule=docs/design.md §5: commitment published at table open, seed revealed at fill."""
    table = default_config().pay_table
    seed = bytes.fromhex("11" * 32)
    d = draw_multiplier(seed, table)
    assert d.commitment == hashlib.sha256(seed).hexdigest()
    assert verify_multiplier(d.commitment, d.seed_hex, d.multiplier, table)
    wrong = next(e.multiplier for e in table.entries if e.multiplier != d.multiplier)
    assert not verify_multiplier(d.commitment, d.seed_hex, wrong, table)
    assert not verify_multiplier("00" * 32, d.seed_hex, d.multiplier, table)
    assert not verify_multiplier(d.commitment, "zz", d.multiplier, table)
    assert not verify_multiplier(d.commitment, "11" * 31, d.multiplier, table)


def test_draw_frequencies_match_weights() -> None:
    """rule=docs/design.md §5 monitored frequencies: 20,000 draws vs the weights (chi-square)."""
    from scipy.stats import chisquare

    table = default_config().pay_table
    counts = dict.fromkeys((e.multiplier for e in table.entries), 0)
    for k in range(20_000):
        counts[
            draw_multiplier(hashlib.sha256(b"f" + k.to_bytes(4, "big")).digest(), table).multiplier
        ] += 1
    # pool the rare multipliers (expected counts < 5) into one bin
    obs = [
        counts[2],
        counts[3],
        counts[4],
        counts[5],
        sum(counts[m] for m in (10, 100, 1000, 10_000)),
    ]
    exp = [20_000 * w / 1_000_000 for w in (477_800, 359_956, 111_133, 46_000, 5_111)]
    assert chisquare(obs, exp).pvalue > 1e-4

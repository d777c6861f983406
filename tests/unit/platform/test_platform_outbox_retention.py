"""ELECTRIC_OUTBOX_RETENTION_HOURS (issue 18): how long published outbox rows are kept."""

from __future__ import annotations

import pytest
from electric_platform.config import ConfigError, load_config


def test_default_is_a_day_and_per_service_overrides_win() -> None:
    assert load_config("table", {}).outbox_retention_hours == 24.0
    env = {"ELECTRIC_OUTBOX_RETENTION_HOURS": "6", "ELECTRIC_WALLET_OUTBOX_RETENTION_HOURS": "0"}
    assert load_config("table", env).outbox_retention_hours == 6.0
    assert load_config("wallet", env).outbox_retention_hours == 0.0  # 0 = keep them


@pytest.mark.parametrize("bad", ["-1", "soon", "inf", "nan"])
def test_bad_values_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="ELECTRIC_OUTBOX_RETENTION_HOURS"):
        load_config("payout", {"ELECTRIC_OUTBOX_RETENTION_HOURS": bad})

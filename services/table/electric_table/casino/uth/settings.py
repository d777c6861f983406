"""The UTH table settings from the table process's environment: window lengths and the
pause between rounds (milliseconds; unset = the casino configuration's)."""

from __future__ import annotations

import dataclasses

from electric_domain.casino.common.config import CasinoConfig
from electric_platform.config import env_ms

#: Window lengths from the environment (ms); unset = the casino configuration's.
GREEN_ENV, YELLOW_ENV = "ELECTRIC_TABLE_UTH_GREEN_MS", "ELECTRIC_TABLE_UTH_YELLOW_MS"
DECISION_ENV, PAUSE_ENV = "ELECTRIC_TABLE_UTH_DECISION_MS", "ELECTRIC_TABLE_UTH_PAUSE_MS"
DEFAULT_PAUSE_MS = 3000


def uth_config(config: CasinoConfig, environ: dict[str, str] | None = None) -> CasinoConfig:
    """``config`` with the UTH windows overridden from the environment."""
    u = config.uth
    green, yellow, decision = (
        env_ms(var, default, environ)
        for var, default in (
            (GREEN_ENV, u.green_ms),
            (YELLOW_ENV, u.yellow_ms),
            (DECISION_ENV, u.decision_ms),
        )
    )
    if (green, yellow, decision) == (u.green_ms, u.yellow_ms, u.decision_ms):
        return config
    timed = dataclasses.replace(u, green_ms=green, yellow_ms=yellow, decision_ms=decision)
    return dataclasses.replace(config, uth=timed)


def pause_ms(environ: dict[str, str] | None = None) -> int:
    return env_ms(PAUSE_ENV, DEFAULT_PAUSE_MS, environ)


__all__ = ["DEFAULT_PAUSE_MS", "pause_ms", "uth_config"]

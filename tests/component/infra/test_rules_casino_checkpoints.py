"""The casino RTP and checkpoint rules of deploy/prometheus/alerts.yml against the code they
read (issue 15). Their behaviour is in deploy/prometheus/alerts_test.yml (promtool).

- The casino z-score's per-game constants are sd / avg_stake of the exact figures
  (apps/electric_math/data/<game>.json), for every game the table service reports.
- The checkpoint metrics the panel and ``CheckpointsStale`` read follow the writer: present
  (at 0) before the first checkpoint, then the signed checkpoint's position, sequence and
  time; a pass over an idle store moves the pass time only; a failing pass is counted.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from electric_eventlog import ANY, EventStore, InProcessBus, create_engine, migrate
from electric_eventlog.checkpoint_writer import CheckpointWriter
from electric_eventlog.testing import event
from electric_platform.checkpointing import CheckpointCollector
from electric_table.casino.metrics import GAMES
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parents[3]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"


def _rules() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(ALERTS.read_text())
    return {
        str(rule.get("alert") or rule["record"]): rule
        for group in data["groups"]
        for rule in group["rules"]
    }


def test_casino_sd_constants_are_the_exact_math() -> None:
    expr = " ".join(str(_rules()["electric:casino_return_sd_per_stake"]["expr"]).split())
    constants = {
        game: float(value)
        for game, value in re.findall(
            r'0 \* electric:casino_theoretical_rtp\{game="(\w+)"\} \+ ([0-9.]+)', expr
        )
    }
    assert set(constants) == set(GAMES), expr
    for game in GAMES:
        doc = json.loads((ROOT / "apps/electric_math/data" / f"{game}.json").read_text())
        exact = doc["figures"]["exact"]
        sd = math.sqrt(Fraction(exact["variance"])) / float(Fraction(exact["avg_stake"]))
        assert constants[game] == pytest.approx(sd, abs=1e-5), game


def test_casino_alert_thresholds() -> None:
    rules = _rules()
    alert = " ".join(str(rules["CasinoRtpAboveTheoretical"]["expr"]).split())
    assert alert.startswith("electric:casino_rtp:zscore1d > 5 ")
    assert "electric:casino_rounds_settled:increase1d >= 10000" in alert
    assert "electric:casino_theoretical_rtp) > 0.005" in alert
    z = " ".join(str(rules["electric:casino_rtp:zscore1d"]["expr"]).split())
    assert z == (
        "(electric:casino_rtp:ratio1d - on (game) electric:casino_theoretical_rtp)"
        " * on (game) sqrt(electric:casino_rounds_settled:increase1d)"
        " / on (game) electric:casino_return_sd_per_stake"
    )


def _sample(registry: CollectorRegistry, name: str) -> float:
    value = registry.get_sample_value(name)
    assert value is not None, name
    return value


class _FailingBus(InProcessBus):
    async def publish(self, messages: Any) -> None:
        raise ConnectionError("bus away")


def test_checkpoint_metrics_follow_the_writer(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/store.db")
    migrate(engine)
    store = EventStore(engine, producer="wallet")
    now = [1_000_000_000_000_000]  # micros
    writer = CheckpointWriter(
        engine,
        InProcessBus(),
        producer="wallet",
        kid="k1",
        private_key=Ed25519PrivateKey.generate(),
        interval=30.0,
        clock=lambda: now[0],
    )
    registry = CollectorRegistry()
    registry.register(CheckpointCollector(writer))
    # Before any checkpoint: every series is there (panels have data), at 0; the pass time
    # is the writer's start (the stale alert counts from there).
    assert _sample(registry, "electric_checkpoint_last_position") == 0
    assert _sample(registry, "electric_checkpoint_last_sequence") == 0
    assert _sample(registry, "electric_checkpoint_last_timestamp_seconds") == 0
    assert _sample(registry, "electric_checkpoint_last_pass_timestamp_seconds") == 1e9
    assert _sample(registry, "electric_checkpoint_interval_seconds") == 30
    assert _sample(registry, "electric_checkpoints_written_total") == 0
    assert _sample(registry, "electric_checkpoint_failures_total") == 0

    with engine.begin() as conn:
        store.append(conn, "s1", ANY, [event("a"), event("b")])
        store.append(conn, "s2", ANY, [event("c")])
    now[0] += 5_000_000
    (record,) = asyncio.run(writer.write_once())
    assert record.global_position == 3
    assert _sample(registry, "electric_checkpoint_last_position") == 3
    assert _sample(registry, "electric_checkpoint_last_sequence") == 1
    assert _sample(registry, "electric_checkpoint_last_timestamp_seconds") == 1e9 + 5
    assert _sample(registry, "electric_checkpoint_last_pass_timestamp_seconds") == 1e9 + 5
    assert _sample(registry, "electric_checkpoints_written_total") == 1

    # An idle store: no new checkpoint, but the pass is recorded (not stale).
    now[0] += 60_000_000
    assert asyncio.run(writer.write_once()) == []
    assert _sample(registry, "electric_checkpoint_last_timestamp_seconds") == 1e9 + 5
    assert _sample(registry, "electric_checkpoint_last_pass_timestamp_seconds") == 1e9 + 65
    assert _sample(registry, "electric_checkpoints_written_total") == 1

    # New events and a bus that refuses: the pass fails, is counted, and moves nothing.
    with engine.begin() as conn:
        store.append(conn, "s1", ANY, [event("d")])
    writer.bus = _FailingBus()
    now[0] += 60_000_000

    async def one_failing_pass() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(writer.run(stop))
        while writer.failures == 0:
            await asyncio.sleep(0.01)
        stop.set()
        await task

    asyncio.run(one_failing_pass())
    assert _sample(registry, "electric_checkpoint_failures_total") >= 1
    assert _sample(registry, "electric_checkpoint_last_position") == 3
    assert _sample(registry, "electric_checkpoint_last_pass_timestamp_seconds") == 1e9 + 65

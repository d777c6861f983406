"""One Register followed through the four services as SEPARATE processes on PostgreSQL and
Kafka (issue 14 item 7: the trace test; issue 15 item 5: the log test).

Three bots play one tournament. The Register that filled the table is then followed:

- ``electric-audit trace`` over the four PostgreSQL stores reaches every event the Register
  caused in every service (tests/support/trace_kit.py says which, from the stores alone), all
  with its correlation id; over the Kafka topics alone it finds the very same events;
- each process's INFO log (its own file) shows, with that correlation id, the Register call,
  every wallet call and every consumer step of the chain.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
from platform_cluster import Cluster, run_cluster

from tests.support import trace_kit
from tests.support.auth import ISSUER_KEY

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(
    postgres_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("trace-e2e")
    extra = {"ELECTRIC_TABLE_HAND_PAUSE_MS": "0", "ELECTRIC_LOG_LEVEL": "INFO"}
    with run_cluster(postgres_url, kafka_bootstrap, tmp, extra_env=extra) as c:
        yield c


def _urls(cluster: Cluster) -> dict[str, str]:
    return {s: str(cluster.procs[s].db_url) for s in trace_kit.SERVICES}  # type: ignore[attr-defined]


def _log_lines(cluster: Cluster, service: str) -> list[dict[str, Any]]:
    path: Path = cluster.procs[service].log_path  # type: ignore[attr-defined]
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


async def test_one_register_traced_over_stores_topics_and_logs(
    cluster: Cluster, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(
                registration=cluster.target("registration"),
                table=cluster.target("table"),
                wallet=cluster.target("wallet"),
            ),
            key=ISSUER_KEY,
            bots=3,
            until_finished=1,
            seed=13,
            player_prefix=f"trace{int(time.time()) % 100000}",
        )
    )
    stats = await asyncio.wait_for(runner.run(), timeout=300)
    assert len(stats.tables_finished) == 1 and not stats.errors, stats
    [table_id] = stats.tables_finished
    urls = _urls(cluster)
    store_args = [a for s in trace_kit.SERVICES for a in ("--store", urls[s])]
    kafka_args = ["--kafka", kafka_bootstrap, "--namespace", cluster.namespace]
    correlation = trace_kit.filling_register(urls, table_id)

    # Wait until payout credited the prizes and the relays published everything.
    deadline = time.monotonic() + 60
    while True:
        try:
            expected = trace_kit.expected_events(urls, table_id, correlation)
            # The CLI runs its own event loop (asyncio.run): off this one.
            by_store = await asyncio.to_thread(trace_kit.trace, capsys, correlation, store_args)
            by_topic = await asyncio.to_thread(trace_kit.trace, capsys, correlation, kafka_args)
            same = set(trace_kit.traced_events(by_store)) == set(trace_kit.traced_events(by_topic))
            if same:
                break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        assert time.monotonic() < deadline, "the topics never held the stores' events"
        await asyncio.sleep(1.0)
    trace_kit.check_trace(by_store, expected, correlation)
    trace_kit.check_trace(by_topic, expected, correlation)

    await asyncio.sleep(1.0)  # the last consumer steps' lines are flushed
    traced = trace_kit.traced_events(by_store)
    logs = {s: _log_lines(cluster, s) for s in trace_kit.SERVICES}
    applied = {s: trace_kit.applied_events(urls[s]) for s in trace_kit.SERVICES}
    trace_kit.check_logs(logs, traced, applied, correlation)

"""One Register followed end to end on a real run (issue 14 item 7, issue 15 item 5).

Bots play one tournament on the embedded platform (four services on their own gRPC servers,
SQLite, the in-process bus), with the process's INFO logs captured. The Register that filled
the table is then followed:

- **trace test**: ``electric-audit trace <its correlation id>`` over the four stores reaches
  every resulting event in every service — the buy-in transfers, TournamentStarted, every
  event of the table's stream (every hand), the prizes, their transfers and PrizeCredited —
  and every one of them records that correlation id;
- **log test**: the INFO logs show, with that correlation id, the Register call, every
  wallet call the chain caused (with the cause the wallet recorded) and every consumer step
  (each event of the trace a consumer applied, from the consumers' own ledgers).
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from electric_platform.log import configure_logging

from tests.support import trace_kit
from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(360)


@dataclass
class Run:
    """What the played run left: store URLs, the finished table, the captured log lines."""

    urls: dict[str, str]
    table_id: str
    logs: list[dict[str, Any]]

    def sources(self) -> list[str]:
        return [a for s in trace_kit.SERVICES for a in ("--store", self.urls[s])]


async def _play(tmp_path: Path) -> tuple[dict[str, str], str]:
    async with embedded_platform(tmp_path) as platform:
        runner = platform.bot_runner(seed=11, player_prefix="trace")
        stats = await asyncio.wait_for(runner.run(), timeout=240)
        assert len(stats.tables_finished) == 1 and not stats.errors, stats
        [table_id] = stats.tables_finished
        urls = dict(platform.db_urls)
        for _ in range(300):  # payout credits the prizes shortly after the finish
            kinds = [e.event_type for e in trace_kit.stored_events(urls["payout"])]
            awarded = sum(k.endswith("PrizeAwarded") for k in kinds)
            if awarded and awarded == sum(k.endswith("PrizeCredited") for k in kinds):
                break
            await asyncio.sleep(0.1)
        # The consumers' last steps (of the credits): wait until their ledgers stand still.
        seen, still = -1, 0
        for _ in range(50):
            count = sum(len(trace_kit.applied_events(u)) for u in urls.values())
            still = still + 1 if count == seen else 0
            if still >= 2:
                break
            seen = count
            await asyncio.sleep(0.2)
        return urls, table_id


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    buffer = io.StringIO()
    configure_logging("INFO", "json", stream=buffer)
    try:
        urls, table_id = asyncio.run(_play(tmp_path_factory.mktemp("trace-run")))
    finally:
        configure_logging("INFO", "json")
    lines = [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]
    yield Run(urls, table_id, lines)


def test_trace_of_one_register_reaches_every_resulting_event(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    correlation = trace_kit.filling_register(run.urls, run.table_id)
    assert correlation
    expected = trace_kit.expected_events(run.urls, run.table_id, correlation)
    records = trace_kit.trace(capsys, correlation, run.sources())
    trace_kit.check_trace(records, expected, correlation)


def test_info_logs_follow_one_register_through_every_service(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    correlation = trace_kit.filling_register(run.urls, run.table_id)
    traced = trace_kit.traced_events(trace_kit.trace(capsys, correlation, run.sources()))
    # One process: a line's service is the ``service`` field its host binds.
    logs = {s: [x for x in run.logs if x.get("service") == s] for s in trace_kit.SERVICES}
    applied = {s: trace_kit.applied_events(run.urls[s]) for s in trace_kit.SERVICES}
    trace_kit.check_logs(logs, traced, applied, correlation)

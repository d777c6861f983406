"""electric-audit verify over the four stores of a real run: bots play one tournament on the
embedded platform (four services, SQLite), then the auditor's CLI reads the four databases
read-only and every check passes, with every hand's deck checked. One payload byte changed
in a copy of the table database is then reported at its exact location."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from electric_audit.cli import main
from electric_eventlog import create_engine, schema
from sqlalchemy import select, update
from sqlalchemy.engine import make_url

from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(360)


async def _play(tmp_path: Path) -> dict[str, str]:
    async with embedded_platform(tmp_path) as platform:
        runner = platform.bot_runner(seed=7, player_prefix="audit")
        stats = await asyncio.wait_for(runner.run(), timeout=240)
        assert len(stats.tables_finished) == 1 and not stats.errors, stats
        await asyncio.sleep(1.0)  # let payout credit the prizes
        return dict(platform.db_urls)


def _verify(
    capsys: pytest.CaptureFixture[str], urls: list[str]
) -> tuple[int, dict[str, dict[str, object]]]:
    argv = ["verify", "--json"]
    for url in urls:
        argv += ["--store", url]
    code = main(argv)
    out = capsys.readouterr().out
    return code, {r["check"]: r for r in map(json.loads, out.splitlines())}


async def test_verify_passes_on_a_real_run_and_locates_a_tamper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = await _play(tmp_path)
    assert set(urls) == {"registration", "table", "wallet", "payout"}
    code, result = _verify(capsys, list(urls.values()))
    assert code == 0, result
    assert int(str(result["chains"]["checked"])) > 50
    assert int(str(result["decks"]["checked"])) >= 1
    assert all(r["failed"] == 0 for r in result.values())
    for check in ("multipliers", "prizes", "credited-once", "ledger", "progress"):
        assert int(str(result[check]["checked"])) >= 1, check

    code = main(["events", "--store", urls["table"], "--type", "HandEnded", "--json"])
    ended = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(ended) == result["decks"]["checked"]
    assert all(len(r["payload"]["deck_seed"]) == 64 for r in ended)

    # Tamper with a copy: flip one byte of the first CardsDealt payload.
    original = Path(str(make_url(urls["table"]).database))
    copy = tmp_path / "tampered-table.db"
    shutil.copy(original, copy)
    url = f"sqlite:///{copy}"
    engine = create_engine(url)
    events = schema.events
    with engine.begin() as conn:
        row = (
            conn.execute(
                select(events)
                .where(events.c.event_type == "electric.table.v1.CardsDealt")
                .order_by(events.c.global_position)
                .limit(1)
            )
            .mappings()
            .one()
        )
        payload = bytearray(bytes(row["payload"]))
        payload[len(payload) // 2] ^= 0x01
        conn.execute(
            update(events)
            .where(events.c.global_position == row["global_position"])
            .values(payload=bytes(payload))
        )
    engine.dispose()
    code, result = _verify(capsys, [url])
    assert code == 1
    expected = (
        f"store:tampered-table.db stream {row['stream_id']} version {row['stream_version']} "
        f"position {row['global_position']}: hash mismatch"
    )
    assert str(result["chains"]["first_failure"]).startswith(expected)

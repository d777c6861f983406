"""Checkpoints from the real services: the four services of the embedded platform (SQLite,
in-process bus) write signed checkpoints periodically and at shutdown, with keys generated
under the run's key directory; `electric-audit verify` over the four stores, the checkpoint
files and the published public keys passes, and a rewrite of a copy of one database with the
hashes recomputed is located."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from electric_audit.cli import main
from electric_eventlog.checkpoint import from_json
from sqlalchemy.engine import make_url

from tests.support.anchoring import rewrite, rows
from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(120)

SERVICES = ("registration", "table", "wallet", "payout")


def _verify(capsys: pytest.CaptureFixture[str], tmp_path: Path, urls: list[str]) -> Any:
    argv = ["verify", "--json", "--checkpoints", str(tmp_path / "checkpoints")]
    argv += ["--checkpoint-keys", str(tmp_path / "keys")]
    for url in urls:
        argv += ["--store", url]
    code = main(argv)
    return code, {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}


async def test_services_anchor_their_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"ELECTRIC_CHECKPOINT_INTERVAL_SECONDS": "0.2"}
    async with embedded_platform(tmp_path, extra_env=env) as platform:
        urls = dict(platform.db_urls)
        await asyncio.sleep(0.5)
    for service in SERVICES:
        assert (tmp_path / "keys" / f"checkpoint-{service}.jwks.json").exists()
        private = tmp_path / "keys" / f"checkpoint-{service}.jwk.json"
        assert private.stat().st_mode & 0o777 == 0o600
        lines = (tmp_path / "checkpoints" / f"{service}.jsonl").read_bytes().splitlines()
        last = from_json(lines[-1])
        # The last checkpoint (at shutdown at the latest) covers the whole store.
        assert last.producer == service
        assert last.global_position == rows(urls[service])[-1]["global_position"]

    code, result = _verify(capsys, tmp_path, list(urls.values()))
    assert code == 0, result
    assert result["checkpoints"]["checked"] >= 4
    assert result["anchor-store"]["checked"] >= 4 and result["anchor-store"]["failed"] == 0

    original = Path(str(make_url(urls["wallet"]).database))
    copy = tmp_path / "rewritten-wallet.db"
    shutil.copy(original, copy)
    url = f"sqlite:///{copy}"
    first = rows(url)[0]

    def change(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found[0]["correlation_id"] = "rewritten"
        return found

    rewrite(url, change, renumber=False)
    code, result = _verify(capsys, tmp_path, [url])
    assert code == 1 and result["chains"]["ok"]
    assert result["anchor-store"]["first_failure"].startswith(
        f"store:rewritten-wallet.db stream {first['stream_id']} version 1 position 1: hash "
    )

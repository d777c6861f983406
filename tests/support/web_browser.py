"""The browser e2e test's kit: ``make run`` as a child process, headless Chromium driven by
Playwright, and read-only views of the run's stores to check the screen against.

Chromium is Debian's (``deploy/chromium.sh``; Playwright cannot download browsers here). It
runs with the flags this machine needs: no sandbox (root), no GPU, and no background
networking (its calls home are refused by the closed network, many at a time).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from electric_eventlog import default_registry
from electric_eventlog.schema import events as events_table
from electric_wallet import domain as wallet_domain
from electric_wallet import store as wallet_store
from google.protobuf import any_pb2
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy import Engine, create_engine, select

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WEB_LINE = re.compile(r"^\s+web:\s+(http://\S+/)")
#: Where screenshots go (kept after the run: CI keeps var/ as the test artifacts).
ARTIFACTS = Path(os.environ.get("ELECTRIC_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts"))


def chromium_path() -> str:
    """Debian's Chromium; a test that needs it fails (never skips) when it is missing."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(path).exists(), "Chromium is missing: run bash deploy/chromium.sh"
    return path


@dataclass
class RunProcess:
    """``python -m electric_runner`` (what ``make run`` runs) with its output collected."""

    var_dir: Path
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    started_at: float = 0.0

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_")}
        env.pop("DATABASE_URL", None)
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
        env.update(ELECTRIC_VAR_DIR=str(self.var_dir), **self.env)
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "electric_runner", *self.args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def url(self, timeout: float = 120) -> str:
        """The page's URL, once the runner printed it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if m := WEB_LINE.match(line):
                    return m.group(1)
            assert self.process is not None and self.process.poll() is None, self.output()
            time.sleep(0.2)
        raise AssertionError("no web: line\n" + self.output())

    def output(self) -> str:
        return "".join(self.lines[-40:])

    def stop(self) -> int:
        if self.process is None:
            return 0
        self.process.terminate()
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Stores:
    """Read-only looks into the run's SQLite stores (one file per service under var/)."""

    def __init__(self, var_dir: Path) -> None:
        self._engines: dict[str, Engine] = {}
        self.var_dir = var_dir
        self.registry = default_registry()

    def engine(self, service: str) -> Engine:
        if service not in self._engines:
            path = self.var_dir / f"{service}.db"
            self._engines[service] = create_engine(
                f"sqlite+pysqlite:///file:{path}?mode=ro&uri=true"
            )
        return self._engines[service]

    def events(self, service: str, stream_id: str | None = None) -> list[tuple[int, Any]]:
        """(stream version, decoded payload) of a stream, or of every stream in commit order."""
        query = select(events_table).order_by(events_table.c.global_position)
        if stream_id is not None:
            query = query.where(events_table.c.stream_id == stream_id)
        with self.engine(service).connect() as conn:
            rows = conn.execute(query).mappings().all()
        out = []
        for r in rows:
            payload = any_pb2.Any(type_url=r["payload_type_url"], value=bytes(r["payload"]))
            out.append((int(r["stream_version"]), self.registry.unpack(payload)))
        return out

    def balance(self, player_id: str) -> dict[str, int]:
        """The wallet's balance panel of a player, computed as GetBalance computes it."""
        with self.engine("wallet").connect() as conn:
            ledger = wallet_store.load(conn, wallet_domain.player_account_ids(player_id))
        return wallet_domain.balance_breakdown(ledger, player_id)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()

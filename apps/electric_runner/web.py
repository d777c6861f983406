"""The browser side of the embedded platform: the browser edge and development sign-in.

``make run`` starts the browser edge (``web/edge``, a Go binary built by the set-up) next to
the four services. It serves the reference web client (``web/client/dist``) and translates
Connect and gRPC-Web into gRPC for the services' public methods (docs/web-edge.md).

A page signs in with ``POST /dev/sign-in`` ``{"player": "alice"}``, which the edge forwards
here: the answer is a player token minted with this run's issuer key, and a player seen for
the first time gets a development bankroll through the wallet's operator ``Deposit`` (its
transfer id is the player's, so it is paid once however often the player signs in). It
exists only in the embedded runner, which holds the issuer key; a real deployment signs
players in with its own identity provider.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO

from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.channel import retrying_channel
from electric_clients.wallet import WALLET_SERVICE_CONFIG
from electric_platform.auth import Role, TokenSource, issue_token
from electric_platform.context import outgoing_metadata
from electric_platform.keys import SigningKey

#: The repository root (apps/electric_runner/web.py is three levels down).
ROOT = Path(__file__).resolve().parents[2]
#: The edge binary the set-up builds, and the client's built files.
EDGE_BINARY = ROOT / ".tools" / "bin" / "electric-edge"
CLIENT_DIST = ROOT / "web" / "client" / "dist"
DESCRIPTORS = ROOT / "gen" / "electric" / "descriptor_set.pb"
#: The edge's port unless told otherwise (``--web-port``; 0 picks a free one).
DEFAULT_WEB_PORT = 8080
#: A development player's bankroll: $1,000.
DEV_BANKROLL_CENTS = 100_000
#: A development token's lifetime.
DEV_TOKEN_TTL_SECONDS = 8 * 3600.0
#: Which player names sign-in accepts (they become token subjects and wallet ids).
PLAYER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
#: The proto package each service serves, for the edge's ``-backend`` flags.
PACKAGES = {
    "registration": "electric.registration.v1",
    "table": "electric.table.v1",
    "wallet": "electric.wallet.v1",
    "payout": "electric.payout.v1",
}


class DevSignIn:
    """``POST /dev/sign-in`` on a loopback port of its own (the edge forwards to it)."""

    def __init__(self, issuer: SigningKey, wallet_target: str, loop: asyncio.AbstractEventLoop):
        self._issuer = issuer
        self._loop = loop
        self._operator = TokenSource(issuer, "electric-runner-cashier", Role.OPERATOR)
        self._channel = retrying_channel(wallet_target, WALLET_SERVICE_CONFIG)
        self._wallet = wallet_pb2_grpc.WalletServiceStub(self._channel)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="dev-sign-in", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    async def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        await self._channel.close(None)

    def sign_in(self, player: str) -> dict[str, object]:
        """A token for ``player``; funds the player the first time (runs on a server thread)."""
        now = time.time()
        token = issue_token(player, Role.PLAYER, self._issuer, DEV_TOKEN_TTL_SECONDS, now=now)
        request = wallet_pb2.DepositRequest(
            transfer_id=f"dev-sign-in-{player}",
            player_id=player,
            amount=DEV_BANKROLL_CENTS,
            memo="development bankroll (embedded runner sign-in)",
        )
        asyncio.run_coroutine_threadsafe(self._deposit(request), self._loop).result(timeout=15)
        # The token's exp claim, as issue_token computes it.
        return {"token": token, "player": player, "expires_at": int(now + DEV_TOKEN_TTL_SECONDS)}

    async def _deposit(self, request: wallet_pb2.DepositRequest) -> None:
        # grpc.aio calls belong to the loop the channel was made on: made and awaited there.
        await self._wallet.Deposit(
            request, metadata=outgoing_metadata(self._operator.token()), timeout=10
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path != "/dev/sign-in":
                    self._answer(HTTPStatus.NOT_FOUND, {"error": "not found"})
                    return
                try:
                    length = min(int(self.headers.get("Content-Length") or 0), 4096)
                    body = json.loads(self.rfile.read(length) or b"{}")
                    player = str(body.get("player", "")).strip().lower()
                except (ValueError, AttributeError):
                    self._answer(HTTPStatus.BAD_REQUEST, {"error": "body must be JSON"})
                    return
                if not PLAYER_NAME.match(player):
                    self._answer(
                        HTTPStatus.BAD_REQUEST,
                        {"error": "player: 1-32 of a-z, 0-9, '_' and '-', starting alphanumeric"},
                    )
                    return
                try:
                    self._answer(HTTPStatus.OK, owner.sign_in(player))
                except Exception as exc:  # the page shows why sign-in failed
                    self._answer(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)})

            def _answer(self, status: HTTPStatus, body: Mapping[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                return  # the edge logs requests; no stderr lines over the summary

        return Handler


@dataclass
class EdgeSettings:
    """Where the edge listens, what it serves and which origins it allows."""

    port: int
    backends: Mapping[str, int]
    dev_upstream: str
    origins: tuple[str, ...] = ()


class WebEdge:
    """The browser edge as a child process; its log lines go to ``log``."""

    def __init__(self, settings: EdgeSettings, log: IO[str] | None) -> None:
        self.settings = settings
        self._log = log
        self._process: subprocess.Popen[str] | None = None
        self.address = ""

    @staticmethod
    def available() -> str:
        """Empty when the edge can run, else why not (the header says so)."""
        if not EDGE_BINARY.exists():
            return f"{EDGE_BINARY.relative_to(ROOT)} not built (make setup builds it)"
        if not (CLIENT_DIST / "index.html").exists():
            return f"{CLIENT_DIST.relative_to(ROOT)} not built (make setup builds it)"
        return ""

    def command(self) -> list[str]:
        s = self.settings
        args = [
            str(EDGE_BINARY),
            "-listen",
            f"127.0.0.1:{s.port}",
            "-descriptors",
            str(DESCRIPTORS),
            "-static",
            str(CLIENT_DIST),
            "-dev-upstream",
            s.dev_upstream,
            # The edge stops when this process's end of its stdin closes: a runner killed
            # with SIGKILL leaves no edge behind.
            "-exit-on-stdin-eof",
        ]
        for service, port in s.backends.items():
            args += ["-backend", f"{PACKAGES[service]}=127.0.0.1:{port}"]
        for origin in s.origins:
            args += ["-allow-origin", origin]
        return args

    async def start(self) -> str:
        """Start the edge; its URL once it listens."""
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self._process.stdout.readline), timeout=30)
        if not line.startswith("edge listening on "):
            try:
                code: int | None = self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
            raise RuntimeError(f"exit {code}: {line.strip()} (its log: the run's log file)")
        self.address = line.removeprefix("edge listening on ").strip()
        return f"http://{self.address}/"

    def stop(self) -> None:
        if self._log is not None and self._log is not sys.stderr:
            self._log.close()
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def allowed_origins(env: Mapping[str, str]) -> tuple[str, ...]:
    """Extra browser origins from ``ELECTRIC_WEB_ALLOWED_ORIGINS`` (comma-separated)."""
    raw = env.get("ELECTRIC_WEB_ALLOWED_ORIGINS", "")
    return tuple(o.strip() for o in raw.split(",") if o.strip())


def web_port(option: int | None, free_ports: bool, env: Mapping[str, str]) -> int:
    """The edge's port: ``--web-port``, else ``ELECTRIC_WEB_PORT``, else 8080 (0 with
    ``--free-ports``: the edge picks one and says which)."""
    if option is not None:
        return option
    if env.get("ELECTRIC_WEB_PORT"):
        return int(env["ELECTRIC_WEB_PORT"])
    return 0 if free_ports else DEFAULT_WEB_PORT

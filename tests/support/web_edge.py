"""The browser edge (web/edge) in tests: the built binary in front of a test platform, and a
Connect client that calls it the way a browser does (connect-python, Connect protocol,
binary codec).

    async with embedded_platform(tmp_path) as platform, browser_edge(platform.targets) as edge:
        token = platform.token("alice", "player")
        lobby = await edge.unary("RegistrationService/ListLobby", ListLobbyRequest(), token=token)

The edge binary comes from ``make setup`` (``.tools/bin/electric-edge``); a test that needs it
fails, never skips, when it is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectrpc.client import ConnectClient
from connectrpc.method import IdempotencyLevel, MethodInfo
from connectrpc.protocol import ProtocolType
from electric_runner.web import DESCRIPTORS, EDGE_BINARY, PACKAGES
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from tests.support.fuzz_values import Rpc, discover_rpcs


def method_info(rpc: Rpc) -> MethodInfo[Any, Any]:
    """connect-python's description of one of our RPCs (from the generated descriptors)."""
    method: MethodDescriptor = rpc.method
    return MethodInfo(
        name=method.name,
        service_name=method.containing_service.full_name,
        input=rpc.request_class,
        output=rpc.response_class,
        idempotency_level=IdempotencyLevel.UNKNOWN,
    )


def rpc_named(name: str) -> Rpc:
    """The RPC called ``Service/Method``, e.g. ``TableService/Act``."""
    for rpc in discover_rpcs():
        if rpc.name == name:
            return rpc
    raise KeyError(name)


def public_paths() -> list[str]:
    """The methods the edge serves, as it reads them from the descriptors."""
    out = subprocess.run(
        [str(EDGE_BINARY), "-descriptors", str(DESCRIPTORS), "-print-public"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return out.split()


@dataclass
class Edge:
    """A running edge: its base URL, and Connect calls through it."""

    url: str
    process: subprocess.Popen[str]
    #: The edge's stderr (its JSON log lines: refusals, errors), kept for assertion messages.
    log_path: Path | None = None
    protocol: ProtocolType = ProtocolType.CONNECT
    _clients: dict[tuple[ProtocolType, str], ConnectClient] = field(default_factory=dict)

    def client(self, origin: str = "", protocol: ProtocolType | None = None) -> ConnectClient:
        key = (protocol or self.protocol, origin)
        if key not in self._clients:
            self._clients[key] = ConnectClient(
                self.url.rstrip("/"),
                protocol=key[0],
                send_compression=None,
                accept_compression=(),
            )
        return self._clients[key]

    @staticmethod
    def headers(token: str | None, origin: str = "", **extra: str) -> dict[str, str]:
        out = dict(extra)
        if token is not None:
            out["authorization"] = f"Bearer {token}"
        if origin:
            out["origin"] = origin
        return out

    async def unary(
        self,
        rpc: Rpc | str,
        request: Message,
        *,
        token: str | None = None,
        origin: str = "",
        timeout_ms: int | None = None,
        protocol: ProtocolType | None = None,
    ) -> Any:
        rpc = rpc_named(rpc) if isinstance(rpc, str) else rpc
        return await self.client(origin, protocol).execute_unary(
            request=request,
            method=method_info(rpc),
            headers=self.headers(token, origin),
            timeout_ms=timeout_ms,
        )

    def stream(
        self,
        rpc: Rpc | str,
        request: Message,
        *,
        token: str | None = None,
        origin: str = "",
        timeout_ms: int | None = None,
        protocol: ProtocolType | None = None,
    ) -> AsyncIterator[Any]:
        rpc = rpc_named(rpc) if isinstance(rpc, str) else rpc
        return self.client(origin, protocol).execute_server_stream(
            request=request,
            method=method_info(rpc),
            headers=self.headers(token, origin),
            timeout_ms=timeout_ms,
        )

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the edge wrote to stderr (for assertion messages)."""
        return _tail(self.log_path, lines)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


def _tail(path: Path | None, lines: int = 20) -> str:
    if path is None:
        return "(no edge log)"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return f"(edge log unreadable: {err})"
    return "edge log, last lines:\n" + "\n".join(text.splitlines()[-lines:])


@contextlib.asynccontextmanager
async def browser_edge(
    targets: Mapping[str, str],
    *,
    origins: Sequence[str] = (),
    static: Path | None = None,
    dev_upstream: str = "",
    extra_args: Sequence[str] = (),
) -> AsyncIterator[Edge]:
    """Start the edge on a free loopback port in front of ``targets`` (service -> host:port)."""
    assert EDGE_BINARY.exists(), f"{EDGE_BINARY} is missing: run make setup"
    args = [str(EDGE_BINARY), "-listen", "127.0.0.1:0", "-descriptors", str(DESCRIPTORS)]
    for service, target in targets.items():
        args += ["-backend", f"{PACKAGES[service]}={target}"]
    for origin in origins:
        args += ["-allow-origin", origin]
    if static is not None:
        args += ["-static", str(static)]
    if dev_upstream:
        args += ["-dev-upstream", dev_upstream]
    args += list(extra_args)
    # The edge logs JSON lines on stderr: kept in a temporary file (its path on the Edge,
    # printed on failure by the tests that use Edge.log_tail).
    # The file stays when the body raised (a test inside ``async with``); otherwise it is
    # removed (a fixture's teardown sees no failure: the tail is in the assertion message).
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed right after the Popen
        mode="w", prefix="electric-edge-", suffix=".log", delete=False
    )
    log_path = Path(log.name)
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()  # the child holds its own descriptor
    assert process.stdout is not None
    failed = True
    try:
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        assert line.startswith("edge listening on "), (
            f"edge did not start: {line!r}\n{_tail(log_path)}"
        )
        edge = Edge(f"http://{line.removeprefix('edge listening on ').strip()}/", process, log_path)
        try:
            yield edge
        finally:
            await edge.close()
        failed = False
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if not failed:
            log_path.unlink(missing_ok=True)

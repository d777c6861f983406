"""Act through the browser edge against Act straight to the table service, in one run.

``python -m bench web_edge`` starts the embedded platform as ``make run`` does (the runner as
a child process, SQLite, the browser edge, no bots). It signs ``BENCH_WEB_TABLES`` (default
4) groups of three players in through the edge's development sign-in. Each group registers
at the cheapest tier, which fills a table of its own, and plays tournament after tournament
for ``BENCH_WEB_SECONDS`` (default 30). Every player watches its table over native gRPC. The
Acts alternate, one by one, between native gRPC straight to the table service and Connect
(binary) through the edge, with connect-python, the client a browser's Connect calls are
modelled on. So both paths are measured at the same moments, under the same load. The rows
are the Act's round trip, p50 and p99, edge against direct.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import grpc
from connectrpc.client import ConnectClient
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc

from bench import Row

SECONDS = float(os.environ.get("BENCH_WEB_SECONDS", "30"))
#: Tables played at once (three players each).
TABLES = int(os.environ.get("BENCH_WEB_TABLES", "4"))
ROOT = Path(__file__).resolve().parent.parent
ADDRESS = re.compile(r"^\s+(registration|table)\s+grpc (127\.0\.0\.1:\d+)")
WEB = re.compile(r"^\s+web:\s+(http://\S+/)")
ACT = MethodInfo(
    name="Act",
    service_name="electric.table.v1.TableService",
    input=table_pb2.ActRequest,
    output=table_pb2.ActResponse,
    idempotency_level=IdempotencyLevel.UNKNOWN,
)
#: Answers that only mean the turn moved on before the Act arrived (not errors of a path).
STALE = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED)


class Runner:
    """The embedded runner as a child process, and what it printed."""

    def __init__(self, var_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_")}
        env.update(ELECTRIC_VAR_DIR=str(var_dir), ELECTRIC_LOG_LEVEL="WARNING")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "electric_runner", "--free-ports", "--web-port", "0"),
                *("--bots", "0", "--thb-bots", "0", "--uth-bots", "0", "--refresh", "10"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_ready(self, timeout: float = 90) -> tuple[dict[str, str], str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            addresses = {m[1]: m[2] for line in self.lines if (m := ADDRESS.match(line))}
            web = [m[1] for line in self.lines if (m := WEB.match(line))]
            if web and len(addresses) == 2:
                return addresses, web[0]
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError("the runner did not start:\n" + "".join(self.lines[-20:]))

    def edge_cpu_seconds(self) -> float:
        """CPU time (user + system) the edge child process has used so far."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        for pid in children.read_text().split():
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/") and b"electric-edge" in (
                Path(f"/proc/{pid}/cmdline").read_bytes()
            ):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        raise RuntimeError("no edge child process")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def sign_in(web: str, player: str) -> str:
    request = urllib.request.Request(
        f"{web}dev/sign-in",
        data=json.dumps({"player": player}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(json.loads(answer.read())["token"])


def choose(view: table_pb2.TableView, rng: random.Random) -> tuple[int, int]:
    """Mostly check or call, sometimes all in, so hands and tournaments end."""
    legal = {a.type: a for a in view.legal_actions}
    if table_pb2.ACTION_TYPE_ALL_IN in legal and rng.random() < 0.1:
        return table_pb2.ACTION_TYPE_ALL_IN, legal[table_pb2.ACTION_TYPE_ALL_IN].max_amount
    for kind in (table_pb2.ACTION_TYPE_CHECK, table_pb2.ACTION_TYPE_CALL):
        if kind in legal:
            return kind, legal[kind].min_amount
    return table_pb2.ACTION_TYPE_FOLD, 0


class Bench:
    """Three players over both paths; latencies per path in milliseconds."""

    def __init__(self, addresses: dict[str, str], web: str, tokens: dict[str, str]) -> None:
        self.tokens = tokens
        self.registration = grpc.aio.insecure_channel(addresses["registration"])
        self.table = grpc.aio.insecure_channel(addresses["table"])
        self.edge = ConnectClient(web.rstrip("/"), send_compression=None, accept_compression=())
        self.samples: dict[str, list[float]] = {"edge": [], "direct": []}
        self.refused: dict[str, int] = {"edge": 0, "direct": 0}
        self._turn = 0

    def md(self, player: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.tokens[player]}"),)

    async def act(self, player: str, request: table_pb2.ActRequest) -> None:
        self._turn += 1
        path = "edge" if self._turn % 2 else "direct"
        started = time.perf_counter()
        try:
            if path == "edge":
                await self.edge.execute_unary(
                    request=request,
                    method=ACT,
                    headers={"authorization": f"Bearer {self.tokens[player]}"},
                    timeout_ms=10_000,
                )
            else:
                stub = table_pb2_grpc.TableServiceStub(self.table)
                await stub.Act(request, metadata=self.md(player), timeout=10)
        except ConnectError as err:
            # The same answers the direct path counts as stale; anything else is a failure of
            # the edge path and stops the bench, as it does on the direct path.
            if err.code not in (Code.FAILED_PRECONDITION, Code.ABORTED):
                raise
            self.refused[path] += 1
            return
        except grpc.aio.AioRpcError as err:
            if err.code() not in STALE:
                raise
            self.refused[path] += 1
            return
        self.samples[path].append((time.perf_counter() - started) * 1000)

    async def tournament(
        self, players: tuple[str, ...], deadline: float, lock: asyncio.Lock
    ) -> None:
        """The three ``players`` fill a table of their own and play it to its end."""
        stub = registration_pb2_grpc.RegistrationServiceStub(self.registration)
        lobby = await stub.ListLobby(
            registration_pb2.ListLobbyRequest(), metadata=self.md(players[0])
        )
        tier = min(lobby.tiers, key=lambda t: t.buy_in.cents).tier_id
        table_id = ""
        async with lock:
            for player in players:
                answer = await stub.Register(
                    registration_pb2.RegisterRequest(
                        request_id=str(uuid.uuid4()), tier_id=tier, entries=1
                    ),
                    metadata=self.md(player),
                )
                table_id = answer.entries[0].table_id
        await asyncio.gather(*(self.play(p, table_id, deadline, random.Random(p)) for p in players))

    async def play(self, player: str, table_id: str, deadline: float, rng: random.Random) -> None:
        stub = table_pb2_grpc.TableServiceStub(self.table)
        last = 0
        while time.monotonic() < deadline:
            watch = stub.WatchTable(
                table_pb2.WatchTableRequest(table_id=table_id, from_sequence=last),
                metadata=self.md(player),
                timeout=max(1.0, deadline - time.monotonic()),
            )
            try:
                async for message in watch:
                    last = max(last, message.sequence)
                    view = message.table
                    if not message.HasField("table"):
                        continue
                    if view.status == table_pb2.TABLE_STATUS_FINISHED:
                        return
                    if view.legal_actions:
                        kind, amount = choose(view, rng)
                        await self.act(
                            player,
                            table_pb2.ActRequest(
                                request_id=str(uuid.uuid4()),
                                table_id=table_id,
                                hand_number=view.hand.hand_number,
                                action_seq=view.hand.action_seq,
                                action=kind,
                                amount=amount,
                            ),
                        )
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    return
                if err.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.NOT_FOUND):
                    raise
                await asyncio.sleep(0.2)
            else:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    got = await stub.GetTable(
                        table_pb2.GetTableRequest(table_id=table_id), metadata=self.md(player)
                    )
                    if got.table.status == table_pb2.TABLE_STATUS_FINISHED:
                        return

    async def close(self) -> None:
        await self.edge.close()
        await self.registration.close()
        await self.table.close()


def _pct(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def _measure(addresses: dict[str, str], web: str) -> Bench:
    groups = [tuple(f"t{t}p{p}" for p in (1, 2, 3)) for t in range(TABLES)]
    tokens = {p: await asyncio.to_thread(sign_in, web, p) for group in groups for p in group}
    bench = Bench(addresses, web, tokens)
    deadline = time.monotonic() + SECONDS
    lock = asyncio.Lock()  # one group registers at a time, so each fills its own table

    async def keep_playing(group: tuple[str, ...]) -> None:
        while time.monotonic() < deadline:
            await bench.tournament(group, deadline, lock)

    try:
        await asyncio.gather(*(keep_playing(g) for g in groups))
    finally:
        await bench.close()
    return bench


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        runner = Runner(Path(tmp))
        try:
            addresses, web = runner.wait_ready()
            cpu_before = runner.edge_cpu_seconds()
            bench = asyncio.run(_measure(addresses, web))
            edge_cpu = runner.edge_cpu_seconds() - cpu_before
        finally:
            runner.stop()
    edge, direct = bench.samples["edge"], bench.samples["direct"]
    note = f"{len(edge)} / {len(direct)} Acts, {SECONDS:.0f} s, {TABLES} tables of 3 players"
    rows = []
    for q in (50, 99):
        rows.append(
            Row(
                "web edge",
                f"Act p{q} via the edge (Connect)",
                _pct(edge, q),
                "ms",
                f"Act p{q} direct (gRPC)",
                _pct(direct, q),
                note,
            )
        )
    # Every call through the edge in the run is an Act (the watches are native), and the
    # sign-ins' few calls are outside the measured window.
    rows.append(
        Row(
            "web edge",
            "edge CPU per Act (Go process)",
            edge_cpu * 1000 / max(1, len(edge) + bench.refused["edge"]),
            "ms",
            note="user + system time of the edge over the Acts it carried",
        )
    )
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)

"""Several table-service processes on one table database (issue 17), for the scale e2e tests.

``TableFleet`` starts ``python -m electric_table`` instances with
``ELECTRIC_TABLE_OWNERSHIP=partitions`` on their own loopback ports, all on ONE table database
and one Kafka namespace (one consumer group), and kills (SIGKILL), pauses (SIGSTOP) and
resumes (SIGCONT) them. ``StoreProbe`` reads what the fleet wrote: fence rows (who owns which
table under which epoch) and stream heads, straight from the table database.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import sqlalchemy as sa
from electric_eventlog import create_engine
from electric_eventlog import schema as es
from electric_table.store import tables as tt
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.chaos.partition import Partitions, in_cgroup
from tests.support import ports


def free_port() -> int:
    return ports.free_port()  # below the ephemeral range (tests/support/ports.py)


@dataclass
class Member:
    """One table-service process of the fleet."""

    no: int
    port: int
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """Its gRPC address, also its advertised address (the fence rows' ``owner``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log(self, tail: int = 6000) -> str:
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-tail:]

    def count(self, pattern: str) -> int:
        """Lines of its log matching ``pattern`` (a regular expression)."""
        if not self.log_path.exists():
            return 0
        rx = re.compile(pattern)
        return sum(
            1 for line in self.log_path.read_text(errors="replace").splitlines() if rx.search(line)
        )


@dataclass
class TableFleet:
    """N table-service instances on one database (see the module docstring)."""

    db_url: str
    env: Mapping[str, str]
    tmp: Path
    members: list[Member] = field(default_factory=list)
    #: When set, each instance starts in a cgroup of its own, so it can be cut off the
    #: network (tests/chaos/partition.py): ``partitions.cut(f"table-{no}")``.
    partitions: Partitions | None = None

    def add(self, extra_env: Mapping[str, str] | None = None) -> Member:
        """Start one more instance (returns at once; :meth:`wait_serving` waits)."""
        no = len(self.members) + 1
        member = Member(no, free_port(), self.tmp / f"table-{no}.log")
        env = {
            **self.env,
            "DATABASE_URL": self.db_url,
            "ELECTRIC_TABLE_OWNERSHIP": "partitions",
            "ELECTRIC_GRPC_PORT": str(member.port),
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_TABLE_ADVERTISED_ADDRESS": member.address,
            **(extra_env or {}),
        }
        argv = [sys.executable, "-m", "electric_table"]
        if self.partitions is not None:
            argv = in_cgroup(argv, self.partitions.cgroup(f"table-{no}", (member.port,)))
        with member.log_path.open("ab") as log:
            member.popen = subprocess.Popen(
                argv,
                env=env,
                cwd=self.tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.members.append(member)
        return member

    def wait_serving(self, members: Iterable[Member] | None = None, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        for m in list(members or self.members):
            while True:
                assert m.alive, f"table-{m.no} exited:\n{m.log()}"
                with contextlib.suppress(grpc.RpcError):
                    with grpc.insecure_channel(m.address) as ch:
                        got = health_pb2_grpc.HealthStub(ch).Check(
                            health_pb2.HealthCheckRequest(service=""), timeout=1
                        )
                    if got.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                assert time.monotonic() < deadline, f"table-{m.no} not serving:\n{m.log()}"
                time.sleep(0.2)

    def target(self) -> str:
        """One gRPC target naming every started instance (the client's channel picks one
        and moves to another when it dies; any instance forwards to a table's owner)."""
        return "ipv4:" + ",".join(m.address for m in self.members)

    def by_address(self, address: str) -> Member:
        return next(m for m in self.members if m.address == address)

    def signal(self, member: Member, sig: signal.Signals) -> None:
        assert member.popen is not None
        member.popen.send_signal(sig)
        if sig == signal.SIGKILL:
            member.popen.wait(10)

    def stop_all(self) -> None:
        for m in self.members:
            if m.alive:
                assert m.popen is not None
                with contextlib.suppress(ProcessLookupError):
                    m.popen.send_signal(signal.SIGCONT)  # a paused one cannot terminate
                m.popen.terminate()
        for m in self.members:
            if m.popen is not None:
                try:
                    m.popen.wait(15)
                except subprocess.TimeoutExpired:
                    m.popen.kill()
                    m.popen.wait(10)

    def logs(self) -> str:
        return "\n".join(f"--- table-{m.no} ({m.address})\n{m.log()}" for m in self.members)


def base_env() -> dict[str, str]:
    """This process's environment without the platform's own settings."""
    return {
        k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_") and k != "DATABASE_URL"
    }


class StoreProbe:
    """Reads of the fleet's table database (fences, stream heads, live tables)."""

    def __init__(self, db_url: str) -> None:
        self.engine = create_engine(db_url)

    def close(self) -> None:
        self.engine.dispose()

    def owners(self) -> dict[str, tuple[int, str]]:
        """table id -> (epoch, owner address) of every table ever taken."""
        f = es.fences
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(f.c.resource, f.c.epoch, f.c.owner)).all()
        return {
            r.resource.removeprefix("table-"): (int(r.epoch), str(r.owner))
            for r in rows
            if r.resource.startswith("table-")
        }

    def heads(self, table_ids: Iterable[str]) -> dict[str, int]:
        """table id -> its stream's latest version (0 when empty)."""
        ids = list(table_ids)
        if not ids:
            return {}
        e = es.events
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(e.c.stream_id, sa.func.max(e.c.stream_version))
                .where(e.c.stream_id.in_([f"table-{t}" for t in ids]))
                .group_by(e.c.stream_id)
            ).all()
        got = {str(r[0]).removeprefix("table-"): int(r[1]) for r in rows}
        return {t: got.get(t, 0) for t in ids}

    def live(self) -> set[str]:
        """Tables whose tournament is starting or running (the read model)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(tt.tables.c.table_id).where(
                    tt.tables.c.status.in_(("starting", "running"))
                )
            ).all()
        return {str(r[0]) for r in rows}

    def all_tables(self) -> set[str]:
        with self.engine.connect() as conn:
            return {str(r[0]) for r in conn.execute(sa.select(tt.tables.c.table_id)).all()}

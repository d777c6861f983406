"""The chaos run's OWN PostgreSQL cluster and Kafka broker (never the shared 5432/9092 ones).

Both are started by the repo's scripts (``deploy/postgres.sh``, ``deploy/kafka.sh``, the
pieces ``deploy/infra.sh`` runs) with their environment knobs pointed at a private data
directory and free loopback ports, so a restart or a pause hurts nobody else. This module
only adds what the scripts do not have: the faults (kill -9 / restart of the broker, a fast
restart of the cluster, a pause of every database process).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

# Ports below the ephemeral range: a broker or a database restarted by a fault binds its port
# again, and one in the ephemeral range can meanwhile be any client socket's (a seed-38
# hour: "Address already in use" on a replacement broker).
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _script(name: str, command: str | list[str], env: dict[str, str], timeout: float = 300) -> str:
    """Run ``deploy/<name> <command...>``; its stdout, or RuntimeError with its stderr."""
    args = [command] if isinstance(command, str) else command
    proc = subprocess.run(
        ["bash", str(DEPLOY / name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        what = f"deploy/{name} {' '.join(args)}"
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout.strip()


def children_of(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (a postmaster's backends and workers)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Field 4 is the parent pid; the command name (field 2) may hold spaces.
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent:
            children.append(int(stat.parent.name))
    return children


def pid_in(path: Path) -> int | None:
    """The pid a pid file starts with (a postmaster.pid, a keeper's), or None."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class PrivateKafka:
    """One KRaft broker in ``directory`` on free loopback ports (deploy/kafka.sh).

    ``external``: use that broker instead (a run without Kafka restarts: the default-suite
    test uses the shared broker with its own namespace); it is never stopped or restarted.
    """

    def __init__(self, directory: Path, external: str | None = None) -> None:
        self.dir = directory
        self.external = external
        self.port = free_port()
        self.env = {
            **os.environ,
            "ELECTRIC_KAFKA_DIR": str(directory),
            "KAFKA_PORT": str(self.port),
            "KAFKA_CONTROLLER_PORT": str(free_port()),
            "KAFKA_JMX_EXPORTER": "0",
            "KAFKA_HEAP": "384m",
        }
        self.bootstrap = external or f"127.0.0.1:{self.port}"

    def pid(self) -> int | None:
        return pid_in(self.dir / "kafka.pid")

    def up(self) -> None:
        if not self.external:
            _script("kafka.sh", "up", self.env)

    def down(self) -> None:
        if not self.external:
            _script("kafka.sh", "down", self.env, timeout=120)

    def stop(self, hard: bool) -> None:
        """Stop the broker: kill -9 (``hard``, no clean shutdown) or SIGTERM (kafka.sh down)."""
        if self.external:
            raise RuntimeError("a shared broker is never stopped")
        if not hard:
            self.down()
            return
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            while alive(pid):
                time.sleep(0.05)
        (self.dir / "kafka.pid").unlink(missing_ok=True)


class PrivatePostgres:
    """One PostgreSQL cluster in ``directory`` on a free loopback port (deploy/postgres.sh).

    ``directory`` must be reachable by the ``postgres`` OS user when we run as root (the
    script runs the server as that user); the runner puts it under /var/tmp."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.env = {**os.environ, "PGPORT": str(self.port), "ELECTRIC_PG_DIR": str(directory)}
        self.url = f"postgresql+psycopg://electric:electric@127.0.0.1:{self.port}/electric"

    def up(self) -> None:
        _script("postgres.sh", "up", self.env)

    def down(self) -> None:
        _script("postgres.sh", "down", self.env, timeout=120)

    def _as_owner(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.getuid() == 0 else argv

    def _pg_ctl(self) -> str:
        bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        return str(bindirs[-1]) if bindirs else "pg_ctl"

    def restart_fast(self) -> None:
        """``pg_ctl restart -m fast``: clients are disconnected, the server comes back with
        the options it was started with (postmaster.opts)."""
        subprocess.run(
            self._as_owner(
                [
                    *(self._pg_ctl(), "-D", str(self.dir / "data"), "-m", "fast", "-w"),
                    *("-t", "120", "-l", str(self.dir / "postgres.log"), "restart"),
                ]
            ),
            cwd="/",
            capture_output=True,
            check=True,
            timeout=180,
        )

    def pids(self) -> list[int]:
        """The postmaster and all its children (backends, checkpointer, WAL writer, ...)."""
        master = pid_in(self.dir / "data" / "postmaster.pid")
        return [] if master is None else [master, *children_of(master)]

    def pause(self, seconds: float) -> int:
        """Slow disk: every database process stopped for ``seconds`` (queries hang, then go
        on), like an fsync or a read that takes that long. Returns how many were paused."""
        pids = self.pids()
        stopped = []
        try:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
                except ProcessLookupError:
                    pass
            time.sleep(seconds)
        finally:
            for pid in reversed(stopped):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        return len(stopped)

    def ready(self) -> bool:
        bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_isready"))
        tool = str(bindirs[-1]) if bindirs else "pg_isready"
        got = subprocess.run(
            [tool, "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"], check=False
        )
        return got.returncode == 0

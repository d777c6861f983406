"""The chaos run's replicated infrastructure (issue 28): a 3-broker Kafka cluster and
PostgreSQL with automatic failover, each the repo's own script on free loopback ports and a
private directory (``deploy/kafka.sh cluster``, ``deploy/postgres-ha.sh``).

Both classes answer what :class:`tests.chaos.faults.Injector` asks of the single-server
ones (``up``/``down``, ``stop``/``restart_fast``/``pause`` for the old fault kinds, and what
is missing for the supervisor), and add the faults only a replicated set-up survives:

* :meth:`PrivateKafkaCluster.lose_broker`: a broker killed and its data deleted (a lost
  disk), then a replacement with the same node id, formatted anew, that re-replicates;
* :meth:`PrivatePostgresHA.fail_over`: the primary killed (keeper and server, a lost
  machine), the monitor promotes the synchronous standby, the old node rejoins as a standby.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.chaos.infra import _script, alive, children_of, pid_in
from tests.support.ports import HIGH, LOW, free_port, free_port_run

BROKERS = (1, 2, 3)


class PrivateKafkaCluster:
    """One KRaft controller and three brokers in ``directory`` (replication factor 3,
    ``min.insync.replicas`` 2: the settings docs/running.md recommends for production)."""

    external = None  # never a shared cluster: every fault here stops one of its brokers

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        first = free_port_run(3, LOW, HIGH)
        self.ports = {n: first + n - 1 for n in BROKERS}
        self.env = {
            **os.environ,
            "ELECTRIC_KAFKA_CLUSTER_DIR": str(directory),
            "KAFKA_CLUSTER_PORT": str(first),
            "KAFKA_CLUSTER_CONTROLLER_PORT": str(free_port()),
            "KAFKA_CLUSTER_HEAP": "320m",
        }
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports.values())
        #: What the services need to create their topics replicated and write with acks=all.
        self.service_env = {
            "ELECTRIC_KAFKA_REPLICATION_FACTOR": "3",
            "ELECTRIC_KAFKA_MIN_INSYNC_REPLICAS": "2",
        }

    def _cluster(self, *args: str, timeout: float = 300) -> str:
        return _script("kafka.sh", ["cluster", *args], self.env, timeout)

    def up(self) -> None:
        self._cluster("up")

    def down(self) -> None:
        self._cluster("down", timeout=180)

    def broker_pid(self, n: int) -> int | None:
        try:
            return int((self.dir / f"node-{n}" / "pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def missing(self) -> list[int]:
        """Brokers whose process is gone (the supervisor starts them again)."""
        return [n for n in BROKERS if not alive(self.broker_pid(n))]

    def revive(self, n: int) -> None:
        self._cluster("start", str(n))

    def stop(self, hard: bool, broker: int = 1) -> None:
        """The old ``kafka_restart`` fault, on one broker: kill -9 or SIGTERM."""
        if hard:
            self._cluster("kill", str(broker))
            return
        pid = self.broker_pid(broker)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

    def lose_broker(self, n: int, away: float) -> str:
        """Broker ``n`` killed with its data deleted; ``away`` s later a replacement (same
        node id, empty disk) starts and re-replicates every partition it holds."""
        self._cluster("wipe", str(n))
        time.sleep(away)
        began = time.monotonic()
        self._cluster("start", str(n))
        took = time.monotonic() - began
        return f"broker {n} wiped, replacement after {away:.1f}s, up in {took:.1f}s"


class PrivatePostgresHA:
    """pg_auto_failover: a monitor and three data nodes, one synchronous standby required.

    ``directory`` must be reachable by the ``postgres`` OS user (the runner puts it under
    /var/tmp). ``url`` names every node; libpq keeps the one that accepts writes."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.env = {
            **os.environ,
            "PGHA_PORT": str(free_port_run(4, LOW, HIGH)),
            "ELECTRIC_PGHA_DIR": str(directory),
        }
        self.url = ""
        #: What the last :meth:`settle` found (the fault table shows it after a restart or
        #: a slow disk, which a failover may follow); the injector empties it before each.
        self.last_settle = ""

    def _ha(self, *args: str, timeout: float = 600) -> str:
        return _script("postgres-ha.sh", list(args), self.env, timeout)

    def up(self) -> None:
        self._ha("up")
        self.url = self._ha("url")

    def down(self) -> None:
        self._ha("down", timeout=300)

    def primary(self, wait: float = 60.0) -> int:
        """The node that is primary now, waiting up to ``wait`` s while the formation is in
        a transition (no node both reported and assigned primary yet)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return int(self._ha("primary", timeout=30))
            except RuntimeError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _node_data(self, n: int) -> Path:
        return self.dir / f"node{n}" / "data"

    def pids(self) -> list[int]:
        """The primary's postmaster and its children (what ``slow_disk`` stops), or [] when
        no node is primary right now (a failover in progress)."""
        try:
            n = self.primary(wait=0.0)
        except RuntimeError:
            return []
        master = pid_in(self._node_data(n) / "postmaster.pid")
        return [] if master is None else [master, *children_of(master)]

    def missing(self) -> list[int]:
        """Data nodes whose keeper is gone (the supervisor restarts them: they rejoin), but
        not one the healer is rebuilding: its keeper is gone on purpose (``rebuilding``)."""
        out = []
        for n in (1, 2, 3):
            if alive(pid_in(self.dir / f"node{n}" / "rebuilding")):
                continue
            if not alive(pid_in(self.dir / f"node{n}" / "keeper.pid")):
                out.append(n)
        return out

    def revive(self, n: int) -> None:
        self._ha("start", str(n), timeout=120)

    def restart_fast(self, timeout: float = 120.0) -> None:
        """The old ``pg_restart`` fault, on the primary: ``pg_ctl stop -m fast`` (every
        connection cut), and its keeper, the supervisor here, starts it again (a ``pg_ctl
        restart`` raced the keeper's own start: "postmaster.pid already exists"). Returns
        once that node answers again, or raises after ``timeout``."""
        n = self.primary()
        tools = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
        bindir = tools[-1] if tools else Path("/usr/bin")
        owner = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        data = str(self._node_data(n))
        subprocess.run(
            [*owner, str(bindir / "pg_ctl"), "-D", data, "-m", "fast", "-w", "-t", "60", "stop"],
            cwd="/",
            capture_output=True,
            check=False,  # already stopped (the keeper between two checks): same fault
            timeout=90,
        )
        port = int(self.env["PGHA_PORT"]) + n
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)]
            if subprocess.run([*ready, "-t", "1"], check=False).returncode == 0:
                self.settle()  # often a failover too (down longer than the health window)
                return
            time.sleep(0.3)
        raise TimeoutError(f"node {n} not restarted by its keeper within {timeout:.0f}s")

    def pause(self, seconds: float) -> int:
        """Slow disk on the primary: its database processes stopped for ``seconds``. The
        monitor may see it unhealthy and fail over (as it would a disk that slow)."""
        stopped = []
        try:
            for pid in self.pids():
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
        self.settle()  # the monitor may have failed the primary over meanwhile
        return len(stopped)

    def fail_over(self, away: float, timeout: float = 180.0) -> str:
        """Kill the primary (keeper and server); wait until another node is primary; after
        ``away`` s in all, restart the old node's keeper (it rejoins as a standby)."""
        old = self.primary()
        began = time.monotonic()
        self._ha("kill", str(old), timeout=60)
        new = None
        while time.monotonic() - began < timeout:
            with contextlib.suppress(RuntimeError, ValueError):
                got = self.primary(wait=0.0)
                if got != old:
                    new = got
                    break
            time.sleep(0.5)
        promoted = time.monotonic() - began
        if new is None:
            raise TimeoutError(f"no standby promoted {timeout:.0f}s after node {old} was killed")
        time.sleep(max(0.0, away - promoted))
        self.revive(old)
        whole = self.settle()
        return f"node {old} killed, node {new} primary after {promoted:.1f}s; {whole}"

    def settle(self, wait: float = 240.0) -> str:
        """Until the formation is whole again (a primary and two secondaries), so that the
        next fault meets a healthy formation (the run injects one failure at a time). A node
        that cannot rejoin is the healer's (``deploy/lib/pgha_heal.py``, started by
        ``postgres-ha.sh up``): after 60 s behind it is rebuilt when that loses nothing; the
        harness only waits, and says which rebuilds the healer made meanwhile."""
        began = time.monotonic()
        healed = self._heal_lines()
        try:
            self._ha("wait", str(int(wait)), timeout=wait + 30)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            state = self._ha("state", timeout=30)
            raise TimeoutError(f"formation not whole after {wait:.0f}s: {state}") from exc
        took = f"formation whole after {time.monotonic() - began:.1f}s"
        rebuilt = [line for line in self._heal_lines()[len(healed) :] if "rebuilt node" in line]
        self.last_settle = f"{took}; healer: {'; '.join(rebuilt)}" if rebuilt else took
        return self.last_settle

    def _heal_lines(self) -> list[str]:
        try:
            return (self.dir / "heal.log").read_text().splitlines()
        except OSError:
            return []

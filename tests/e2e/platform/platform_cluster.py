"""The four services as separate processes on PostgreSQL + Kafka, for the platform e2e tests.

Reuses the walking skeleton's process helpers (``Proc``, ``_free_port``, ``_wait_serving``
from tests/e2e/skeleton) and ``fresh_database`` from tests/support/infra.py; adds per-test extra
environment (speed knobs) and kill/restart of one service.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType

from tests.chaos.partition import in_cgroup
from tests.support.auth import checkpoint_keys_env, write_keys
from tests.support.infra import fresh_database

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("registration", "table", "wallet", "payout")


def _skeleton() -> ModuleType:
    """tests/e2e/skeleton/test_skeleton_services.py as a module (its helpers, not its tests)."""
    name = "test_skeleton_services"
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = ROOT / "tests/e2e/skeleton/test_skeleton_services.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_sk = _skeleton()
Proc = _sk.Proc
free_port = _sk._free_port
wait_serving = _sk._wait_serving


class Cluster:
    """Handles on the running processes (``procs[name]``) and how to (re)start them."""

    def __init__(
        self,
        procs: dict[str, object],
        envs: dict[str, dict[str, str]],
        cwd: Path,
        namespace: str = "",
    ):
        self.procs = procs
        self.envs = envs
        self.cwd = cwd
        #: ELECTRIC_KAFKA_NAMESPACE of this run (its topics are ``<namespace>.electric.…``).
        self.namespace = namespace
        #: Processes started inside a cgroup (v2) of their own: the chaos run's network
        #: partition matches their sockets by it (tests/chaos/partition.py).
        self.cgroups: dict[str, Path] = {}

    def instances(self, service: str) -> list[str]:
        """The process names of ``service``: ``table``, then ``table-2``, ``table-3`` …"""
        return [n for n in self.procs if n.split("-")[0] == service]

    def target(self, name: str) -> str:
        """A service's gRPC target: every instance of it (the channel picks one and moves to
        another when it dies; a table instance forwards to a table's owner), or one process
        when ``name`` is an instance's name (``table-2``)."""
        names = self.instances(name) if name in SERVICES else [name]
        addresses = [str(self.procs[n].target) for n in names]  # type: ignore[attr-defined]
        return addresses[0] if len(addresses) == 1 else "ipv4:" + ",".join(addresses)

    def start(self, name: str) -> None:
        proc = self.procs[name]
        log = proc.log_path.open("ab")  # type: ignore[attr-defined]
        argv = [sys.executable, "-m", f"electric_{name.split('-')[0]}"]
        if name in self.cgroups:  # every socket it opens is tagged with its cgroup
            argv = in_cgroup(argv, self.cgroups[name])
        proc.popen = subprocess.Popen(  # type: ignore[attr-defined]
            argv,
            env=self.envs[name],
            cwd=self.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

    def wait_serving(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            wait_serving(proc, deadline)

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}\n{proc.log()}"  # type: ignore[attr-defined]
            for name, proc in self.procs.items()
        )


@contextlib.contextmanager
def run_cluster(
    postgres_url: str,
    kafka_bootstrap: str,
    tmp: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    namespace: str | None = None,
    table_instances: int = 1,
    serving_timeout: float = 90.0,
    cgroup_for: Callable[[str, tuple[int, ...]], Path | None] | None = None,
) -> Iterator[Cluster]:
    """Start the four services (own database each, shared Kafka; the test session's token
    keys written into ``tmp/keys``: each service verifies with the public JWKS file and signs
    its own calls with its own key file); kill at exit.

    The run gets its own Kafka namespace (``ELECTRIC_KAFKA_NAMESPACE``, default a fresh
    ``e2e-<random>``): its topics and consumer groups are its own, so parallel runs on one
    broker do not interfere.

    ``table_instances`` > 1 runs the table service as that many processes on one database
    (``ELECTRIC_TABLE_OWNERSHIP=partitions``, issue 17): ``table``, ``table-2`` …; the
    other services and the bots reach them through one target naming them all.

    ``cgroup_for(name, (grpc port, metrics port))``: the cgroup a process starts in, or
    None (the chaos run's partitions)."""
    ns = namespace if namespace is not None else f"e2e-{uuid.uuid4().hex[:12]}"
    procs: dict[str, object] = {}
    envs: dict[str, dict[str, str]] = {}
    with contextlib.ExitStack() as stack:
        for name in SERVICES:
            url = stack.enter_context(fresh_database(postgres_url, prefix=f"e2e_plat_{name}"))
            procs[name] = Proc(name, url, free_port(), free_port(), tmp / f"{name}.log")
        table_db = procs["table"].db_url  # type: ignore[attr-defined]
        for k in range(2, table_instances + 1):
            procs[f"table-{k}"] = Proc(
                "table", table_db, free_port(), free_port(), tmp / f"table-{k}.log"
            )
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ELECTRIC_") and k != "DATABASE_URL"
        }
        key_env = write_keys(tmp / "keys").env()
        key_env.update(checkpoint_keys_env(tmp / "keys"))  # verify --checkpoint-keys tmp/keys
        cluster = Cluster(procs, envs, tmp, ns)
        targets = {f"ELECTRIC_{n.upper()}_TARGET": cluster.target(n) for n in SERVICES}
        fleet = {"ELECTRIC_TABLE_OWNERSHIP": "partitions"} if table_instances > 1 else {}
        for name, p in procs.items():
            envs[name] = {
                **base,
                "DATABASE_URL": p.db_url,  # type: ignore[attr-defined]
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
                "ELECTRIC_KAFKA_NAMESPACE": ns,
                **key_env,
                "ELECTRIC_GRPC_PORT": str(p.grpc_port),  # type: ignore[attr-defined]
                "ELECTRIC_METRICS_PORT": str(p.metrics_port),  # type: ignore[attr-defined]
                "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "5",
                "ELECTRIC_VAR_DIR": str(tmp / "var"),
                **targets,
                **(extra_env or {}),
            }
            if table_instances > 1 and name.split("-")[0] == "table":
                envs[name].update(fleet, ELECTRIC_TABLE_ADVERTISED_ADDRESS=p.target)  # type: ignore[attr-defined]
        for name, p in procs.items():
            ports = (p.grpc_port, p.metrics_port)  # type: ignore[attr-defined]
            if cgroup_for is not None and (where := cgroup_for(name, ports)) is not None:
                cluster.cgroups[name] = where
        try:
            for name in procs:
                cluster.start(name)
            cluster.wait_serving(serving_timeout)
            yield cluster
        finally:
            for p in procs.values():
                popen = p.popen  # type: ignore[attr-defined]
                if popen is not None and popen.poll() is None:
                    popen.terminate()
            for p in procs.values():
                popen = p.popen  # type: ignore[attr-defined]
                if popen is not None:
                    try:
                        popen.wait(15)
                    except subprocess.TimeoutExpired:
                        popen.kill()
                        popen.wait(10)

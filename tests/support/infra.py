"""Where the tests find PostgreSQL and Kafka (used by the fixtures in tests/conftest.py).

Order, per resource, decided lazily the first time a test asks for it:

1. explicit environment variables: ``DATABASE_URL`` / ``KAFKA_BOOTSTRAP_SERVERS``;
2. testcontainers, when a Docker engine answers a ping within a couple of seconds
   (``ELECTRIC_TESTCONTAINERS=0`` skips this step);
3. the local scripts: ``bash deploy/infra.sh up postgres|kafka`` (installs PostgreSQL from
   Debian's packages, fetches the Kafka 3.9 jars with Maven, starts both on 127.0.0.1).

Every step is injectable (``env``, ``docker_ping``, ``run_script``) so the order is unit-tested
without Docker and without servers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
INFRA_SCRIPT = REPO_ROOT / "deploy" / "infra.sh"

PG_USER = "electric"
PG_PASSWORD = "electric"
PG_DB = "electric"
POSTGRES_IMAGE = "postgres:15"
KAFKA_IMAGE = "apache/kafka:3.9.1"

ENV_DATABASE_URL = "DATABASE_URL"
ENV_KAFKA = "KAFKA_BOOTSTRAP_SERVERS"
ENV_USE_DOCKER = "ELECTRIC_TESTCONTAINERS"

SOURCE_ENV = "env"
SOURCE_DOCKER = "docker"
SOURCE_LOCAL = "local"


def normalize_pg_url(url: str) -> str:
    """Return ``url`` as a SQLAlchemy URL that uses the psycopg 3 driver."""
    for prefix in ("postgresql+psycopg2://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def local_pg_url(env: Mapping[str, str]) -> str:
    port = env.get("PGPORT", "5432")
    return f"postgresql+psycopg://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{port}/{PG_DB}"


def local_kafka_bootstrap(env: Mapping[str, str]) -> str:
    return f"127.0.0.1:{env.get('KAFKA_PORT', '9092')}"


def docker_engine_answers(timeout: float = 2.0) -> bool:
    """True when a Docker engine answers a ping. Never blocks much longer than ``timeout``."""
    result: list[bool] = []

    def ping() -> None:
        try:
            import docker  # type: ignore[import-untyped]

            client = docker.from_env(timeout=timeout)
            try:
                result.append(bool(client.ping()))
            finally:
                client.close()
        except Exception:
            result.append(False)

    worker = threading.Thread(target=ping, name="docker-ping", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    return bool(result and result[0])


def run_infra_script(component: str) -> None:
    """Start one component ("postgres" or "kafka") with the local scripts; raise on failure.

    Under pytest-xdist every worker asks: one at a time (a file lock), so the first starts
    the server and the others find it up."""
    lock_path = REPO_ROOT / "var" / f".infra-{component}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            ["bash", str(INFRA_SCRIPT), "up", component],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(
            f"`bash deploy/infra.sh up {component}` failed with exit code {proc.returncode}:\n"
            f"{proc.stdout}\n{proc.stderr}"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def kafka_container_env(advertised_host: str, advertised_port: int) -> dict[str, str]:
    """Environment for a single-node KRaft ``apache/kafka`` container (same as docker-compose)."""
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{advertised_host}:{advertised_port}",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_LOG_RETENTION_MS": "-1",
    }


def start_postgres_container() -> tuple[str, Any]:
    from testcontainers.postgres import PostgresContainer

    container = PostgresContainer(
        POSTGRES_IMAGE, username=PG_USER, password=PG_PASSWORD, dbname=PG_DB, driver="psycopg"
    )
    container.start()
    return normalize_pg_url(container.get_connection_url()), container


def start_kafka_container() -> tuple[str, Any]:
    # testcontainers' KafkaContainer drives Confluent images; the official apache/kafka image
    # is configured through KAFKA_* variables, with a fixed host port so it can advertise it.
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    host_port = _free_port()
    container = DockerContainer(KAFKA_IMAGE)
    host = container.get_docker_client().host()
    # Loopback only when the engine is local; a remote engine must publish on its interface.
    local = host in {"localhost", "127.0.0.1", "::1"}
    if local:
        host = "127.0.0.1"
    for key, value in kafka_container_env(host, host_port).items():
        container.with_env(key, value)
    binding: Any = ("127.0.0.1", host_port) if local else host_port
    container.with_bind_ports(9092, binding)
    container.start()
    wait_for_logs(container, "Kafka Server started", timeout=120)
    return f"{host}:{host_port}", container


@dataclass
class Infrastructure:
    """Lazily provides the PostgreSQL URL and Kafka bootstrap servers for one test session."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    docker_ping: Callable[[], bool] = docker_engine_answers
    run_script: Callable[[str], None] = run_infra_script
    start_postgres: Callable[[], tuple[str, Any]] = start_postgres_container
    start_kafka: Callable[[], tuple[str, Any]] = start_kafka_container
    sources: dict[str, str] = field(default_factory=dict)
    _pg_url: str | None = None
    _kafka: str | None = None
    _docker: bool | None = None
    _containers: list[Any] = field(default_factory=list)

    def docker_available(self) -> bool:
        if self._docker is None:
            if self.env.get(ENV_USE_DOCKER, "").strip().lower() in {"0", "false", "no", "off"}:
                self._docker = False
            else:
                self._docker = self.docker_ping()
        return self._docker

    def postgres_url(self) -> str:
        if self._pg_url is None:
            explicit = self.env.get(ENV_DATABASE_URL, "").strip()
            if explicit:
                self._pg_url, self.sources["postgres"] = normalize_pg_url(explicit), SOURCE_ENV
            elif self.docker_available():
                url, container = self.start_postgres()
                self._containers.append(container)
                self._pg_url, self.sources["postgres"] = url, SOURCE_DOCKER
            else:
                self.run_script("postgres")
                self._pg_url, self.sources["postgres"] = local_pg_url(self.env), SOURCE_LOCAL
        return self._pg_url

    def kafka_bootstrap(self) -> str:
        if self._kafka is None:
            explicit = self.env.get(ENV_KAFKA, "").strip()
            if explicit:
                self._kafka, self.sources["kafka"] = explicit, SOURCE_ENV
            elif self.docker_available():
                bootstrap, container = self.start_kafka()
                self._containers.append(container)
                self._kafka, self.sources["kafka"] = bootstrap, SOURCE_DOCKER
            else:
                self.run_script("kafka")
                self._kafka, self.sources["kafka"] = local_kafka_bootstrap(self.env), SOURCE_LOCAL
        return self._kafka

    def close(self) -> None:
        """Stop the containers this session started (local servers are left running)."""
        while self._containers:
            container = self._containers.pop()
            with contextlib.suppress(Exception):
                container.stop()


def _admin_conninfo(sqlalchemy_url: str) -> str:
    """A libpq URI for psycopg.connect from a SQLAlchemy URL. A multi-host URL (SQLAlchemy's
    repeated ``host=h:p``; deploy/postgres-ha.sh) becomes libpq's ``host=h1,h2&port=p1,p2``:
    libpq would keep only the last of repeated ``host`` parameters."""
    from urllib.parse import quote

    from sqlalchemy.engine import make_url

    url = make_url(sqlalchemy_url).set(drivername="postgresql")
    hosts = url.query.get("host")
    if not isinstance(hosts, tuple) or len(hosts) < 2:
        return url.render_as_string(hide_password=False)
    names, ports = zip(*(h.rsplit(":", 1) for h in hosts), strict=True)
    rest = url.difference_update_query(["host"]).render_as_string(hide_password=False)
    joined = f"host={quote(','.join(names))}&port={','.join(ports)}"
    return f"{rest}{'&' if '?' in rest else '?'}{joined}"


@contextlib.contextmanager
def fresh_database(server_url: str, prefix: str = "test") -> Iterator[str]:
    """Create a uniquely named empty database, yield its SQLAlchemy URL, drop it afterwards."""
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    name = f"{prefix}_{uuid.uuid4().hex[:20]}"
    conninfo = _admin_conninfo(server_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(name)
                        )
                    )
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

"""Order in which the test fixtures find infrastructure: env vars, Docker, local scripts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support import infra
from tests.support.infra import Infrastructure


class Recorder:
    def __init__(self, docker: bool) -> None:
        self.docker = docker
        self.calls: list[str] = []
        self.stopped: list[str] = []

    def ping(self) -> bool:
        self.calls.append("ping")
        return self.docker

    def script(self, component: str) -> None:
        self.calls.append(f"script:{component}")

    def _container(self, name: str) -> Any:
        recorder = self

        class FakeContainer:
            def stop(self) -> None:
                recorder.stopped.append(name)

        return FakeContainer()

    def start_postgres(self) -> tuple[str, Any]:
        self.calls.append("container:postgres")
        return "postgresql+psycopg://u:p@docker-host:32768/electric", self._container("postgres")

    def start_kafka(self) -> tuple[str, Any]:
        self.calls.append("container:kafka")
        return "docker-host:32769", self._container("kafka")

    def make(self, env: dict[str, str]) -> Infrastructure:
        return Infrastructure(
            env=env,
            docker_ping=self.ping,
            run_script=self.script,
            start_postgres=self.start_postgres,
            start_kafka=self.start_kafka,
        )


def test_env_vars_win_over_docker_and_scripts() -> None:
    rec = Recorder(docker=True)
    provider = rec.make(
        {"DATABASE_URL": "postgresql://a:b@db.example:6543/x", "KAFKA_BOOTSTRAP_SERVERS": "k:1"}
    )
    assert provider.postgres_url() == "postgresql+psycopg://a:b@db.example:6543/x"
    assert provider.kafka_bootstrap() == "k:1"
    assert rec.calls == []
    assert provider.sources == {"postgres": "env", "kafka": "env"}


def test_docker_used_when_engine_answers_and_containers_stopped_on_close() -> None:
    rec = Recorder(docker=True)
    provider = rec.make({})
    assert provider.postgres_url() == "postgresql+psycopg://u:p@docker-host:32768/electric"
    assert provider.kafka_bootstrap() == "docker-host:32769"
    # The engine is pinged once per session, each container started once.
    assert provider.postgres_url() and provider.kafka_bootstrap()
    assert rec.calls == ["ping", "container:postgres", "container:kafka"]
    provider.close()
    assert sorted(rec.stopped) == ["kafka", "postgres"]


def test_no_docker_falls_back_to_local_scripts() -> None:
    rec = Recorder(docker=False)
    provider = rec.make({"PGPORT": "5999", "KAFKA_PORT": "19092"})
    assert (
        provider.postgres_url() == "postgresql+psycopg://electric:electric@127.0.0.1:5999/electric"
    )
    assert provider.kafka_bootstrap() == "127.0.0.1:19092"
    assert rec.calls == ["ping", "script:postgres", "script:kafka"]
    assert provider.sources == {"postgres": "local", "kafka": "local"}


def test_local_defaults() -> None:
    rec = Recorder(docker=False)
    provider = rec.make({})
    assert (
        provider.postgres_url() == "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"
    )
    assert provider.kafka_bootstrap() == "127.0.0.1:9092"


def test_env_for_one_resource_only_and_lazy_start() -> None:
    rec = Recorder(docker=False)
    provider = rec.make({"DATABASE_URL": "postgresql+psycopg://x:y@h:1/d"})
    assert rec.calls == []  # nothing starts until a fixture asks
    assert provider.kafka_bootstrap() == "127.0.0.1:9092"
    assert rec.calls == ["ping", "script:kafka"]
    assert provider.postgres_url() == "postgresql+psycopg://x:y@h:1/d"
    assert rec.calls == ["ping", "script:kafka"]


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_testcontainers_can_be_disabled(value: str) -> None:
    rec = Recorder(docker=True)
    provider = rec.make({"ELECTRIC_TESTCONTAINERS": value})
    provider.postgres_url()
    assert rec.calls == ["script:postgres"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
        ("postgres://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
        ("postgresql+psycopg2://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
        ("postgresql+psycopg://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
    ],
)
def test_normalize_pg_url(given: str, expected: str) -> None:
    assert infra.normalize_pg_url(given) == expected


def test_docker_ping_without_daemon_is_false_and_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/electric-docker.sock")
    start = time.monotonic()
    assert infra.docker_engine_answers(timeout=1.0) is False
    assert time.monotonic() - start < 3.0


def test_docker_ping_never_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    import docker

    def hang(**_: Any) -> Any:
        time.sleep(30)
        raise AssertionError("unreachable")

    monkeypatch.setattr(docker, "from_env", hang)
    start = time.monotonic()
    assert infra.docker_engine_answers(timeout=0.2) is False
    assert time.monotonic() - start < 2.0


def test_kafka_container_env_advertises_mapped_port() -> None:
    env = infra.kafka_container_env("localhost", 40123)
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://localhost:40123"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"

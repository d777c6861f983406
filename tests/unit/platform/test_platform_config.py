"""Configuration from environment variables: defaults, overrides, validation."""

from __future__ import annotations

import pytest
from electric_platform.config import (
    ENV_VARS,
    SERVICES,
    ConfigError,
    all_env_var_names,
    env_ms,
    load_config,
)


def test_defaults_per_service() -> None:
    ports = {s: (load_config(s, {}).grpc_port, load_config(s, {}).metrics_port) for s in SERVICES}
    assert ports == {
        "registration": (50051, 9101),
        "table": (50052, 9102),
        "wallet": (50053, 9103),
        "payout": (50054, 9104),
    }
    cfg = load_config("table", {})
    assert cfg.grpc_host == "127.0.0.1" and cfg.metrics_host == "127.0.0.1"
    assert cfg.database_url == "sqlite+pysqlite:///var/table.db"
    assert cfg.kafka_bootstrap_servers == "" and not cfg.uses_kafka
    # No default key: auth material must be configured (the host refuses to start without).
    assert cfg.auth_jwks == "" and cfg.auth_signing_key == ""
    assert (cfg.auth_issuer, cfg.auth_audience) == ("electric", "electric")
    assert cfg.auth_max_token_lifetime == 86400.0 and cfg.page_token_key == ""
    assert cfg.log_level == "INFO" and cfg.log_format == "json"
    assert cfg.shutdown_grace_seconds == 10.0
    assert cfg.events_topic == "electric.table.events"
    assert cfg.target("wallet") == "127.0.0.1:50053"


def test_plain_names_and_per_service_overrides() -> None:
    env = {
        "ELECTRIC_GRPC_PORT": "6000",
        "ELECTRIC_TABLE_GRPC_PORT": "6002",
        "DATABASE_URL": "postgresql+psycopg://u:pw@db/x",
        "ELECTRIC_PAYOUT_DATABASE_URL": "postgresql+psycopg://u:pw@db/payout",
        "KAFKA_BOOTSTRAP_SERVERS": "k:9092",
        "ELECTRIC_REGISTRATION_KAFKA_BOOTSTRAP_SERVERS": "",
        "ELECTRIC_AUTH_JWKS": '{"keys": []}',
        "ELECTRIC_WALLET_AUTH_SIGNING_KEY": "s" * 40,
        "ELECTRIC_AUTH_MAX_TOKEN_LIFETIME_SECONDS": "3600",
        "ELECTRIC_PAGE_TOKEN_KEY": "p" * 40,
        "ELECTRIC_LOG_LEVEL": "debug",
        "ELECTRIC_VAR_DIR": "/data",
        "ELECTRIC_WALLET_TARGET": "wallet:50053",
    }
    assert load_config("table", env).grpc_port == 6002
    assert load_config("payout", env).grpc_port == 6000
    assert load_config("payout", env).database_url.endswith("/payout")
    assert load_config("table", env).database_url.endswith("/x")
    assert load_config("table", env).kafka_bootstrap_servers == "k:9092"
    # An explicitly empty per-service override means "in-process bus" for that service.
    assert load_config("registration", env).kafka_bootstrap_servers == ""
    cfg = load_config("wallet", env)
    assert cfg.auth_signing_key == "s" * 40 and cfg.log_level == "DEBUG"
    assert load_config("table", env).auth_signing_key == ""  # per-service override only
    assert cfg.auth_max_token_lifetime == 3600.0 and cfg.page_token_key == "p" * 40
    assert cfg.target("wallet") == "wallet:50053"
    assert "pw" not in str(cfg.describe())
    described = str(cfg.describe()) + repr(cfg)  # key material is never shown
    assert "s" * 40 not in described and "p" * 40 not in described
    assert load_config("wallet", {"ELECTRIC_VAR_DIR": "/data"}).database_url == (
        "sqlite+pysqlite:////data/wallet.db"
    )


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"ELECTRIC_GRPC_PORT": "abc"}, "not an integer"),
        ({"ELECTRIC_GRPC_PORT": "70000"}, "out of range"),
        ({"ELECTRIC_METRICS_PORT": "-2"}, "out of range"),
        ({"ELECTRIC_LOG_LEVEL": "LOUD"}, "ELECTRIC_LOG_LEVEL"),
        ({"ELECTRIC_LOG_FORMAT": "xml"}, "ELECTRIC_LOG_FORMAT"),
        ({"ELECTRIC_SHUTDOWN_GRACE_SECONDS": "-1"}, "negative"),
        ({"ELECTRIC_AUTH_MAX_TOKEN_LIFETIME_SECONDS": "0"}, "positive"),
        ({"ELECTRIC_AUTH_MAX_TOKEN_LIFETIME_SECONDS": "day"}, "number"),
        ({"ELECTRIC_PAGE_TOKEN_KEY": "short"}, "32 characters"),
    ],
)
def test_bad_values_are_rejected(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config("registration", env)


def test_unknown_service_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown service"):
        load_config("casino", {})


def test_registry_is_documented_and_complete() -> None:
    names = [v.name for v in ENV_VARS]
    assert len(names) == len(set(names))
    assert all(v.doc.strip() for v in ENV_VARS)
    every = all_env_var_names()
    assert {"DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS", "ELECTRIC_AUTH_JWKS"} <= every
    assert "ELECTRIC_AUTH_JWKS_FILE" in every and "ELECTRIC_PAYOUT_AUTH_SIGNING_KEY_FILE" in every
    assert "ELECTRIC_AUTH_SECRET" not in every  # no shared secret any more
    assert "ELECTRIC_TABLE_GRPC_PORT" in every and "ELECTRIC_TABLE_DATABASE_URL" in every
    assert "ELECTRIC_TABLE_VAR_DIR" not in every  # VAR_DIR is process-wide


def test_docs_list_every_variable() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "platform.md").read_text()
    missing = [v.name for v in ENV_VARS if f"`{v.name}`" not in doc]
    assert missing == []


def test_database_url_password_is_masked_by_sqlalchemy() -> None:
    env = {"DATABASE_URL": "postgresql+psycopg://electric:s3cr%40t@127.0.0.1:5432/w"}
    shown = load_config("wallet", env).describe()["database_url"]
    assert shown == "postgresql+psycopg://electric:***@127.0.0.1:5432/w"
    sqlite = load_config("wallet", {"ELECTRIC_VAR_DIR": "/data"}).describe()["database_url"]
    assert sqlite == "sqlite+pysqlite:////data/wallet.db"


def test_env_ms_reads_a_duration_knob_or_refuses_it_by_name() -> None:
    assert env_ms("X_MS", 500, {}) == 500
    assert env_ms("X_MS", 500, {"X_MS": "  "}) == 500
    assert env_ms("X_MS", 500, {"X_MS": "0"}) == 0
    assert env_ms("X_MS", 500, {"X_MS": " 1200 "}) == 1200
    for bad, says in (("-1", "must be >= 0"), ("1.5", "whole number"), ("soon", "whole number")):
        with pytest.raises(ValueError, match=says) as info:
            env_ms("X_MS", 500, {"X_MS": bad})
        assert "X_MS" in str(info.value)


def test_the_topic_replication_settings() -> None:
    """``ELECTRIC_KAFKA_REPLICATION_FACTOR`` (read by the event log's ``ensure_topics``, named
    in the platform's registry): 1 by default; 3 → min.insync.replicas 2 (issue 28)."""
    from electric_eventlog import kafka
    from electric_platform.config import KAFKA_MIN_INSYNC_REPLICAS, KAFKA_REPLICATION_FACTOR

    assert KAFKA_REPLICATION_FACTOR.name == kafka.REPLICATION_ENV
    assert KAFKA_MIN_INSYNC_REPLICAS.name == kafka.MIN_INSYNC_ENV
    assert kafka.replication_settings({}) == (1, None)
    assert kafka.replication_settings({kafka.REPLICATION_ENV: "3"}) == (3, 2)
    both = {kafka.REPLICATION_ENV: "3", kafka.MIN_INSYNC_ENV: "3"}
    assert kafka.replication_settings(both) == (3, 3)
    for bad in ({kafka.REPLICATION_ENV: "0"}, {kafka.MIN_INSYNC_ENV: "2"}):
        with pytest.raises(ValueError):
            kafka.replication_settings(bad)

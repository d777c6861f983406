"""Service configuration from environment variables, with documented defaults.

Every variable any service reads is listed in :data:`ENV_VARS` (name, default, doc). The
infrastructure (docker-compose, deploy scripts, the embedded runner) relies on these names:
they are stable; add new ones, never rename.

Resolution for a service ``<svc>`` (``registration``, ``table``, ``wallet``, ``payout``) and
a variable ``NAME``:

1. ``ELECTRIC_<SVC>_<NAME without ELECTRIC_>`` — a per-service override, e.g.
   ``ELECTRIC_TABLE_GRPC_PORT`` or ``ELECTRIC_TABLE_DATABASE_URL``. Needed when several services
   share one process environment (the embedded ``make run``);
2. ``NAME`` itself, e.g. ``ELECTRIC_GRPC_PORT`` or ``DATABASE_URL`` (one service per
   process/container: set the plain name);
3. the default, which may depend on the service (ports, SQLite file name).

Empty strings count as unset except for ``KAFKA_BOOTSTRAP_SERVERS`` where empty *is* the
documented default (in-process bus).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from electric_eventlog.topics import namespaced
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

#: The services of the platform, in port order.
SERVICES: tuple[str, ...] = ("registration", "table", "wallet", "payout")

#: Default gRPC port of each service (TEAM-CONVENTIONS.md).
DEFAULT_GRPC_PORTS: Mapping[str, int] = {
    "registration": 50051,
    "table": 50052,
    "wallet": 50053,
    "payout": 50054,
}

#: Default Prometheus ``/metrics`` port of each service.
DEFAULT_METRICS_PORTS: Mapping[str, int] = {
    "registration": 9101,
    "table": 9102,
    "wallet": 9103,
    "payout": 9104,
}

#: The development signing secret used when ``ELECTRIC_AUTH_SECRET`` is unset. Anyone can
#: mint tokens with it: a service running with it logs a loud warning at start.
DEV_AUTH_SECRET = "electric-dev-secret-do-not-use-in-production"


@dataclass(frozen=True)
class EnvVar:
    """One environment variable a service reads.

    ``default`` is the text default; ``{service}``, ``{grpc_port}``, ``{metrics_port}`` and
    ``{var_dir}`` in it are replaced per service. ``per_service`` tells whether the
    ``ELECTRIC_<SVC>_…`` override form is honoured.
    """

    name: str
    default: str
    doc: str
    per_service: bool = True

    def override_name(self, service: str) -> str:
        """Name of the per-service override of this variable for ``service``."""
        base = self.name.removeprefix("ELECTRIC_")
        return f"ELECTRIC_{service.upper()}_{base}"


GRPC_HOST = EnvVar(
    "ELECTRIC_GRPC_HOST",
    "127.0.0.1",
    "Address the gRPC server binds to. Containers set 0.0.0.0.",
)
GRPC_PORT = EnvVar(
    "ELECTRIC_GRPC_PORT",
    "{grpc_port}",
    "gRPC port: registration 50051, table 50052, wallet 50053, payout 50054. 0 = any free port.",
)
METRICS_HOST = EnvVar(
    "ELECTRIC_METRICS_HOST",
    "127.0.0.1",
    "Address the Prometheus /metrics HTTP server binds to.",
)
METRICS_PORT = EnvVar(
    "ELECTRIC_METRICS_PORT",
    "{metrics_port}",
    "Prometheus /metrics port: registration 9101, table 9102, wallet 9103, payout 9104. "
    "0 = any free port; -1 = no metrics server.",
)
VAR_DIR = EnvVar(
    "ELECTRIC_VAR_DIR",
    "var",
    "Directory for local state (SQLite files) when DATABASE_URL is unset; relative to the "
    "working directory.",
    per_service=False,
)
DATABASE_URL = EnvVar(
    "DATABASE_URL",
    "sqlite+pysqlite:///{var_dir}/{service}.db",
    "SQLAlchemy URL of the service's own database, e.g. "
    "postgresql+psycopg://electric:electric@127.0.0.1:5432/registration. Default: a SQLite "
    "file per service under ELECTRIC_VAR_DIR. Each service needs its own database.",
)
KAFKA_BOOTSTRAP_SERVERS = EnvVar(
    "KAFKA_BOOTSTRAP_SERVERS",
    "",
    "Kafka bootstrap servers (host:port,…). Empty = no Kafka: events go over the in-process "
    "bus (embedded mode).",
)
KAFKA_NAMESPACE = EnvVar(
    "ELECTRIC_KAFKA_NAMESPACE",
    "",
    "Prefix of every Kafka topic and consumer group the services use (<namespace>.<name>, "
    "e.g. run42.electric.table.events, run42.table.tournaments). Empty = the plain names. "
    "Lets several clusters share one broker; every service of one cluster needs the same "
    "value. Letters, digits, '.', '_' and '-' only.",
    per_service=False,
)
AUTH_SECRET = EnvVar(
    "ELECTRIC_AUTH_SECRET",
    DEV_AUTH_SECRET,
    "HS256 secret that signs and verifies bearer tokens; the same value for all services. "
    "The default is a public development secret and makes the service log a loud warning.",
)
LOG_LEVEL = EnvVar(
    "ELECTRIC_LOG_LEVEL",
    "INFO",
    "Log level: DEBUG, INFO, WARNING, ERROR.",
)
LOG_FORMAT = EnvVar(
    "ELECTRIC_LOG_FORMAT",
    "json",
    "Log format: json (one JSON object per line, default) or console (human-readable).",
)
SHUTDOWN_GRACE = EnvVar(
    "ELECTRIC_SHUTDOWN_GRACE_SECONDS",
    "10",
    "On SIGTERM/SIGINT: seconds in-flight calls get to finish before they are cancelled.",
)
REGISTRATION_TARGET = EnvVar(
    "ELECTRIC_REGISTRATION_TARGET",
    "127.0.0.1:50051",
    "host:port where other services reach the registration service.",
    per_service=False,
)
TABLE_TARGET = EnvVar(
    "ELECTRIC_TABLE_TARGET",
    "127.0.0.1:50052",
    "host:port where other services reach the table service.",
    per_service=False,
)
WALLET_TARGET = EnvVar(
    "ELECTRIC_WALLET_TARGET",
    "127.0.0.1:50053",
    "host:port where other services reach the wallet service.",
    per_service=False,
)
PAYOUT_TARGET = EnvVar(
    "ELECTRIC_PAYOUT_TARGET",
    "127.0.0.1:50054",
    "host:port where other services reach the payout service.",
    per_service=False,
)

#: Every environment variable the services read. docker-compose and the docs are checked
#: against this tuple.
ENV_VARS: tuple[EnvVar, ...] = (
    GRPC_HOST,
    GRPC_PORT,
    METRICS_HOST,
    METRICS_PORT,
    VAR_DIR,
    DATABASE_URL,
    KAFKA_BOOTSTRAP_SERVERS,
    KAFKA_NAMESPACE,
    AUTH_SECRET,
    LOG_LEVEL,
    LOG_FORMAT,
    SHUTDOWN_GRACE,
    REGISTRATION_TARGET,
    TABLE_TARGET,
    WALLET_TARGET,
    PAYOUT_TARGET,
)

_TARGETS: Mapping[str, EnvVar] = {
    "registration": REGISTRATION_TARGET,
    "table": TABLE_TARGET,
    "wallet": WALLET_TARGET,
    "payout": PAYOUT_TARGET,
}

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(ValueError):
    """An environment variable holds a value that cannot be used."""


def all_env_var_names() -> frozenset[str]:
    """Every name a service may read: the plain names and all per-service overrides."""
    names = {v.name for v in ENV_VARS}
    for var in ENV_VARS:
        if var.per_service:
            names.update(var.override_name(s) for s in SERVICES)
    return frozenset(names)


@dataclass(frozen=True)
class ServiceConfig:
    """The resolved configuration of one service."""

    service: str
    grpc_host: str
    grpc_port: int
    metrics_host: str
    metrics_port: int
    database_url: str
    kafka_bootstrap_servers: str
    auth_secret: str
    log_level: str
    log_format: str
    shutdown_grace_seconds: float
    var_dir: Path
    targets: Mapping[str, str] = field(default_factory=dict)
    kafka_namespace: str = ""

    @property
    def uses_kafka(self) -> bool:
        """True when events go to Kafka, False for the in-process bus."""
        return bool(self.kafka_bootstrap_servers)

    @property
    def auth_secret_is_default(self) -> bool:
        """True when the public development secret is in use."""
        return self.auth_secret == DEV_AUTH_SECRET

    @property
    def events_topic(self) -> str:
        """The Kafka topic of this service's events: ``electric.<service>.events``."""
        return f"electric.{self.service}.events"

    def kafka_name(self, name: str) -> str:
        """The broker name of topic or consumer group ``name``: ``<namespace>.<name>`` with
        ``ELECTRIC_KAFKA_NAMESPACE`` set, else ``name`` itself."""
        return kafka_name(self.kafka_namespace, name)

    def target(self, service: str) -> str:
        """host:port where ``service`` is reached."""
        return self.targets[service]

    def describe(self) -> dict[str, object]:
        """The configuration with secrets masked, for the start-up log line."""
        return {
            "service": self.service,
            "grpc": f"{self.grpc_host}:{self.grpc_port}",
            "metrics": f"{self.metrics_host}:{self.metrics_port}",
            "database_url": _mask_url(self.database_url),
            "kafka_bootstrap_servers": self.kafka_bootstrap_servers or "(in-process bus)",
            "kafka_namespace": self.kafka_namespace,
            "auth_secret": "(development default)" if self.auth_secret_is_default else "(set)",
            "log_level": self.log_level,
            "shutdown_grace_seconds": self.shutdown_grace_seconds,
        }


_NAMESPACE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def kafka_name(namespace: str, name: str) -> str:
    """``<namespace>.<name>``, or ``name`` when ``namespace`` is empty (the Kafka bus applies
    this to every topic and consumer group; see ``ELECTRIC_KAFKA_NAMESPACE``)."""
    return namespaced(namespace, name)


def _namespace(text: str) -> str:
    value = text.strip().strip(".")
    bad = sorted(set(value) - _NAMESPACE_CHARS)
    if bad:
        raise ConfigError(
            f"{KAFKA_NAMESPACE.name}={text!r} may hold only letters, digits, '.', '_' and '-'"
        )
    if len(value) > 100:
        raise ConfigError(f"{KAFKA_NAMESPACE.name} is longer than 100 characters")
    return value


def _mask_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (SQLAlchemy renders the URL)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        # Not a database URL at all: nothing to render, so show nothing that could be secret.
        return "(unparseable URL)" if "@" in url else url


def _lookup(
    var: EnvVar, service: str, environ: Mapping[str, str], fmt: Mapping[str, object]
) -> str:
    if var.per_service:
        value = environ.get(var.override_name(service), "")
        if value:
            return value
    value = environ.get(var.name, "")
    if value:
        return value
    return var.default.format(**fmt)


def _int(var: EnvVar, text: str, *, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{var.name}={text!r} is not an integer") from None
    if value < minimum or value > 65535:
        raise ConfigError(f"{var.name}={value} is out of range [{minimum}, 65535]")
    return value


def load_config(service: str, environ: Mapping[str, str] | None = None) -> ServiceConfig:
    """Resolve the configuration of ``service`` from ``environ`` (default ``os.environ``)."""
    if service not in SERVICES:
        raise ConfigError(f"unknown service {service!r}; expected one of {', '.join(SERVICES)}")
    env = os.environ if environ is None else environ
    var_dir_text = env.get(VAR_DIR.name, "") or VAR_DIR.default
    fmt: dict[str, object] = {
        "service": service,
        "grpc_port": DEFAULT_GRPC_PORTS[service],
        "metrics_port": DEFAULT_METRICS_PORTS[service],
        "var_dir": var_dir_text,
    }

    def get(var: EnvVar) -> str:
        return _lookup(var, service, env, fmt)

    log_level = get(LOG_LEVEL).upper()
    if log_level not in _LOG_LEVELS:
        raise ConfigError(f"{LOG_LEVEL.name}={log_level!r}; expected one of {_LOG_LEVELS}")
    log_format = get(LOG_FORMAT).lower()
    if log_format not in ("json", "console"):
        raise ConfigError(f"{LOG_FORMAT.name}={log_format!r}; expected json or console")
    try:
        grace = float(get(SHUTDOWN_GRACE))
    except ValueError:
        raise ConfigError(f"{SHUTDOWN_GRACE.name} must be a number of seconds") from None
    if grace < 0:
        raise ConfigError(f"{SHUTDOWN_GRACE.name} must not be negative")
    # KAFKA_BOOTSTRAP_SERVERS: an explicitly empty per-service override is honoured too.
    kafka = env.get(KAFKA_BOOTSTRAP_SERVERS.override_name(service))
    if kafka is None:
        kafka = env.get(KAFKA_BOOTSTRAP_SERVERS.name, KAFKA_BOOTSTRAP_SERVERS.default)
    secret = get(AUTH_SECRET)
    return ServiceConfig(
        service=service,
        grpc_host=get(GRPC_HOST),
        grpc_port=_int(GRPC_PORT, get(GRPC_PORT), minimum=0),
        metrics_host=get(METRICS_HOST),
        metrics_port=_int(METRICS_PORT, get(METRICS_PORT), minimum=-1),
        database_url=get(DATABASE_URL),
        kafka_bootstrap_servers=kafka.strip(),
        auth_secret=secret,
        log_level=log_level,
        log_format=log_format,
        shutdown_grace_seconds=grace,
        var_dir=Path(var_dir_text),
        targets={name: get(var) for name, var in _TARGETS.items()},
        kafka_namespace=_namespace(get(KAFKA_NAMESPACE)),
    )

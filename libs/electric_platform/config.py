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

#: Default cap on a bearer token's lifetime (``exp - iat``), seconds.
DEFAULT_MAX_TOKEN_LIFETIME = 86400.0


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
KAFKA_REPLICATION_FACTOR = EnvVar(
    "ELECTRIC_KAFKA_REPLICATION_FACTOR",
    "1",
    "Replication factor of the Kafka topics the services create (1: one local broker). "
    "Production: 3, on three or more brokers (docs/running.md); the topics then get "
    "min.insync.replicas=2, so with the producers' acks=all losing a broker loses nothing "
    "acknowledged.",
    per_service=False,
)
KAFKA_MIN_INSYNC_REPLICAS = EnvVar(
    "ELECTRIC_KAFKA_MIN_INSYNC_REPLICAS",
    "",
    "min.insync.replicas of the topics the services create; empty = 2 when the replication "
    "factor is above 1, the broker's default otherwise.",
    per_service=False,
)
AUTH_JWKS = EnvVar(
    "ELECTRIC_AUTH_JWKS",
    "",
    "JWKS (JSON) of the PUBLIC Ed25519 keys that verify bearer tokens: the issuer key(s) and "
    "each service's key, with 'kid' for rotation and the members electric_roles / "
    "electric_subjects restricting what each key may sign (docs/security.md). Required "
    "(or ELECTRIC_AUTH_JWKS_FILE); there is no default key.",
)
AUTH_JWKS_FILE = EnvVar(
    "ELECTRIC_AUTH_JWKS_FILE",
    "",
    "Path of a JWKS file, read at start when ELECTRIC_AUTH_JWKS is unset "
    "(python -m electric_platform.keys DIR writes a development set).",
)
AUTH_SIGNING_KEY = EnvVar(
    "ELECTRIC_AUTH_SIGNING_KEY",
    "",
    "The service's own PRIVATE Ed25519 JWK (JSON) that signs its calls to other services "
    "(role service, subject = the service name); its public half must be in the JWKS. Set it "
    "per service (ELECTRIC_<SVC>_AUTH_SIGNING_KEY) when services share an environment.",
)
AUTH_SIGNING_KEY_FILE = EnvVar(
    "ELECTRIC_AUTH_SIGNING_KEY_FILE",
    "",
    "Path of the service's private JWK file, read when ELECTRIC_AUTH_SIGNING_KEY is unset.",
)
AUTH_ISSUER = EnvVar(
    "ELECTRIC_AUTH_ISSUER",
    "electric",
    "Required 'iss' claim of bearer tokens (and the one the service's own tokens carry).",
)
AUTH_AUDIENCE = EnvVar(
    "ELECTRIC_AUTH_AUDIENCE",
    "electric",
    "Required 'aud' claim of bearer tokens (and the one the service's own tokens carry).",
)
AUTH_MAX_TOKEN_LIFETIME = EnvVar(
    "ELECTRIC_AUTH_MAX_TOKEN_LIFETIME_SECONDS",
    "86400",
    "Longest accepted bearer-token lifetime (exp - iat), seconds; longer tokens and tokens "
    "without iat are rejected.",
)
PAGE_TOKEN_KEY = EnvVar(
    "ELECTRIC_PAGE_TOKEN_KEY",
    "",
    "Secret (at least 32 characters) of the HMAC that makes page tokens tamper-evident; "
    "every instance of a service needs the same value. Empty = a random key per process "
    "(page tokens do not survive a restart).",
    per_service=False,
)
CHECKPOINT_SIGNING_KEY = EnvVar(
    "ELECTRIC_CHECKPOINT_SIGNING_KEY",
    "",
    "The service's PRIVATE Ed25519 JWK (JSON) that signs its store checkpoints (issue 14; "
    "electric_roles ['checkpoint'], electric_subjects [<service>]); auditors verify with its "
    "public half. Set it per service (ELECTRIC_<SVC>_CHECKPOINT_SIGNING_KEY). Unset (and no "
    "file): a key generated once and kept in {var_dir}/keys/checkpoint-<service>.jwk.json, "
    "its public JWKS beside it (docs/audit.md).",
)
CHECKPOINT_SIGNING_KEY_FILE = EnvVar(
    "ELECTRIC_CHECKPOINT_SIGNING_KEY_FILE",
    "",
    "Path of the service's private checkpoint JWK file, read when "
    "ELECTRIC_CHECKPOINT_SIGNING_KEY is unset (python -m electric_platform.checkpointing DIR "
    "writes a set).",
)
CHECKPOINT_INTERVAL = EnvVar(
    "ELECTRIC_CHECKPOINT_INTERVAL_SECONDS",
    "60",
    "Seconds between two signed checkpoints of the service's store (chain heads, Merkle "
    "root) on the electric.checkpoints topic; one more is written at shutdown. 0 = none "
    "(the store is then not anchored).",
)
LOG_LEVEL = EnvVar(
    "ELECTRIC_LOG_LEVEL",
    "INFO",
    "Log level: DEBUG, INFO, WARNING, ERROR.",
)
OUTBOX_RETENTION = EnvVar(
    "ELECTRIC_OUTBOX_RETENTION_HOURS",
    "24",
    "Hours a published outbox row is kept before the relay deletes it (on Kafka; the events "
    "stay). 0 = keep them. Unpublished rows are never deleted.",
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

TABLE_OWNERSHIP = EnvVar(
    "ELECTRIC_TABLE_OWNERSHIP",
    "single",
    "Table service only: `single` (one instance owns every table) or `partitions` (tables "
    "owned by Kafka partition, several instances; docs/scaling.md).",
    per_service=False,
)
TABLE_ADVERTISED_ADDRESS = EnvVar(
    "ELECTRIC_TABLE_ADVERTISED_ADDRESS",
    "",
    "Table service, `partitions` ownership: host:port other table instances forward a "
    "table's calls to (default the gRPC host and bound port; a wildcard host is 127.0.0.1).",
    per_service=False,
)
TABLE_CASINO = EnvVar(
    "ELECTRIC_TABLE_CASINO",
    "on",
    "Table service only: whether this instance hosts the casino (`on`/`off`); with several "
    "table instances exactly one does (docs/scaling.md).",
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
    KAFKA_REPLICATION_FACTOR,
    KAFKA_MIN_INSYNC_REPLICAS,
    AUTH_JWKS,
    AUTH_JWKS_FILE,
    AUTH_SIGNING_KEY,
    AUTH_SIGNING_KEY_FILE,
    AUTH_ISSUER,
    AUTH_AUDIENCE,
    AUTH_MAX_TOKEN_LIFETIME,
    PAGE_TOKEN_KEY,
    CHECKPOINT_SIGNING_KEY,
    CHECKPOINT_SIGNING_KEY_FILE,
    CHECKPOINT_INTERVAL,
    OUTBOX_RETENTION,
    LOG_LEVEL,
    LOG_FORMAT,
    SHUTDOWN_GRACE,
    REGISTRATION_TARGET,
    TABLE_TARGET,
    WALLET_TARGET,
    PAYOUT_TARGET,
    TABLE_OWNERSHIP,
    TABLE_ADVERTISED_ADDRESS,
    TABLE_CASINO,
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
    log_level: str
    log_format: str
    shutdown_grace_seconds: float
    var_dir: Path
    targets: Mapping[str, str] = field(default_factory=dict)
    kafka_namespace: str = ""
    #: JWKS JSON text of the verification keys ("" = none given inline).
    auth_jwks: str = ""
    #: Path of a JWKS file (read at start when ``auth_jwks`` is empty).
    auth_jwks_file: str = ""
    #: The service's private JWK JSON text for its outgoing calls ("" = none given inline).
    auth_signing_key: str = field(default="", repr=False)
    #: Path of the service's private JWK file (read at start when the inline key is empty).
    auth_signing_key_file: str = ""
    auth_issuer: str = "electric"
    auth_audience: str = "electric"
    auth_max_token_lifetime: float = DEFAULT_MAX_TOKEN_LIFETIME
    page_token_key: str = field(default="", repr=False)
    #: The private checkpoint JWK JSON text ("" = none given inline).
    checkpoint_signing_key: str = field(default="", repr=False)
    #: Path of the private checkpoint JWK file ("" = generated under ``var_dir/keys``).
    checkpoint_signing_key_file: str = ""
    #: Seconds between checkpoints (0 = no checkpoints).
    checkpoint_interval: float = 60.0
    #: Hours a published outbox row is kept (0 = keep them).
    outbox_retention_hours: float = 24.0

    @property
    def uses_kafka(self) -> bool:
        """True when events go to Kafka, False for the in-process bus."""
        return bool(self.kafka_bootstrap_servers)

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
            "auth_jwks": "(inline)" if self.auth_jwks else self.auth_jwks_file or "(missing)",
            "auth_signing_key": (
                "(inline)" if self.auth_signing_key else self.auth_signing_key_file or "(none)"
            ),
            "auth_issuer": self.auth_issuer,
            "auth_audience": self.auth_audience,
            "auth_max_token_lifetime": self.auth_max_token_lifetime,
            "checkpoint_interval": self.checkpoint_interval,
            "checkpoint_signing_key": (
                "(inline)"
                if self.checkpoint_signing_key
                else self.checkpoint_signing_key_file or "(generated under var_dir/keys)"
            ),
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


def env_ms(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """A duration knob in milliseconds from the environment (``default`` when unset or
    blank); a value that is not a non-negative integer raises ValueError naming ``name``."""
    env = os.environ if environ is None else environ
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a whole number of milliseconds") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


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
    try:
        lifetime = float(get(AUTH_MAX_TOKEN_LIFETIME))
    except ValueError:
        raise ConfigError(f"{AUTH_MAX_TOKEN_LIFETIME.name} must be a number of seconds") from None
    if lifetime <= 0:
        raise ConfigError(f"{AUTH_MAX_TOKEN_LIFETIME.name} must be positive")
    page_key = get(PAGE_TOKEN_KEY)
    try:
        checkpoint_interval = float(get(CHECKPOINT_INTERVAL))
    except ValueError:
        raise ConfigError(f"{CHECKPOINT_INTERVAL.name} must be a number of seconds") from None
    if not 0 <= checkpoint_interval < float("inf"):  # also refuses nan
        raise ConfigError(f"{CHECKPOINT_INTERVAL.name} must not be negative (or infinite)")
    try:
        outbox_retention = float(get(OUTBOX_RETENTION))
    except ValueError:
        raise ConfigError(f"{OUTBOX_RETENTION.name} must be a number of hours") from None
    if not 0 <= outbox_retention < float("inf"):  # also refuses nan
        raise ConfigError(f"{OUTBOX_RETENTION.name} must not be negative (or infinite)")
    if page_key and len(page_key) < 32:
        raise ConfigError(f"{PAGE_TOKEN_KEY.name} must be at least 32 characters")
    return ServiceConfig(
        service=service,
        grpc_host=get(GRPC_HOST),
        grpc_port=_int(GRPC_PORT, get(GRPC_PORT), minimum=0),
        metrics_host=get(METRICS_HOST),
        metrics_port=_int(METRICS_PORT, get(METRICS_PORT), minimum=-1),
        database_url=get(DATABASE_URL),
        kafka_bootstrap_servers=kafka.strip(),
        log_level=log_level,
        log_format=log_format,
        shutdown_grace_seconds=grace,
        var_dir=Path(var_dir_text),
        targets={name: get(var) for name, var in _TARGETS.items()},
        kafka_namespace=_namespace(get(KAFKA_NAMESPACE)),
        auth_jwks=get(AUTH_JWKS),
        auth_jwks_file=get(AUTH_JWKS_FILE),
        auth_signing_key=get(AUTH_SIGNING_KEY),
        auth_signing_key_file=get(AUTH_SIGNING_KEY_FILE),
        auth_issuer=get(AUTH_ISSUER),
        auth_audience=get(AUTH_AUDIENCE),
        auth_max_token_lifetime=lifetime,
        page_token_key=page_key,
        checkpoint_signing_key=get(CHECKPOINT_SIGNING_KEY),
        checkpoint_signing_key_file=get(CHECKPOINT_SIGNING_KEY_FILE),
        checkpoint_interval=checkpoint_interval,
        outbox_retention_hours=outbox_retention,
    )


def inline_or_file(inline: str, var: EnvVar, path: str) -> str:
    """``inline`` if set, else the content of file ``path`` (if set), else "" (key material
    is read when a service starts, not when its configuration is resolved)."""
    if inline or not path:
        return inline
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{var.name}={path!r} cannot be read: {exc.strerror}") from None

"""electric_platform: the service platform shared by all four services.

Configuration (:mod:`.config`), JSON logging (:mod:`.log`), per-call context (:mod:`.context`),
errors with gRPC status (:mod:`.errors`), bearer-token auth (:mod:`.auth`, keys in
:mod:`.keys`), paging (:mod:`.paging`), reflection (:mod:`.reflection`), Prometheus metrics
(:mod:`.metrics`) and the gRPC server bootstrap (:mod:`.server`). See docs/platform.md.
"""

from electric_platform.auth import (
    AuthInterceptor,
    Principal,
    Role,
    TokenPolicy,
    TokenSource,
    current_principal,
    issue_token,
    require_player,
    require_role,
    service_tokens,
    set_principal,
    token_policy,
    verify_token,
)
from electric_platform.config import (
    ENV_VARS,
    SERVICES,
    ConfigError,
    EnvVar,
    ServiceConfig,
    all_env_var_names,
    load_config,
)
from electric_platform.context import correlation_id, new_id, outgoing_metadata, request_id
from electric_platform.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
    Unavailable,
    map_error,
    map_status,
    status_for,
)
from electric_platform.keys import DevKeys, KeySet, SigningKey, write_dev_keys
from electric_platform.log import configure_logging, get_logger
from electric_platform.metrics import MetricsInterceptor, ServiceMetrics
from electric_platform.server import ContextInterceptor, ServiceHost, main, run_hosts, serve

__all__ = [
    "ENV_VARS",
    "SERVICES",
    "Aborted",
    "AlreadyExists",
    "AuthInterceptor",
    "ConfigError",
    "ContextInterceptor",
    "DevKeys",
    "EnvVar",
    "FailedPrecondition",
    "InvalidArgument",
    "KeySet",
    "MetricsInterceptor",
    "NotFound",
    "PermissionDenied",
    "Principal",
    "Role",
    "ServiceConfig",
    "ServiceError",
    "ServiceHost",
    "ServiceMetrics",
    "SigningKey",
    "TokenPolicy",
    "TokenSource",
    "Unauthenticated",
    "Unavailable",
    "all_env_var_names",
    "configure_logging",
    "correlation_id",
    "current_principal",
    "get_logger",
    "issue_token",
    "load_config",
    "main",
    "map_error",
    "map_status",
    "new_id",
    "outgoing_metadata",
    "request_id",
    "require_player",
    "require_role",
    "run_hosts",
    "serve",
    "service_tokens",
    "set_principal",
    "status_for",
    "token_policy",
    "verify_token",
    "write_dev_keys",
]

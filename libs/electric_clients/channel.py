"""Client channels whose idempotent calls gRPC itself retries.

gRPC's service config (``grpc.service_config`` channel option, gRFC A6) carries a
``retryPolicy`` per service: transient failures are retried by the channel with exponential
backoff and jitter, before the call returns to the caller, under the call's one deadline.
Only services whose every method is idempotent (e.g. the wallet: each money movement carries
a caller-chosen transfer id) get a policy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import grpc

#: Codes worth retrying for an idempotent call: a lost race (ABORTED), the server away or
#: restarting (UNAVAILABLE), and a deadline the *server* reported (an expired client deadline
#: ends the call; gRPC never retries past it).
RETRYABLE_CODES: tuple[str, ...] = ("ABORTED", "UNAVAILABLE", "DEADLINE_EXCEEDED")


def service_config(
    services: Sequence[str],
    *,
    max_attempts: int = 5,
    initial_backoff_s: float = 0.05,
    max_backoff_s: float = 0.4,
    multiplier: float = 2.0,
    codes: Sequence[str] = RETRYABLE_CODES,
) -> str:
    """The JSON service config retrying every method of ``services`` (full proto names, e.g.
    ``electric.wallet.v1.WalletService``): up to ``max_attempts`` attempts, the n-th retry
    after a random wait in ``[0, min(initial * multiplier**(n-1), max)]``."""
    policy = {
        "maxAttempts": max_attempts,
        "initialBackoff": f"{initial_backoff_s:g}s",
        "maxBackoff": f"{max_backoff_s:g}s",
        "backoffMultiplier": multiplier,
        "retryableStatusCodes": list(codes),
    }
    return json.dumps(
        {
            "methodConfig": [
                {"name": [{"service": name} for name in services], "retryPolicy": policy}
            ]
        }
    )


def retrying_channel(target: str, config: str) -> grpc.aio.Channel:
    """An insecure (loopback) aio channel to ``target`` with the :func:`service_config`
    ``config``. Calls are spread round-robin over the addresses ``target`` names (e.g.
    ``ipv4:127.0.0.1:50053,127.0.0.1:50063``: several instances of a stateless service,
    issue 17); a one-address target behaves as before."""
    options = [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", config),
        ("grpc.lb_policy_name", "round_robin"),
    ]
    return grpc.aio.insecure_channel(target, options=options)

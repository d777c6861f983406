"""``python -m electric_platform.token --sub alice --role player``: print a bearer token.

The secret is ``--secret``, else ``ELECTRIC_AUTH_SECRET``, else the development default.
Use it as gRPC metadata ``authorization: Bearer <token>``, e.g. with grpcurl:
``grpcurl -plaintext -H "authorization: Bearer $(python -m electric_platform.token
--sub alice --role player)" 127.0.0.1:50051
electric.registration.v1.RegistrationService/ListLobby``.
"""

from __future__ import annotations

import argparse
import os
import sys

from electric_platform.auth import Role, issue_token
from electric_platform.config import AUTH_SECRET, DEV_AUTH_SECRET


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, print the token; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m electric_platform.token", description="Mint a bearer token."
    )
    parser.add_argument("--sub", required=True, help="subject: player id, service or operator")
    parser.add_argument(
        "--role", required=True, choices=[r.value for r in Role], help="role of the subject"
    )
    parser.add_argument("--ttl", type=float, default=3600.0, help="validity in seconds")
    parser.add_argument(
        "--secret", default=None, help=f"signing secret (default ${AUTH_SECRET.name})"
    )
    args = parser.parse_args(argv)
    secret = args.secret or os.environ.get(AUTH_SECRET.name) or DEV_AUTH_SECRET
    if secret == DEV_AUTH_SECRET:
        print("warning: signing with the public development secret", file=sys.stderr)
    print(issue_token(args.sub, args.role, secret, args.ttl))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

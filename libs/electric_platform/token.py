"""``python -m electric_platform.token --key KEY.jwk.json --sub alice --role player``: print a
bearer token signed with a private Ed25519 JWK.

The key is ``--key``, else the file named by ``ELECTRIC_AUTH_ISSUER_KEY_FILE``. The embedded
run (``make run``) writes its issuer key to ``var/keys/issuer.jwk.json`` and prints this
command; ``python -m electric_platform.keys DIR`` writes a development key set. The key must
be allowed to sign the role (an issuer key signs player, operator and auditor tokens; a
service key only its own service tokens). Use the token as gRPC metadata
``authorization: Bearer <token>``, e.g. ``grpcurl -plaintext -H "authorization: Bearer
$(python -m electric_platform.token --key var/keys/issuer.jwk.json --sub alice --role
player)" 127.0.0.1:50051 electric.registration.v1.RegistrationService/ListLobby``.
"""

from __future__ import annotations

import argparse
import os
import sys

from electric_platform.auth import AUDIENCE, ISSUER, Role, issue_token
from electric_platform.keys import KeyMaterialError, SigningKey

#: Environment variable naming the issuer's private key file for this command.
ISSUER_KEY_FILE = "ELECTRIC_AUTH_ISSUER_KEY_FILE"


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
        "--key", default=None, help=f"private JWK file that signs (default ${ISSUER_KEY_FILE})"
    )
    parser.add_argument("--issuer", default=ISSUER, help="'iss' claim")
    parser.add_argument("--audience", default=AUDIENCE, help="'aud' claim")
    args = parser.parse_args(argv)
    path = args.key or os.environ.get(ISSUER_KEY_FILE)
    if not path:
        print(
            f"error: no signing key: pass --key FILE or set {ISSUER_KEY_FILE} "
            "(make run prints the path of its issuer key)",
            file=sys.stderr,
        )
        return 2
    try:
        key = SigningKey.from_file(path)
        token = issue_token(
            args.sub, args.role, key, args.ttl, issuer=args.issuer, audience=args.audience
        )
    except (KeyMaterialError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(token)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Bearer tokens for tests: one Ed25519 key set per test session.

``KEYS`` is a development key set (the issuer key and one key per service, like ``make run``
writes). :func:`auth_env` gives the environment a service needs to verify tokens and sign its
own calls (inline JSON; :func:`write_keys` writes the same set into a directory for processes
that take files); :func:`token` / :func:`bearer` mint tokens with the key a real deployment
would use for that role: the issuer key for players, operators and auditors, the service's own
key for a service. Test-only: ``ANY_SERVICE`` may sign ``service`` tokens for any subject
(harnesses use made-up service names); production key sets have no such key.
"""

from __future__ import annotations

from pathlib import Path

from electric_platform import DevKeys, KeySet, Role, SigningKey, TokenSource, issue_token
from electric_platform.keys import DevKeyFiles, write_dev_keys

KEYS = DevKeys.generate()
ISSUER_KEY = KEYS.issuer
ANY_SERVICE = SigningKey.generate("test-any-service", roles=("service",))
KEYSET: KeySet = KEYS.keyset.with_keys(ANY_SERVICE)


def signing_key(subject: str, role: Role | str) -> SigningKey:
    """The key that signs ``role`` tokens for ``subject`` in the test key set."""
    if Role(role) is Role.SERVICE:
        return KEYS.services.get(subject, ANY_SERVICE)
    return ISSUER_KEY


def token(subject: str, role: Role | str = Role.PLAYER, ttl: float = 3600.0) -> str:
    """A valid token for ``subject`` with ``role``."""
    return issue_token(subject, role, signing_key(subject, role), ttl)


def bearer(
    subject: str, role: Role | str = Role.PLAYER, ttl: float = 3600.0
) -> tuple[tuple[str, str], ...]:
    """gRPC metadata carrying a valid token."""
    return (("authorization", f"Bearer {token(subject, role, ttl)}"),)


def token_source(subject: str, role: Role | str = Role.SERVICE, ttl: float = 3600.0) -> TokenSource:
    """A :class:`TokenSource` (what the clients of ``electric_clients`` take)."""
    return TokenSource(signing_key(subject, role), subject, role, ttl)


def auth_env() -> dict[str, str]:
    """Environment variables for services under test: the JWKS and each service's key."""
    env = KEYS.env()
    env["ELECTRIC_AUTH_JWKS"] = KEYSET.to_json()
    return env


def write_keys(directory: Path) -> DevKeyFiles:
    """Write the session's key set into ``directory`` (issuer, per-service keys, JWKS);
    ``.env()`` of the result gives the file variables for service processes."""
    files = write_dev_keys(directory, KEYS)
    files.jwks.write_text(KEYSET.to_json() + "\n", encoding="utf-8")
    return files


def checkpoint_keys_env(directory: Path) -> dict[str, str]:
    """Write a checkpoint signing key per service into ``directory`` (kept when present;
    public ``checkpoint-<service>.jwks.json`` beside each, for ``electric-audit verify
    --checkpoint-keys DIR``); the variables that make the service processes use them."""
    from electric_platform.checkpointing import ensure_checkpoint_key, key_paths

    env: dict[str, str] = {}
    for name in KEYS.services:
        ensure_checkpoint_key(directory, name)
        env[f"ELECTRIC_{name.upper()}_CHECKPOINT_SIGNING_KEY_FILE"] = str(
            key_paths(directory, name)[0]
        )
    return env

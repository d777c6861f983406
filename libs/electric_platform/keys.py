"""Ed25519 signing keys and the public key set (JWKS) that verifies bearer tokens.

One **issuer** key signs player, operator and auditor tokens. Each service has its **own**
key for its calls to other services (registration → wallet, payout → wallet). Verifiers hold
public keys only: a JWKS (RFC 7517) whose entries carry a ``kid`` (tokens name their key in
the JWT header) and two custom members that restrict what a key may sign:

- ``electric_roles``: the roles (``player``, ``service``, ``operator``, ``auditor``) whose
  tokens this key may sign. Absent = ``player``, ``operator``, ``auditor`` (an issuer key):
  a ``service`` token is only ever accepted from a key that lists ``service`` explicitly;
- ``electric_subjects``: when present, the only ``sub`` values this key may sign (a service
  key lists its own service name), so a service key cannot mint a player token nor pose as
  another service.

Several keys may be listed at once (rotation: publish the new key, switch the signer, drop
the old key once its tokens have expired).

``python -m electric_platform.keys DIR`` writes a development key set into ``DIR``
(:func:`write_dev_keys`) and prints the environment variables that use it.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

#: The JWS algorithm of every token (Ed25519 signatures).
ALGORITHM = "EdDSA"
#: Roles an issuer key (one without ``electric_roles``) may sign.
ISSUER_ROLES: frozenset[str] = frozenset({"player", "operator", "auditor"})
ROLES_MEMBER = "electric_roles"
SUBJECTS_MEMBER = "electric_subjects"
#: The services that get a key of their own in a development key set.
DEV_SERVICES: tuple[str, ...] = ("registration", "table", "wallet", "payout")


class KeyMaterialError(ValueError):
    """A key or key set cannot be read."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _names(value: Any, member: str, kid: str) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise KeyMaterialError(f"key {kid!r}: {member} must be a list of non-empty strings")
    return frozenset(value)


@dataclass(frozen=True)
class VerificationKey:
    """A public key of the set, with what it may sign."""

    kid: str
    public: Ed25519PublicKey
    roles: frozenset[str] = ISSUER_ROLES
    subjects: frozenset[str] | None = None

    def allows(self, role: str, subject: str) -> bool:
        """True when this key may sign a token of ``role`` for ``subject``."""
        if role not in self.roles:
            return False
        return self.subjects is None or subject in self.subjects

    def jwk(self) -> dict[str, Any]:
        """The public JWK with the restriction members."""
        raw = self.public.public_bytes(Encoding.Raw, PublicFormat.Raw)
        out: dict[str, Any] = {
            "kty": "OKP",
            "crv": "Ed25519",
            "alg": ALGORITHM,
            "use": "sig",
            "kid": self.kid,
            "x": _b64(raw),
            ROLES_MEMBER: sorted(self.roles),
        }
        if self.subjects is not None:
            out[SUBJECTS_MEMBER] = sorted(self.subjects)
        return out

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> VerificationKey:
        """Parse one public (or private: only its public half is kept) Ed25519 JWK."""
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid:
            raise KeyMaterialError("every key needs a non-empty 'kid'")
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            raise KeyMaterialError(f"key {kid!r} is not an Ed25519 (OKP) key")
        try:
            public = Ed25519PublicKey.from_public_bytes(_unb64(str(jwk["x"])))
        except (KeyError, ValueError) as exc:
            raise KeyMaterialError(f"key {kid!r} has no valid 'x'") from exc
        roles = _names(jwk.get(ROLES_MEMBER), ROLES_MEMBER, kid)
        subjects = _names(jwk.get(SUBJECTS_MEMBER), SUBJECTS_MEMBER, kid)
        return cls(kid, public, ISSUER_ROLES if roles is None else roles, subjects)


@dataclass(frozen=True)
class SigningKey:
    """A private Ed25519 key with its ``kid`` and the restrictions its public JWK carries."""

    kid: str
    private: Ed25519PrivateKey = field(repr=False)
    roles: frozenset[str] = ISSUER_ROLES
    subjects: frozenset[str] | None = None

    @classmethod
    def generate(
        cls, kid: str = "", *, roles: Iterable[str] = ISSUER_ROLES, subjects: Iterable[str] = ()
    ) -> SigningKey:
        """A new random key (``kid`` defaults to a random id)."""
        subject_set = frozenset(subjects)
        return cls(
            kid or f"k-{secrets.token_hex(8)}",
            Ed25519PrivateKey.generate(),
            frozenset(roles),
            subject_set or None,
        )

    @classmethod
    def service(cls, service: str, kid: str = "") -> SigningKey:
        """A new key that may sign only ``service`` tokens for subject ``service``."""
        return cls.generate(
            kid or f"{service}-{secrets.token_hex(6)}", roles=("service",), subjects=(service,)
        )

    @property
    def verification(self) -> VerificationKey:
        """The public half."""
        return VerificationKey(self.kid, self.private.public_key(), self.roles, self.subjects)

    def jwk(self) -> dict[str, Any]:
        """The PRIVATE JWK (with ``d``): keep it secret."""
        raw = self.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return {**self.verification.jwk(), "d": _b64(raw)}

    def to_json(self) -> str:
        """The private JWK as JSON text."""
        return json.dumps(self.jwk(), sort_keys=True)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> SigningKey:
        """Parse a private Ed25519 JWK (with ``d``)."""
        public = VerificationKey.from_jwk(jwk)
        try:
            private = Ed25519PrivateKey.from_private_bytes(_unb64(str(jwk["d"])))
        except (KeyError, ValueError) as exc:
            raise KeyMaterialError(
                f"key {public.kid!r} is not a private key (no valid 'd')"
            ) from exc
        return cls(public.kid, private, public.roles, public.subjects)

    @classmethod
    def from_json(cls, text: str) -> SigningKey:
        """Parse a private JWK from JSON text."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise KeyMaterialError(f"signing key is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise KeyMaterialError("signing key must be a JSON object (a private JWK)")
        return cls.from_jwk(data)

    @classmethod
    def from_file(cls, path: str | Path) -> SigningKey:
        """Read a private JWK file."""
        try:
            return cls.from_json(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise KeyMaterialError(f"cannot read signing key {path}: {exc.strerror}") from None


@dataclass(frozen=True)
class KeySet:
    """The public keys a verifier accepts, by ``kid``."""

    keys: Mapping[str, VerificationKey]

    @classmethod
    def of(cls, keys: Iterable[VerificationKey | SigningKey]) -> KeySet:
        """A set of the public halves of ``keys``."""
        out: dict[str, VerificationKey] = {}
        for key in keys:
            public = key.verification if isinstance(key, SigningKey) else key
            if public.kid in out:
                raise KeyMaterialError(f"duplicate kid {public.kid!r}")
            out[public.kid] = public
        return cls(out)

    @classmethod
    def from_jwks(cls, data: Mapping[str, Any]) -> KeySet:
        """Parse a JWKS ``{"keys": [...]}``; private members (``d``) are ignored."""
        keys = data.get("keys")
        if not isinstance(keys, list) or not keys:
            raise KeyMaterialError("a JWKS needs a non-empty 'keys' list")
        parsed: list[VerificationKey] = []
        for jwk in keys:
            if not isinstance(jwk, dict):
                raise KeyMaterialError("every JWKS entry must be an object")
            parsed.append(VerificationKey.from_jwk(jwk))
        return cls.of(parsed)

    @classmethod
    def from_json(cls, text: str) -> KeySet:
        """Parse JWKS JSON text."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise KeyMaterialError(f"JWKS is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise KeyMaterialError("a JWKS must be a JSON object")
        return cls.from_jwks(data)

    def jwks(self) -> dict[str, Any]:
        """The public JWKS."""
        return {"keys": [k.jwk() for k in self.keys.values()]}

    def to_json(self) -> str:
        """The public JWKS as JSON text."""
        return json.dumps(self.jwks(), sort_keys=True)

    def with_keys(self, *keys: VerificationKey | SigningKey) -> KeySet:
        """This set plus ``keys`` (rotation: the old and the new keys at once)."""
        return KeySet.of([*self.keys.values(), *keys])


@dataclass(frozen=True)
class DevKeys:
    """A development key set: the issuer key and one key per service."""

    issuer: SigningKey
    services: Mapping[str, SigningKey]

    @classmethod
    def generate(cls, services: Iterable[str] = DEV_SERVICES) -> DevKeys:
        """Fresh random keys."""
        return cls(
            SigningKey.generate(f"issuer-{secrets.token_hex(6)}"),
            {name: SigningKey.service(name) for name in services},
        )

    @property
    def keyset(self) -> KeySet:
        """The public keys of all of them."""
        return KeySet.of([self.issuer, *self.services.values()])

    def env(self) -> dict[str, str]:
        """Environment variables carrying the keys inline: the JWKS for every service and
        each service's own signing key (per-service override)."""
        env = {"ELECTRIC_AUTH_JWKS": self.keyset.to_json()}
        for name, key in self.services.items():
            env[f"ELECTRIC_{name.upper()}_AUTH_SIGNING_KEY"] = key.to_json()
        return env


@dataclass(frozen=True)
class DevKeyFiles:
    """Where :func:`write_dev_keys` put a key set."""

    directory: Path
    issuer: Path
    jwks: Path
    services: Mapping[str, Path]

    def env(self) -> dict[str, str]:
        """Environment variables that point the services at these files."""
        env = {"ELECTRIC_AUTH_JWKS_FILE": str(self.jwks)}
        for name, path in self.services.items():
            env[f"ELECTRIC_{name.upper()}_AUTH_SIGNING_KEY_FILE"] = str(path)
        return env


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(text + "\n", encoding="utf-8")


def write_dev_keys(
    directory: str | Path, keys: DevKeys | None = None, *, reuse: bool = False
) -> DevKeyFiles:
    """Write ``keys`` (fresh ones by default) into ``directory``: ``issuer.jwk.json`` and
    ``<service>.jwk.json`` (private, mode 0600) and ``jwks.json`` (public).

    With ``reuse`` an existing complete set in ``directory`` is kept (tokens minted with it
    stay valid across restarts).
    """
    base = Path(directory)
    issuer_path = base / "issuer.jwk.json"
    jwks_path = base / "jwks.json"
    names = tuple(keys.services) if keys is not None else DEV_SERVICES
    service_paths = {name: base / f"{name}.jwk.json" for name in names}
    files = DevKeyFiles(base, issuer_path, jwks_path, service_paths)
    every = [issuer_path, jwks_path, *service_paths.values()]
    if reuse and keys is None and all(p.exists() for p in every):
        try:
            KeySet.from_json(jwks_path.read_text(encoding="utf-8"))
            SigningKey.from_file(issuer_path)
            for p in service_paths.values():
                SigningKey.from_file(p)
            return files
        except KeyMaterialError:
            pass  # broken: write a new set
    keys = keys or DevKeys.generate()
    _write_private(issuer_path, keys.issuer.to_json())
    for name, path in service_paths.items():
        _write_private(path, keys.services[name].to_json())
    jwks_path.write_text(keys.keyset.to_json() + "\n", encoding="utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    """``python -m electric_platform.keys DIR``: write a dev key set, print its env vars."""
    parser = argparse.ArgumentParser(
        prog="python -m electric_platform.keys",
        description="Write a development Ed25519 key set (issuer + one key per service).",
    )
    parser.add_argument("directory", help="where to write the keys (created if missing)")
    parser.add_argument("--reuse", action="store_true", help="keep a complete existing set")
    parser.add_argument(
        "--checkpoint-keys",
        action="store_true",
        help="also a checkpoint signing key per service (checkpoint-<service>.jwk.json, kept "
        "when present) and its public checkpoint-<service>.jwks.json (docs/audit.md)",
    )
    args = parser.parse_args(argv)
    files = write_dev_keys(args.directory, reuse=args.reuse)
    for name, value in files.env().items():
        print(f"export {name}={value}")
    if args.checkpoint_keys:
        from electric_platform.checkpointing import main as checkpoint_keys

        checkpoint_keys([str(files.directory)])
    print(
        f"# mint: python -m electric_platform.token --key {files.issuer} --sub alice --role player",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

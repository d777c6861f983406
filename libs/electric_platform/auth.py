"""Bearer-token authentication and role checks.

Tokens are JWTs signed with Ed25519 (``EdDSA``). An issuer key signs player, operator and
auditor tokens; each service signs its own calls to other services with a key of its own.
Services verify with PUBLIC keys only: a JWKS (``ELECTRIC_AUTH_JWKS`` or
``ELECTRIC_AUTH_JWKS_FILE``) whose entries name the roles and subjects each key may sign
(:mod:`electric_platform.keys`), so a service key cannot mint a player token.

Claims: ``sub`` (player id, service name or operator id), ``role`` (one of :class:`Role`),
``iss`` and ``aud`` (checked against ``ELECTRIC_AUTH_ISSUER`` / ``ELECTRIC_AUTH_AUDIENCE``),
``iat`` and ``exp`` (both required; ``exp - iat`` at most
``ELECTRIC_AUTH_MAX_TOKEN_LIFETIME_SECONDS``); leeway 1 s. The header's ``kid`` names the
key. Clients send ``authorization: Bearer <token>`` metadata.

The :class:`AuthInterceptor` rejects calls with a missing, malformed, badly signed, expired
or over-long token with UNAUTHENTICATED (health checking and reflection are exempt), ends a
server stream with UNAUTHENTICATED when its token expires, and puts the :class:`Principal`
in a contextvar for the servicer: :func:`current_principal`, :func:`require_role`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import grpc
import jwt
import structlog

from electric_platform.config import (
    AUTH_JWKS_FILE,
    AUTH_SIGNING_KEY_FILE,
    ConfigError,
    ServiceConfig,
    inline_or_file,
)
from electric_platform.context import outgoing_metadata
from electric_platform.errors import InvalidArgument, PermissionDenied, Unauthenticated
from electric_platform.keys import ALGORITHM, KeyMaterialError, KeySet, SigningKey
from electric_platform.rpc import (
    Context,
    HandlerCallDetails,
    RpcHandler,
    map_stream,
    wrap_handler,
)

ISSUER = "electric"
AUDIENCE = "electric"
#: Default cap on ``exp - iat``.
MAX_LIFETIME_SECONDS = 24 * 3600.0
#: Clock skew tolerated on ``exp``, ``iat`` (at most 1 s).
LEEWAY_SECONDS = 1.0

#: Method prefixes that need no token: gRPC health checking and server reflection.
DEFAULT_EXEMPT_PREFIXES: tuple[str, ...] = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)


class Role(enum.StrEnum):
    """What a principal is: a player, another service, an operator or an auditor."""

    PLAYER = "player"
    SERVICE = "service"
    OPERATOR = "operator"
    AUDITOR = "auditor"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: ``subject`` (``sub`` claim) with a ``role``; ``expires_at``
    is the token's ``exp`` (Unix seconds; not part of equality)."""

    subject: str
    role: Role
    expires_at: float | None = field(default=None, compare=False)

    def is_player(self, player_id: str) -> bool:
        """True when this principal is the player ``player_id`` itself."""
        return self.role is Role.PLAYER and self.subject == player_id


@dataclass(frozen=True)
class TokenPolicy:
    """What a verifier accepts: the public ``keys``, issuer, audience, lifetime cap, leeway."""

    keys: KeySet
    issuer: str = ISSUER
    audience: str = AUDIENCE
    max_lifetime: float = MAX_LIFETIME_SECONDS
    leeway: float = LEEWAY_SECONDS

    def __post_init__(self) -> None:
        if not 0 <= self.leeway <= LEEWAY_SECONDS:
            raise ValueError(f"leeway must be within [0, {LEEWAY_SECONDS}] seconds")
        if self.max_lifetime <= 0:
            raise ValueError("max_lifetime must be positive")


_principal: ContextVar[Principal | None] = ContextVar("electric_principal", default=None)


def issue_token(
    subject: str,
    role: Role | str,
    key: SigningKey,
    ttl: float = 3600.0,
    *,
    now: float | None = None,
    issuer: str = ISSUER,
    audience: str = AUDIENCE,
) -> str:
    """A bearer token for ``subject`` with ``role``, valid ``ttl`` seconds, signed by ``key``.

    Raises ValueError when ``key`` may not sign that role or subject (verifiers would reject
    the token anyway).
    """
    if not subject:
        raise ValueError("subject must not be empty")
    role = Role(role)
    if not key.verification.allows(role.value, subject):
        raise ValueError(f"key {key.kid!r} may not sign {role.value} tokens for {subject!r}")
    issued = time.time() if now is None else now
    claims = {
        "sub": subject,
        "role": role.value,
        "iat": int(issued),
        "exp": int(issued + ttl),
        "iss": issuer,
        "aud": audience,
    }
    return jwt.encode(claims, key.private, algorithm=ALGORITHM, headers={"kid": key.kid})


def verify_token(token: str, policy: TokenPolicy | KeySet) -> Principal:
    """The principal of a valid token; raises :class:`Unauthenticated` with a reason."""
    if isinstance(policy, KeySet):
        policy = TokenPolicy(policy)
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthenticated("bearer token is not a JWT") from None
    kid = header.get("kid")
    key = policy.keys.keys.get(kid) if isinstance(kid, str) else None
    if key is None:
        raise Unauthenticated("bearer token is signed by an unknown key (kid)")
    try:
        claims = jwt.decode(
            token,
            key.public,
            algorithms=[ALGORITHM],
            audience=policy.audience,
            issuer=policy.issuer,
            options={"require": ["sub", "exp", "iat", "iss", "aud"]},
            leeway=policy.leeway,
        )
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("bearer token expired") from None
    except jwt.InvalidSignatureError:
        raise Unauthenticated("bearer token signature is invalid") from None
    except jwt.InvalidIssuerError:
        raise Unauthenticated("bearer token has the wrong issuer") from None
    except jwt.InvalidAudienceError:
        raise Unauthenticated("bearer token has the wrong audience") from None
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthenticated(f"bearer token lacks the {exc.claim!r} claim") from None
    except jwt.PyJWTError:
        raise Unauthenticated("bearer token is invalid") from None
    subject, role_text = claims.get("sub"), claims.get("role")
    issued, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(subject, str) or not subject:
        raise Unauthenticated("bearer token has no subject")
    if not isinstance(issued, int | float) or not isinstance(expires, int | float):
        raise Unauthenticated("bearer token times are not numbers")
    if expires - issued > policy.max_lifetime:
        raise Unauthenticated(
            f"bearer token lifetime exceeds the maximum of {int(policy.max_lifetime)} s"
        )
    try:
        role = Role(str(role_text))
    except ValueError:
        raise Unauthenticated(
            f"bearer token role is not one of {', '.join(r.value for r in Role)}"
        ) from None
    if not key.allows(role.value, subject):
        raise Unauthenticated(f"bearer token key may not sign {role.value} tokens for this subject")
    return Principal(subject=subject, role=role, expires_at=float(expires))


#: Tokens one interceptor remembers as verified (least recently used dropped first).
TOKEN_CACHE_SIZE = 10_000


class VerifiedTokens:
    """The tokens this verifier already accepted, kept until they expire.

    Each check is an Ed25519 signature verification: about 1.15 ms under load, the largest
    Python item per RPC in the platform profile (docs/benchmarks.md). A client sends the
    same token on every call until it renews it. The policy is fixed for the interceptor's
    life, so a token it accepted verifies the same way until its ``exp`` (plus the leeway),
    and that is checked on every hit. Only acceptances are kept, so a flood of bad tokens
    cannot fill the cache; at most ``size`` are kept.
    """

    def __init__(
        self,
        policy: TokenPolicy,
        size: int = TOKEN_CACHE_SIZE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._policy, self._size, self._clock = policy, size, clock
        self._seen: OrderedDict[str, Principal] = OrderedDict()
        self.hits = self.misses = 0

    def verify(self, token: str) -> Principal:
        """:func:`verify_token`, answered from memory for a token accepted before."""
        principal = self._seen.get(token)
        if principal is not None:
            expires = principal.expires_at
            if expires is not None and self._clock() <= expires + self._policy.leeway:
                self._seen.move_to_end(token)
                self.hits += 1
                return principal
            del self._seen[token]
        self.misses += 1
        principal = verify_token(token, self._policy)
        self._seen[token] = principal
        if len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return principal

    def __len__(self) -> int:
        return len(self._seen)


def token_from_metadata(metadata: Iterable[tuple[str, Any]] | None) -> str:
    """The bearer token of ``authorization`` metadata; raises :class:`Unauthenticated`."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
            scheme, _, token = text.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("authorization metadata must be 'Bearer <token>'")
            return token.strip()
    raise Unauthenticated("missing authorization metadata (expected 'Bearer <token>')")


def current_principal() -> Principal:
    """The principal of the current call; raises :class:`Unauthenticated` outside one."""
    principal = _principal.get()
    if principal is None:
        raise Unauthenticated("no authenticated principal for this call")
    return principal


def set_principal(principal: Principal | None) -> None:
    """Bind ``principal`` for the current context (tests, in-process callers)."""
    _principal.set(principal)


def require_role(*roles: Role | str) -> Principal:
    """The current principal if its role is one of ``roles``, else PERMISSION_DENIED."""
    principal = current_principal()
    allowed = {Role(r) for r in roles}
    if principal.role not in allowed:
        names = ", ".join(sorted(r.value for r in allowed))
        raise PermissionDenied(
            f"role {principal.role.value!r} may not call this; allowed roles: {names}"
        )
    return principal


def require_player(player_id: str, *, also: Iterable[Role | str] = ()) -> Principal:
    """The current principal if it is player ``player_id`` or has one of ``also`` roles."""
    principal = current_principal()
    if principal.is_player(player_id) or principal.role in {Role(r) for r in also}:
        return principal
    raise PermissionDenied(
        f"{principal.role.value} {principal.subject!r} may not act for player {player_id!r}"
    )


def player_to_read(player_id: str, *, also: Iterable[Role | str] = ()) -> str:
    """The player a read request is about: ``player_id``, which the caller must be or act for
    (``also`` roles); empty means the calling player themself (other roles must name one)."""
    if player_id:
        require_player(player_id, also=also)
        return player_id
    principal = current_principal()
    if principal.role is not Role.PLAYER:
        raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
    return principal.subject


async def until_expiry(items: AsyncIterator[Any], expires_at: float) -> AsyncIterator[Any]:
    """``items`` until Unix time ``expires_at``; then :class:`Unauthenticated` (the stream
    ends with UNAUTHENTICATED even while it waits for its next message)."""
    try:
        while True:
            remaining = expires_at - time.time()
            if remaining <= 0:
                raise Unauthenticated("bearer token expired; the stream ends")
            timeout = asyncio.timeout(remaining)
            try:
                async with timeout:
                    item = await anext(items)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if timeout.expired():
                    raise Unauthenticated("bearer token expired; the stream ends") from None
                raise
            yield item
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Validates the bearer token of every call (except exempt methods); server streams end
    with UNAUTHENTICATED when the token expires."""

    def __init__(
        self,
        policy: TokenPolicy | KeySet,
        *,
        exempt_prefixes: Iterable[str] = DEFAULT_EXEMPT_PREFIXES,
    ) -> None:
        self._policy = policy if isinstance(policy, TokenPolicy) else TokenPolicy(policy)
        self._exempt = tuple(exempt_prefixes)
        self.tokens = VerifiedTokens(self._policy)

    async def intercept_service(
        self,
        continuation: Callable[[HandlerCallDetails], Awaitable[RpcHandler]],
        handler_call_details: HandlerCallDetails,
    ) -> RpcHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(self._exempt):
            return handler
        try:
            token = token_from_metadata(handler_call_details.invocation_metadata)
            principal: Principal | None = self.tokens.verify(token)
            failure: Unauthenticated | None = None
        except Unauthenticated as exc:
            principal, failure = None, exc

        @contextlib.asynccontextmanager
        async def around(_context: Context) -> AsyncIterator[None]:
            if failure is not None:
                raise failure
            token_ = _principal.set(principal)
            if principal is not None:
                structlog.contextvars.bind_contextvars(
                    principal=f"{principal.role.value}:{principal.subject}",
                    peer_role=principal.role.value,
                )
            try:
                yield
            finally:
                with contextlib.suppress(ValueError):  # reset from another context
                    _principal.reset(token_)

        if principal is not None and principal.expires_at is not None:
            expires_at = principal.expires_at
            handler = map_stream(handler, lambda items: until_expiry(items, expires_at))
        return wrap_handler(handler, around)


class TokenSource:
    """Mints and caches a token for service-to-service calls, refreshed before expiry."""

    def __init__(
        self,
        key: SigningKey,
        subject: str,
        role: Role | str = Role.SERVICE,
        ttl: float = 3600.0,
        *,
        issuer: str = ISSUER,
        audience: str = AUDIENCE,
    ) -> None:
        self._key, self._subject, self._role, self._ttl = key, subject, Role(role), ttl
        self._issuer, self._audience = issuer, audience
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        """A valid token (a new one when the cached one is within 60 s of expiry)."""
        now = time.time()
        if now > self._expires - min(60.0, self._ttl / 2):
            self._token = issue_token(
                self._subject,
                self._role,
                self._key,
                self._ttl,
                now=now,
                issuer=self._issuer,
                audience=self._audience,
            )
            self._expires = now + self._ttl
        return self._token

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Metadata of one outgoing call: this token, a new request id and the propagated
        correlation id (the ``CallMetadata`` of the clients in ``electric_clients``)."""
        return outgoing_metadata(self.token())


def token_policy(config: ServiceConfig) -> TokenPolicy:
    """The verification policy of a service: its JWKS, issuer, audience and lifetime cap.

    Raises :class:`ConfigError` when no JWKS is configured (there is no default key).
    """
    text = inline_or_file(config.auth_jwks, AUTH_JWKS_FILE, config.auth_jwks_file)
    if not text:
        raise ConfigError(
            "no token verification keys: set ELECTRIC_AUTH_JWKS or ELECTRIC_AUTH_JWKS_FILE "
            "(python -m electric_platform.keys DIR writes a development set)"
        )
    try:
        keys = KeySet.from_json(text)
    except KeyMaterialError as exc:
        raise ConfigError(f"ELECTRIC_AUTH_JWKS: {exc}") from None
    return TokenPolicy(
        keys,
        issuer=config.auth_issuer,
        audience=config.auth_audience,
        max_lifetime=config.auth_max_token_lifetime,
    )


def service_tokens(config: ServiceConfig, ttl: float = 3600.0) -> TokenSource:
    """The token source of a service's calls to other services, signed with its own key
    (``ELECTRIC_<SVC>_AUTH_SIGNING_KEY`` / ``…_FILE``)."""
    text = inline_or_file(
        config.auth_signing_key, AUTH_SIGNING_KEY_FILE, config.auth_signing_key_file
    )
    if not text:
        raise ConfigError(
            f"{config.service}: no signing key for calls to other services: set "
            f"ELECTRIC_{config.service.upper()}_AUTH_SIGNING_KEY(_FILE)"
        )
    try:
        key = SigningKey.from_json(text)
    except KeyMaterialError as exc:
        raise ConfigError(f"ELECTRIC_AUTH_SIGNING_KEY: {exc}") from None
    return TokenSource(
        key,
        config.service,
        Role.SERVICE,
        min(ttl, config.auth_max_token_lifetime),
        issuer=config.auth_issuer,
        audience=config.auth_audience,
    )

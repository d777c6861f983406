"""Bearer-token authentication and role checks.

Tokens are JWTs signed with HS256 and the shared secret ``ELECTRIC_AUTH_SECRET``. Claims:
``sub`` (player id, service name or operator id), ``role`` (one of :class:`Role`), ``exp``
(expiry, required) and ``iat``. Clients send ``authorization: Bearer <token>`` metadata.

The :class:`AuthInterceptor` rejects calls with a missing, malformed, badly signed or expired
token with UNAUTHENTICATED (health checking and reflection are exempt) and puts the
:class:`Principal` in a contextvar for the servicer: :func:`current_principal`,
:func:`require_role`.
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import grpc
import jwt
import structlog

from electric_platform.context import outgoing_metadata
from electric_platform.errors import PermissionDenied, Unauthenticated
from electric_platform.rpc import Context, HandlerCallDetails, RpcHandler, wrap_handler

ALGORITHM = "HS256"
ISSUER = "electric"

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
    """The authenticated caller: ``subject`` (``sub`` claim) with a ``role``."""

    subject: str
    role: Role

    def is_player(self, player_id: str) -> bool:
        """True when this principal is the player ``player_id`` itself."""
        return self.role is Role.PLAYER and self.subject == player_id


_principal: ContextVar[Principal | None] = ContextVar("electric_principal", default=None)


def issue_token(
    subject: str,
    role: Role | str,
    secret: str,
    ttl: float = 3600.0,
    *,
    now: float | None = None,
) -> str:
    """A signed bearer token for ``subject`` with ``role``, valid ``ttl`` seconds."""
    if not subject:
        raise ValueError("subject must not be empty")
    role = Role(role)
    issued = time.time() if now is None else now
    claims = {
        "sub": subject,
        "role": role.value,
        "iat": int(issued),
        "exp": int(issued + ttl),
        "iss": ISSUER,
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_token(token: str, secret: str, *, leeway: float = 5.0) -> Principal:
    """The principal of a valid token; raises :class:`Unauthenticated` with a reason."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            options={"require": ["sub", "exp"]},
            leeway=leeway,
        )
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("bearer token expired") from None
    except jwt.InvalidSignatureError:
        raise Unauthenticated("bearer token signature is invalid") from None
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"bearer token is invalid: {exc}") from None
    subject = claims.get("sub")
    role_text = claims.get("role")
    if not isinstance(subject, str) or not subject:
        raise Unauthenticated("bearer token has no subject")
    try:
        role = Role(str(role_text))
    except ValueError:
        raise Unauthenticated(
            f"bearer token role {role_text!r} is not one of {', '.join(r.value for r in Role)}"
        ) from None
    return Principal(subject=subject, role=role)


def token_from_metadata(metadata: Iterable[tuple[str, Any]] | None) -> str:
    """The bearer token of ``authorization`` metadata; raises :class:`Unauthenticated`."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else str(value)
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


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Validates the bearer token of every call (except exempt methods)."""

    def __init__(
        self, secret: str, *, exempt_prefixes: Iterable[str] = DEFAULT_EXEMPT_PREFIXES
    ) -> None:
        self._secret = secret
        self._exempt = tuple(exempt_prefixes)

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
            principal: Principal | None = verify_token(token, self._secret)
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
                    principal=f"{principal.role.value}:{principal.subject}"
                )
            try:
                yield
            finally:
                with contextlib.suppress(ValueError):  # reset from another context
                    _principal.reset(token_)

        return wrap_handler(handler, around)


class TokenSource:
    """Mints and caches a token for service-to-service calls, refreshed before expiry."""

    def __init__(
        self, secret: str, subject: str, role: Role | str = Role.SERVICE, ttl: float = 3600.0
    ) -> None:
        self._secret, self._subject, self._role, self._ttl = secret, subject, Role(role), ttl
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        """A valid token (a new one when the cached one is within 60 s of expiry)."""
        now = time.time()
        if now > self._expires - 60:
            self._token = issue_token(self._subject, self._role, self._secret, self._ttl, now=now)
            self._expires = now + self._ttl
        return self._token

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Metadata of one outgoing call: this token, a new request id and the propagated
        correlation id (the ``CallMetadata`` of the clients in ``electric_clients``)."""
        return outgoing_metadata(self.token())

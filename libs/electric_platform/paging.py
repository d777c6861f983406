"""Paging for every list RPC (``electric.common.v1.PageRequest`` / ``PageResponse``).

One page-size rule: ``page_size`` 0 means :data:`DEFAULT_PAGE_SIZE`; larger than
:data:`MAX_PAGE_SIZE` is served as :data:`MAX_PAGE_SIZE` (AIP-158's coercion); negative is
INVALID_ARGUMENT.

One page-token codec: a token is opaque and tamper-evident — base64url (no padding) of a
version byte, the position (an unsigned 63-bit integer: an offset, or a keyset cursor such as
the last row id) and a truncated HMAC-SHA256 over the version, the position and the list's
*scope* (the RPC and its filter, e.g. ``wallet.ListTransactions:p:alice``), so a token is only
valid for the list that issued it. The HMAC key is ``ELECTRIC_PAGE_TOKEN_KEY`` (the host
configures it with :func:`configure_page_tokens`) or a random key per process. Any token that
does not verify — edited, truncated, from another list, from another key — is
INVALID_ARGUMENT, and its text is never echoed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct

from electric_platform.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: Largest position a token carries (SQLite and PostgreSQL BIGINT hold it).
MAX_POSITION = 2**63 - 1
_VERSION = 1
_MAC_BYTES = 16
_BODY = struct.Struct(">BQ")
_TOKEN_BYTES = _BODY.size + _MAC_BYTES
_MAX_TOKEN_CHARS = 64

_key: bytes = secrets.token_bytes(32)


def configure_page_tokens(key: str | bytes | None) -> None:
    """Use ``key`` for page-token HMACs (every instance of a service needs the same);
    ``None`` or empty keeps the random per-process key."""
    global _key
    if key:
        _key = key.encode() if isinstance(key, str) else bytes(key)


def page_size(requested: int) -> int:
    """The page size to serve for a requested ``page_size`` (the one rule)."""
    if requested < 0:
        raise InvalidArgument("page.page_size must not be negative")
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def _mac(body: bytes, scope: str) -> bytes:
    return hmac.new(_key, body + scope.encode(), hashlib.sha256).digest()[:_MAC_BYTES]


def encode_page_token(position: int, scope: str) -> str:
    """The token of ``position`` in the list ``scope``."""
    if not 0 <= position <= MAX_POSITION:
        raise ValueError(f"page position {position} is out of range")
    body = _BODY.pack(_VERSION, position)
    return base64.urlsafe_b64encode(body + _mac(body, scope)).decode().rstrip("=")


def decode_page_token(token: str, scope: str) -> int:
    """The position of a token issued for ``scope``; INVALID_ARGUMENT for anything else."""
    bad = InvalidArgument("page.page_token is not a valid page token for this list")
    if len(token) > _MAX_TOKEN_CHARS:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise bad from None
    if len(raw) != _TOKEN_BYTES:
        raise bad
    body, mac = raw[: _BODY.size], raw[_BODY.size :]
    if not hmac.compare_digest(mac, _mac(body, scope)):
        raise bad
    version, position = _BODY.unpack(body)
    if version != _VERSION or position > MAX_POSITION:
        raise bad
    return int(position)


def page_window(page_size_: int, page_token: str, *, scope: str = "") -> tuple[int, int]:
    """(offset, size) for an offset-paged request; fetch ``size + 1`` rows to detect a next
    page and pass their count to :func:`next_page_token`."""
    size = page_size(page_size_)
    offset = decode_page_token(page_token, scope) if page_token else 0
    return offset, size


def next_page_token(offset: int, size: int, fetched: int, *, scope: str = "") -> str:
    """Token of the next page when ``fetched`` (up to size + 1 rows) shows there is one."""
    if fetched <= size:
        return ""
    return encode_page_token(offset + size, scope)

"""Offset paging for list RPCs (``electric.common.v1.PageRequest`` / ``PageResponse``).

Tokens are opaque to clients (``o<offset>`` base64-encoded); a bad token is INVALID_ARGUMENT.
"""

from __future__ import annotations

import base64
import binascii

from electric_platform.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def page_window(page_size: int, page_token: str) -> tuple[int, int]:
    """(offset, limit) for a request; ``limit`` is one more than the page to detect a next."""
    if page_size < 0:
        raise InvalidArgument("page.page_size must not be negative")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    offset = 0
    if page_token:
        try:
            text = base64.urlsafe_b64decode(page_token.encode()).decode()
            if not text.startswith("o"):
                raise ValueError(text)
            offset = int(text[1:])
            if offset < 0:
                raise ValueError(text)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise InvalidArgument(f"page.page_token {page_token!r} is not a valid token") from None
    return offset, size


def next_page_token(offset: int, size: int, fetched: int) -> str:
    """Token of the next page when ``fetched`` (up to size + 1 rows) shows there is one."""
    if fetched <= size:
        return ""
    return base64.urlsafe_b64encode(f"o{offset + size}".encode()).decode()

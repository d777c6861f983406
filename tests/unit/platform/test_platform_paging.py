"""The one page-size rule, the one tamper-evident page-token codec, bounded error echo and
the last-resort error mapping."""

from __future__ import annotations

import base64

import grpc
import pytest
from electric_platform import paging
from electric_platform.errors import (
    MAX_MESSAGE,
    MAX_WORD,
    InvalidArgument,
    NotFound,
    bound_detail,
    bound_text,
    service_error_for,
)
from electric_platform.paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    decode_page_token,
    encode_page_token,
    next_page_token,
    page_size,
    page_window,
)
from google.rpc.error_details_pb2 import BadRequest


def test_one_page_size_rule() -> None:
    assert page_size(0) == DEFAULT_PAGE_SIZE == 50
    assert page_size(7) == 7
    assert page_size(MAX_PAGE_SIZE + 1) == MAX_PAGE_SIZE == 500
    assert page_size(2**62) == MAX_PAGE_SIZE
    with pytest.raises(InvalidArgument, match="negative"):
        page_size(-1)


def test_offset_paging_round_trip() -> None:
    assert page_window(0, "") == (0, 50)
    offset, size = page_window(2, "", scope="s")
    token = next_page_token(offset, size, 3, scope="s")
    assert token and page_window(2, token, scope="s") == (2, 2)
    assert next_page_token(2, 2, 2, scope="s") == ""
    assert decode_page_token(encode_page_token(2**63 - 1, "k"), "k") == 2**63 - 1


def _flip(token: str, index: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[index] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def test_tokens_are_tamper_evident_and_bound_to_their_list() -> None:
    token = encode_page_token(40, "payout.ListWinnings:alice")
    bad = [
        "garbage!",
        "",  # empty is "first page" for page_window, but not a token
        "x" * 10_000,
        base64.urlsafe_b64encode(b"o" + b"9" * 40).decode(),  # the old format, huge offset
        token[:-2],
        token + "AA",
        _flip(token, 1),  # position edited
        _flip(token, 12),  # MAC edited
        encode_page_token(40, "payout.ListWinnings:bob"),  # another player's list
    ]
    for candidate in bad:
        with pytest.raises(InvalidArgument) as info:
            decode_page_token(candidate, "payout.ListWinnings:alice")
        assert candidate[:8] not in info.value.message or not candidate[:8].strip()
    assert decode_page_token(token, "payout.ListWinnings:alice") == 40
    with pytest.raises(ValueError):
        encode_page_token(-1, "s")
    with pytest.raises(ValueError):
        encode_page_token(2**63, "s")


def test_a_configured_key_makes_tokens_portable_across_processes() -> None:
    old_key = paging._key
    try:
        paging.configure_page_tokens("k" * 40)
        token = encode_page_token(5, "s")
        paging.configure_page_tokens("other-key-" * 4)
        with pytest.raises(InvalidArgument):
            decode_page_token(token, "s")
        paging.configure_page_tokens("k" * 40)
        assert decode_page_token(token, "s") == 5
        paging.configure_page_tokens("")  # empty keeps the current key
        assert decode_page_token(token, "s") == 5
    finally:
        paging._key = old_key


def test_bounded_echo() -> None:
    huge = "A" * 1_000_000
    text = bound_text(f"player id {huge!r} is malformed")
    assert len(text) <= MAX_MESSAGE + 1
    assert "'" + "A" * (MAX_WORD - 1) + "…" in text
    spaced = bound_text("word " * 100_000)
    assert len(spaced) == MAX_MESSAGE + 1 and spaced.endswith("…")
    assert bound_text("short and sweet") == "short and sweet"
    err = NotFound(f"table {huge} does not exist")
    assert len(err.message) < 200 and str(err) == err.message
    detail = BadRequest(field_violations=[BadRequest.FieldViolation(field=huge, description=huge)])
    bounded = bound_detail(detail)
    assert len(bounded.SerializeToString()) < 300
    assert len(detail.field_violations[0].field) == 1_000_000  # the original is untouched


def test_last_resort_mapping_never_leaks_internals() -> None:
    overflow = service_error_for(OverflowError("Python int too large to convert to SQLite"))
    assert overflow.code is grpc.StatusCode.INVALID_ARGUMENT
    assert "SQLite" not in overflow.message
    internal = service_error_for(RuntimeError("password=hunter2 at /srv/x.py"))
    assert internal.code is grpc.StatusCode.INTERNAL and "hunter2" not in internal.message
    same = NotFound("x")
    assert service_error_for(same) is same

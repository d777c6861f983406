"""Tokens, principals, role checks, error details, paging tokens and the token CLI."""

from __future__ import annotations

import time

import grpc
import jwt
import pytest
from electric_platform import (
    PermissionDenied,
    Role,
    TokenSource,
    Unauthenticated,
    issue_token,
    require_player,
    require_role,
    set_principal,
    verify_token,
)
from electric_platform.auth import Principal, token_from_metadata
from electric_platform.errors import decode_status_details, encode_status_details
from electric_platform.paging import next_page_token, page_window
from electric_platform.token import main as token_main
from google.protobuf import wrappers_pb2

SECRET = "auth-unit-secret-0123456789abcdef0123456789"


def test_issue_and_verify_round_trip() -> None:
    token = issue_token("alice", Role.PLAYER, SECRET, 60)
    assert verify_token(token, SECRET) == Principal("alice", Role.PLAYER)
    claims = jwt.decode(token, SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 60 and claims["role"] == "player"


def test_expired_wrong_secret_and_bad_claims_are_unauthenticated() -> None:
    old = issue_token("alice", "player", SECRET, 10, now=time.time() - 3600)
    with pytest.raises(Unauthenticated, match="expired"):
        verify_token(old, SECRET)
    with pytest.raises(Unauthenticated, match="signature"):
        verify_token(issue_token("a", "player", "other" * 10), SECRET)
    no_exp = jwt.encode({"sub": "a", "role": "player"}, SECRET, algorithm="HS256")
    with pytest.raises(Unauthenticated, match="invalid"):
        verify_token(no_exp, SECRET)
    bad_role = jwt.encode({"sub": "a", "role": "root", "exp": 2**40}, SECRET, algorithm="HS256")
    with pytest.raises(Unauthenticated, match="role"):
        verify_token(bad_role, SECRET)
    none_alg = jwt.encode({"sub": "a", "role": "operator", "exp": 2**40}, None, algorithm="none")
    with pytest.raises(Unauthenticated):
        verify_token(none_alg, SECRET)


def test_token_from_metadata() -> None:
    assert token_from_metadata((("authorization", "Bearer abc"),)) == "abc"
    assert token_from_metadata((("Authorization", "bearer  abc "),)) == "abc"
    with pytest.raises(Unauthenticated, match="missing"):
        token_from_metadata((("x", "y"),))
    with pytest.raises(Unauthenticated, match="Bearer"):
        token_from_metadata((("authorization", "Basic abc"),))


def test_role_checks() -> None:
    set_principal(None)
    with pytest.raises(Unauthenticated):
        require_role(Role.PLAYER)
    set_principal(Principal("alice", Role.PLAYER))
    assert require_role("player", "operator").subject == "alice"
    with pytest.raises(PermissionDenied, match="operator"):
        require_role(Role.OPERATOR)
    assert require_player("alice").subject == "alice"
    with pytest.raises(PermissionDenied, match="bob"):
        require_player("bob")
    set_principal(Principal("svc", Role.SERVICE))
    assert require_player("bob", also=[Role.SERVICE]).role is Role.SERVICE
    set_principal(None)


def test_token_source_caches_and_mints_service_tokens() -> None:
    source = TokenSource(SECRET, "registration", ttl=600)
    first = source.token()
    assert source.token() == first
    assert verify_token(first, SECRET) == Principal("registration", Role.SERVICE)


def test_status_details_round_trip() -> None:
    data = encode_status_details(
        grpc.StatusCode.FAILED_PRECONDITION, "no money", wrappers_pb2.Int64Value(value=7)
    )
    code, message, details = decode_status_details(data)
    assert (code, message) == (9, "no money")
    out = wrappers_pb2.Int64Value()
    assert details[0].Unpack(out) and out.value == 7


def test_paging_tokens() -> None:
    assert page_window(0, "") == (0, 50)
    assert page_window(10_000, "") == (0, 500)
    offset, size = page_window(2, "")
    token = next_page_token(offset, size, 3)
    assert page_window(2, token) == (2, 2)
    assert next_page_token(2, 2, 2) == ""
    with pytest.raises(Exception, match="page_token"):
        page_window(2, "garbage!")


def test_token_cli_prints_verifiable_token(capsys: pytest.CaptureFixture[str]) -> None:
    assert token_main(["--sub", "alice", "--role", "auditor", "--secret", SECRET]) == 0
    token = capsys.readouterr().out.strip()
    assert verify_token(token, SECRET) == Principal("alice", Role.AUDITOR)

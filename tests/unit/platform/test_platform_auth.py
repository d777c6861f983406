"""Ed25519 tokens (issuer, audience, lifetime cap, leeway, kid rotation, per-service keys),
principals, role checks, error details and the token and key CLIs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import grpc
import jwt
import pytest
from electric_platform import (
    DevKeys,
    KeySet,
    PermissionDenied,
    Role,
    SigningKey,
    TokenPolicy,
    TokenSource,
    Unauthenticated,
    issue_token,
    require_player,
    require_role,
    set_principal,
    verify_token,
)
from electric_platform.auth import Principal, service_tokens, token_from_metadata, token_policy
from electric_platform.config import ConfigError, load_config
from electric_platform.errors import decode_status_details, encode_status_details
from electric_platform.keys import KeyMaterialError, write_dev_keys
from electric_platform.keys import main as keys_main
from electric_platform.token import main as token_main
from google.protobuf import wrappers_pb2

KEYS = DevKeys.generate()
ISSUER = KEYS.issuer
POLICY = TokenPolicy(KEYS.keyset)


def _claims(**over: object) -> dict[str, object]:
    now = int(time.time())
    base: dict[str, object] = {
        "sub": "alice",
        "role": "player",
        "iat": now,
        "exp": now + 60,
        "iss": "electric",
        "aud": "electric",
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def _sign(claims: dict[str, object], key: SigningKey = ISSUER, kid: str | None = None) -> str:
    return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": kid or key.kid})


def test_issue_and_verify_round_trip() -> None:
    token = issue_token("alice", Role.PLAYER, ISSUER, 60)
    principal = verify_token(token, POLICY)
    assert principal == Principal("alice", Role.PLAYER)
    assert principal.expires_at is not None and principal.expires_at - time.time() <= 61
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "EdDSA" and header["kid"] == ISSUER.kid
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 60 and claims["role"] == "player"
    assert claims["iss"] == "electric" and claims["aud"] == "electric"
    # A KeySet alone means the default policy.
    assert verify_token(token, KEYS.keyset) == Principal("alice", Role.PLAYER)


def test_expired_forged_and_bad_claims_are_unauthenticated() -> None:
    old = issue_token("alice", "player", ISSUER, 10, now=time.time() - 3600)
    with pytest.raises(Unauthenticated, match="expired"):
        verify_token(old, POLICY)
    stranger = SigningKey.generate(ISSUER.kid)  # same kid, another private key
    with pytest.raises(Unauthenticated, match="signature"):
        verify_token(issue_token("a", "player", stranger), POLICY)
    with pytest.raises(Unauthenticated, match="unknown key"):
        verify_token(issue_token("a", "player", SigningKey.generate("nobody")), POLICY)
    with pytest.raises(Unauthenticated, match="'exp'"):
        verify_token(_sign(_claims(exp=None)), POLICY)
    with pytest.raises(Unauthenticated, match="'iat'"):
        verify_token(_sign(_claims(iat=None)), POLICY)
    with pytest.raises(Unauthenticated, match="role"):
        verify_token(_sign(_claims(role="root")), POLICY)
    with pytest.raises(Unauthenticated, match="issuer"):
        verify_token(_sign(_claims(iss="mallory")), POLICY)
    with pytest.raises(Unauthenticated, match="'iss'"):
        verify_token(_sign(_claims(iss=None)), POLICY)
    with pytest.raises(Unauthenticated, match="audience"):
        verify_token(_sign(_claims(aud="elsewhere")), POLICY)
    with pytest.raises(Unauthenticated, match="subject"):
        verify_token(_sign(_claims(sub="")), POLICY)
    none_alg = jwt.encode(
        _claims(role="operator"), None, algorithm="none", headers={"kid": ISSUER.kid}
    )
    with pytest.raises(Unauthenticated):
        verify_token(none_alg, POLICY)
    # The old shared-secret scheme: an HS256 token is refused whatever its secret.
    hs = jwt.encode(_claims(), "x" * 40, algorithm="HS256", headers={"kid": ISSUER.kid})
    with pytest.raises(Unauthenticated):
        verify_token(hs, POLICY)
    with pytest.raises(Unauthenticated, match="not a JWT"):
        verify_token("garbage", POLICY)


def test_lifetime_is_capped_and_leeway_is_one_second() -> None:
    ten_years = issue_token("alice", "player", ISSUER, 10 * 365 * 86400)
    with pytest.raises(Unauthenticated, match="lifetime"):
        verify_token(ten_years, POLICY)
    assert verify_token(issue_token("alice", "player", ISSUER, 86400), POLICY).subject == "alice"
    short = TokenPolicy(KEYS.keyset, max_lifetime=600)
    with pytest.raises(Unauthenticated, match="600"):
        verify_token(issue_token("alice", "player", ISSUER, 601), short)
    # Expired 3 s ago: the old 5 s leeway accepted it, 1 s does not.
    now = time.time()
    late = _sign(_claims(iat=int(now) - 63, exp=int(now) - 3))
    with pytest.raises(Unauthenticated, match="expired"):
        verify_token(late, POLICY)
    with pytest.raises(ValueError):
        TokenPolicy(KEYS.keyset, leeway=5)
    # Issued in the future (beyond the leeway): rejected.
    with pytest.raises(Unauthenticated):
        verify_token(_sign(_claims(iat=int(now) + 30, exp=int(now) + 90)), POLICY)


def test_a_service_key_cannot_mint_player_or_other_service_tokens() -> None:
    registration = KEYS.services["registration"]
    own = issue_token("registration", Role.SERVICE, registration)
    assert verify_token(own, POLICY) == Principal("registration", Role.SERVICE)
    with pytest.raises(ValueError, match="may not sign"):
        issue_token("alice", Role.PLAYER, registration)
    # Forged past issue_token's own check: the verifier refuses it.
    for claims in (
        _claims(sub="alice", role="player"),
        _claims(sub="ops", role="operator"),
        _claims(sub="payout", role="service"),
    ):
        with pytest.raises(Unauthenticated, match="may not sign"):
            verify_token(_sign(claims, registration), POLICY)
    # Nor can the issuer key pose as a service.
    with pytest.raises(Unauthenticated, match="may not sign"):
        verify_token(_sign(_claims(sub="wallet", role="service")), POLICY)


def test_a_rotated_in_key_is_accepted_alongside_the_old_one() -> None:
    new_issuer = SigningKey.generate("issuer-2026-12")
    rotated = TokenPolicy(KEYS.keyset.with_keys(new_issuer))
    old_token = issue_token("alice", "player", ISSUER)
    new_token = issue_token("bob", "player", new_issuer)
    assert verify_token(old_token, rotated).subject == "alice"
    assert verify_token(new_token, rotated).subject == "bob"
    with pytest.raises(Unauthenticated, match="unknown key"):
        verify_token(new_token, POLICY)  # not yet published there
    # Round trip through the JWKS text, as services read it.
    reread = KeySet.from_json(rotated.keys.to_json())
    assert set(reread.keys) == set(rotated.keys.keys)
    assert verify_token(new_token, reread).subject == "bob"
    assert all("d" not in k for k in reread.jwks()["keys"])  # public keys only
    assert all("d" not in k for k in json.loads(rotated.keys.to_json())["keys"])
    with pytest.raises(KeyMaterialError, match="duplicate"):
        KEYS.keyset.with_keys(ISSUER)


def test_jwks_restriction_members_are_honoured() -> None:
    data = KEYS.keyset.jwks()
    entry = next(k for k in data["keys"] if k["kid"] == KEYS.services["payout"].kid)
    assert entry["electric_roles"] == ["service"] and entry["electric_subjects"] == ["payout"]
    issuer_entry = next(k for k in data["keys"] if k["kid"] == ISSUER.kid)
    del issuer_entry["electric_roles"]  # absent = the issuer roles, never service
    keys = KeySet.from_jwks(data)
    assert keys.keys[ISSUER.kid].allows("operator", "x")
    assert not keys.keys[ISSUER.kid].allows("service", "wallet")
    with pytest.raises(KeyMaterialError):
        KeySet.from_json('{"keys": [{"kty": "RSA", "kid": "r"}]}')
    with pytest.raises(KeyMaterialError):
        KeySet.from_json("not json")


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
    source = TokenSource(KEYS.services["registration"], "registration", ttl=600)
    first = source.token()
    assert source.token() == first
    assert verify_token(first, POLICY) == Principal("registration", Role.SERVICE)


def test_services_read_keys_from_env_or_files(tmp_path: Path) -> None:
    inline = load_config("payout", KEYS.env())
    assert token_policy(inline).keys.keys.keys() == KEYS.keyset.keys.keys()
    token = service_tokens(inline).token()
    assert verify_token(token, token_policy(inline)) == Principal("payout", Role.SERVICE)
    files = write_dev_keys(tmp_path / "keys")
    assert oct(files.issuer.stat().st_mode & 0o777) == "0o600"
    from_files = load_config("registration", files.env())
    policy = token_policy(from_files)
    assert verify_token(service_tokens(from_files).token(), policy).subject == "registration"
    issued = issue_token("alice", "player", SigningKey.from_file(files.issuer))
    assert verify_token(issued, policy).subject == "alice"
    with pytest.raises(ConfigError, match="ELECTRIC_AUTH_JWKS"):
        token_policy(load_config("registration", {}))
    with pytest.raises(ConfigError, match="SIGNING_KEY"):
        service_tokens(load_config("registration", {}))
    missing = load_config("registration", {"ELECTRIC_AUTH_JWKS_FILE": str(tmp_path / "no")})
    with pytest.raises(ConfigError, match="cannot be read"):
        token_policy(missing)  # read when the service starts
    # --reuse keeps a complete set; without it a new one is written.
    before = files.jwks.read_text()
    assert write_dev_keys(files.directory, reuse=True).jwks.read_text() == before
    assert write_dev_keys(files.directory).jwks.read_text() != before


def test_status_details_round_trip() -> None:
    data = encode_status_details(
        grpc.StatusCode.FAILED_PRECONDITION, "no money", wrappers_pb2.Int64Value(value=7)
    )
    code, message, details = decode_status_details(data)
    assert (code, message) == (9, "no money")
    out = wrappers_pb2.Int64Value()
    assert details[0].Unpack(out) and out.value == 7


def test_key_and_token_clis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert keys_main([str(tmp_path / "k")]) == 0
    exports = capsys.readouterr().out
    assert (
        "ELECTRIC_AUTH_JWKS_FILE=" in exports and "ELECTRIC_WALLET_AUTH_SIGNING_KEY_FILE" in exports
    )
    issuer = tmp_path / "k" / "issuer.jwk.json"
    assert token_main(["--key", str(issuer), "--sub", "alice", "--role", "auditor"]) == 0
    token = capsys.readouterr().out.strip()
    policy = TokenPolicy(KeySet.from_json((tmp_path / "k" / "jwks.json").read_text()))
    assert verify_token(token, policy) == Principal("alice", Role.AUDITOR)
    # The issuer key cannot mint a service token; a service key cannot mint a player token.
    assert token_main(["--key", str(issuer), "--sub", "wallet", "--role", "service"]) == 2
    wallet_key = str(tmp_path / "k" / "wallet.jwk.json")
    assert token_main(["--key", wallet_key, "--sub", "alice", "--role", "player"]) == 2
    assert "may not sign" in capsys.readouterr().err

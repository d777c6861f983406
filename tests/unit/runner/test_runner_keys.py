"""The embedded run makes its own token keys at start and says how to mint with them."""

from __future__ import annotations

from pathlib import Path

from electric_platform import KeySet, SigningKey, issue_token, verify_token
from electric_platform.auth import service_tokens, token_policy
from electric_platform.config import load_config
from electric_runner.app import embedded_keys


def test_the_run_writes_fresh_keys_and_points_the_services_at_them(tmp_path: Path) -> None:
    env = {"ELECTRIC_VAR_DIR": str(tmp_path / "var")}
    issuer_path = embedded_keys(env)
    assert issuer_path == tmp_path / "var" / "keys" / "issuer.jwk.json"
    assert issuer_path.stat().st_mode & 0o077 == 0
    issuer = SigningKey.from_file(issuer_path)
    first_jwks = Path(env["ELECTRIC_AUTH_JWKS_FILE"]).read_text()
    for service in ("registration", "table", "wallet", "payout"):
        cfg = load_config(service, env)
        policy = token_policy(cfg)
        # A player token from the issuer key and the service's own token both verify...
        assert verify_token(issue_token("alice", "player", issuer), policy).subject == "alice"
        assert verify_token(service_tokens(cfg).token(), policy).subject == service
    # ...and the next start makes new keys: no fixed development secret anywhere.
    again = dict(env)
    embedded_keys({"ELECTRIC_VAR_DIR": str(tmp_path / "var")})
    assert Path(again["ELECTRIC_AUTH_JWKS_FILE"]).read_text() != first_jwks


def test_keys_given_in_the_environment_are_used_as_they_are(tmp_path: Path) -> None:
    mine = SigningKey.generate("my-issuer")
    key_file = tmp_path / "issuer.jwk.json"
    key_file.write_text(mine.to_json())
    env = {
        "ELECTRIC_VAR_DIR": str(tmp_path / "var"),
        "ELECTRIC_AUTH_JWKS": KeySet.of([mine]).to_json(),
        "ELECTRIC_AUTH_ISSUER_KEY_FILE": str(key_file),
    }
    assert embedded_keys(env) == key_file
    assert not (tmp_path / "var" / "keys").exists()
    assert "ELECTRIC_AUTH_JWKS_FILE" not in env

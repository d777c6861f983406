"""The services' checkpoint signing keys and settings (issue 14, point 6): configured inline
or by file, or generated once under ``<var_dir>/keys`` with the public JWKS beside it; a key
that may not sign checkpoints of the service is refused at start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from electric_eventlog.checkpoint import CHECKPOINT_ROLE
from electric_platform.checkpointing import (
    checkpoint_signing_key,
    ensure_checkpoint_key,
    main,
    new_checkpoint_key,
)
from electric_platform.config import ConfigError, load_config
from electric_platform.keys import KeySet, SigningKey


def test_generated_key_is_kept_and_published(tmp_path: Path) -> None:
    cfg = load_config("table", {"ELECTRIC_VAR_DIR": str(tmp_path)})
    assert cfg.checkpoint_interval == 60.0
    key = checkpoint_signing_key(cfg)
    private = tmp_path / "keys" / "checkpoint-table.jwk.json"
    assert private.stat().st_mode & 0o777 == 0o600
    text = (tmp_path / "keys" / "checkpoint-table.jwks.json").read_text()
    assert all("d" not in jwk for jwk in json.loads(text)["keys"])  # public halves only
    published = KeySet.from_json(text)
    public = published.keys[key.kid]
    assert public.allows(CHECKPOINT_ROLE, "table") and not public.allows(CHECKPOINT_ROLE, "wallet")
    assert checkpoint_signing_key(cfg).kid == key.kid  # kept across restarts


def test_configured_key_inline_or_file(tmp_path: Path) -> None:
    key = new_checkpoint_key("wallet")
    inline = load_config("wallet", {"ELECTRIC_WALLET_CHECKPOINT_SIGNING_KEY": key.to_json()})
    assert checkpoint_signing_key(inline).kid == key.kid
    file = tmp_path / "k.json"
    file.write_text(key.to_json())
    env = {"ELECTRIC_CHECKPOINT_SIGNING_KEY_FILE": str(file), "ELECTRIC_VAR_DIR": str(tmp_path)}
    assert checkpoint_signing_key(load_config("wallet", env)).kid == key.kid
    assert not (tmp_path / "keys").exists()  # nothing generated when a key is configured


def test_a_key_for_another_service_or_role_is_refused(tmp_path: Path) -> None:
    for wrong in (new_checkpoint_key("table"), SigningKey.service("wallet")):
        cfg = load_config("wallet", {"ELECTRIC_CHECKPOINT_SIGNING_KEY": wrong.to_json()})
        with pytest.raises(ConfigError, match="must list electric_roles"):
            checkpoint_signing_key(cfg)
    with pytest.raises(ConfigError, match="checkpoint signing key of wallet"):
        checkpoint_signing_key(load_config("wallet", {"ELECTRIC_CHECKPOINT_SIGNING_KEY": "{"}))


def test_interval_setting() -> None:
    env = {"ELECTRIC_PAYOUT_CHECKPOINT_INTERVAL_SECONDS": "2.5"}
    assert load_config("payout", env).checkpoint_interval == 2.5
    assert load_config("table", env).checkpoint_interval == 60.0
    with pytest.raises(ConfigError, match="must not be negative"):
        load_config("table", {"ELECTRIC_CHECKPOINT_INTERVAL_SECONDS": "-1"})
    with pytest.raises(ConfigError, match="number of seconds"):
        load_config("table", {"ELECTRIC_CHECKPOINT_INTERVAL_SECONDS": "soon"})


def test_key_set_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ELECTRIC_TABLE_CHECKPOINT_SIGNING_KEY_FILE=" in out
    again = ensure_checkpoint_key(tmp_path, "payout")
    assert again.kid == SigningKey.from_file(tmp_path / "checkpoint-payout.jwk.json").kid


def test_dev_key_set_command_adds_checkpoint_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from electric_platform import keys

    assert keys.main([str(tmp_path), "--reuse", "--checkpoint-keys"]) == 0
    capsys.readouterr()
    for service in ("registration", "table", "wallet", "payout"):
        key = SigningKey.from_file(tmp_path / f"checkpoint-{service}.jwk.json")
        assert key.verification.allows(CHECKPOINT_ROLE, service)
        assert (tmp_path / f"checkpoint-{service}.jwks.json").exists()
    assert (tmp_path / "jwks.json").exists()  # the token key set as before

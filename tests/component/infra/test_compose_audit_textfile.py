"""docker-compose's periodic audit and its textfile exporter (issue 15; no Docker needed).

The `electric-audit verify` result reaches Prometheus in compose as in the local stack
(deploy/observability.sh): a job runs deploy/audit/verify_metrics.py, which writes
``electric_audit_verify.prom`` into a directory; deploy/observability/textfile_exporter.py serves
that directory; Prometheus scrapes it as job ``textfile`` (alerts AuditVerifyFailed and
AuditVerifyStale read it). Checked here: both services exist and run those files, share one
named volume (the writer read-write, the exporter read-only), the audit job's verify arguments
parse with the real CLI and name the services' own stores, broker and checkpoint keys, and
compose's Prometheus scrapes the exporter. (test_compose_static.py checks the rest of compose.)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from electric_audit import commands
from electric_platform import config

ROOT = Path(__file__).resolve().parents[3]
VERIFY_SCRIPT = ROOT / "deploy" / "audit" / "verify_metrics.py"
EXPORTER_SCRIPT = ROOT / "deploy" / "observability" / "textfile_exporter.py"
_INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = _load(ROOT / "docker-compose.yml")
    assert isinstance(data, dict)
    return data


def _command(spec: dict[str, Any]) -> list[str]:
    command = spec.get("command") or []
    parts = command.split() if isinstance(command, str) else command
    return [_INTERPOLATION.sub(lambda m: m.group("default") or "", str(p)) for p in parts]


def _running(services: dict[str, Any], script: Path) -> tuple[str, dict[str, Any]]:
    """The one compose service whose command runs ``script`` (mounted from the repository)."""
    found = []
    for name, spec in services.items():
        command = _command(spec)
        if len(command) >= 2 and command[0] == "python" and command[1].endswith(script.name):
            found.append((name, spec))
    assert len(found) == 1, f"services running {script.name}: {[n for n, _ in found]}"
    name, spec = found[0]
    mounts = _mounts(spec)
    source, _ = mounts[_command(spec)[1]]
    assert (ROOT / source).resolve() == script.resolve(), (name, source)
    return name, spec


def _mounts(spec: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """container path -> (source, read-only)."""
    out = {}
    for volume in spec.get("volumes", []):
        parts = str(volume).split(":")
        out[parts[1]] = (parts[0], parts[2:] == ["ro"])
    return out


def _option(command: list[str], name: str) -> str:
    assert command.count(name) == 1, (name, command)
    return command[command.index(name) + 1]


def test_the_audit_job_writes_where_the_exporter_reads(compose: dict[str, Any]) -> None:
    services = compose["services"]
    audit_name, audit = _running(services, VERIFY_SCRIPT)
    exporter_name, exporter = _running(services, EXPORTER_SCRIPT)
    own = _command(audit)
    own = own[: own.index("--")]
    out_dir = _option(own, "--out")
    served_dir = _option(_command(exporter), "--dir")
    out_volume, out_ro = _mounts(audit)[out_dir]
    served_volume, served_ro = _mounts(exporter)[served_dir]
    # One named volume (declared at the top level, not a host directory), written by the job.
    assert out_volume == served_volume and out_volume in (compose.get("volumes") or {})
    assert not out_ro and served_ro
    # Repeats by itself (compose has no cron), at a positive interval.
    assert float(_option(own, "--every")) > 0
    assert audit.get("restart") == exporter.get("restart") == "unless-stopped"
    # The exporter serves *.prom files; that is what the job writes.
    text = VERIFY_SCRIPT.read_text()
    assert re.search(r'^FILE_NAME = "[\w.]+\.prom"$', text, re.M)
    assert 'glob("*.prom")' in EXPORTER_SCRIPT.read_text()
    assert _option(_command(exporter), "--host") == "0.0.0.0"
    assert exporter_name != audit_name


def test_compose_prometheus_scrapes_the_textfile_exporter(compose: dict[str, Any]) -> None:
    services = compose["services"]
    exporter_name, exporter = _running(services, EXPORTER_SCRIPT)
    port = _option(_command(exporter), "--port")
    prometheus = _load(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    assert "textfile" in jobs, "compose's Prometheus does not scrape the audit result"
    targets = [t for sc in jobs["textfile"]["static_configs"] for t in sc["targets"]]
    assert targets == [f"{exporter_name}:{port}"]
    # The same job name as the local stack (the alerts and the ExporterDown rule use it).
    template = (ROOT / "deploy" / "observability" / "prometheus.yml.in").read_text()
    assert "job_name: textfile" in template
    assert exporter_name in (services["prometheus"].get("depends_on") or [])


def test_the_audit_job_verifies_the_services_stores_topics_and_checkpoints(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    _, audit = _running(services, VERIFY_SCRIPT)
    command = _command(audit)
    verify_args = command[command.index("--") + 1 :]
    parser = argparse.ArgumentParser()
    commands.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["verify", *verify_args])  # the real CLI accepts them
    envs = {name: services[name]["environment"] for name in config.SERVICES}
    assert sorted(args.store) == sorted(str(env["DATABASE_URL"]) for env in envs.values())
    assert {args.kafka} == {str(env["KAFKA_BOOTSTRAP_SERVERS"]) for env in envs.values()}
    # The public checkpoint keys the one-shot `keys` service writes into its volume.
    (keys_dir,) = args.checkpoint_keys
    keys_volume, read_only = _mounts(audit)[keys_dir]
    assert read_only and f"{keys_volume}:/keys" in services["keys"]["volumes"]
    assert keys_dir == "/keys" and "--checkpoint-keys" in services["keys"]["command"]
    for name in config.SERVICES:
        env = services[name]["environment"]
        assert env["ELECTRIC_CHECKPOINT_SIGNING_KEY_FILE"] == f"/keys/checkpoint-{name}.jwk.json"
        assert audit["depends_on"][name]["condition"] == "service_healthy"

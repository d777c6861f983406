"""Signed store checkpoints for a service host (issue 14, point 6; docs/audit.md).

:func:`open_checkpoints` (called by :func:`electric_platform.eventpath.open_event_path`)
starts a :class:`~electric_eventlog.checkpoint_writer.CheckpointWriter` for the service's
store: a checkpoint every ``ELECTRIC_CHECKPOINT_INTERVAL_SECONDS`` and one at shutdown (after
the final outbox drain), on the ``electric.checkpoints`` topic (Kafka; in embedded mode the
in-process bus *and* ``<var_dir>/checkpoints/<service>.jsonl``, which outlives the process).

The signing key is the service's own checkpoint key, separate from its token key:
``ELECTRIC_CHECKPOINT_SIGNING_KEY`` (inline private JWK) or ``..._FILE``. Its JWK must carry
``electric_roles: ["checkpoint"]`` and ``electric_subjects: [<service>]``: an auditor accepts
a key only for the producer it names. Without one, a key is generated once and kept in
``<var_dir>/keys/checkpoint-<service>.jwk.json`` (mode 0600); its public JWKS is written
beside it as ``checkpoint-<service>.jwks.json`` for auditors (``electric-audit verify
--checkpoint-keys <var_dir>/keys``).

``python -m electric_platform.checkpointing DIR`` writes a key per service into ``DIR`` and
prints the variables that use them.

Metrics (:class:`CheckpointCollector`, the host's registry, read from the writer at scrape
time; present from the start, so panels have data before the first checkpoint):

- ``electric_checkpoint_last_position`` / ``..._last_sequence``: global position and sequence
  number of the last checkpoint this process signed (0: none yet);
- ``electric_checkpoint_last_timestamp_seconds``: its ``created_at`` (0: none yet);
- ``electric_checkpoint_last_pass_timestamp_seconds``: when the writer last finished a pass
  (read the store and signed whatever was new: an idle store needs no new checkpoint, so
  this, not the last checkpoint's time, says whether checkpoints keep up); the writer's
  start until its first pass. Alert ``CheckpointsStale`` (deploy/prometheus/alerts.yml);
- ``electric_checkpoint_interval_seconds``; ``electric_checkpoints_written_total`` and
  ``electric_checkpoint_failures_total`` (passes that failed and are retried).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from electric_eventlog import EventBus
from electric_eventlog.checkpoint import CHECKPOINT_ROLE, CHECKPOINT_TOPIC
from electric_eventlog.checkpoint_writer import CheckpointWriter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine

from electric_platform.config import (
    CHECKPOINT_SIGNING_KEY_FILE,
    SERVICES,
    ConfigError,
    ServiceConfig,
    inline_or_file,
)
from electric_platform.keys import KeyMaterialError, KeySet, SigningKey
from electric_platform.server import ServiceHost


def key_paths(directory: Path, service: str) -> tuple[Path, Path]:
    """The private JWK and the public JWKS file of ``service``'s checkpoint key."""
    return (
        directory / f"checkpoint-{service}.jwk.json",
        directory / f"checkpoint-{service}.jwks.json",
    )


def new_checkpoint_key(service: str) -> SigningKey:
    """A fresh key that may sign only checkpoints of ``service``."""
    return SigningKey.generate(
        f"checkpoint-{service}-{os.urandom(6).hex()}", roles=(CHECKPOINT_ROLE,), subjects=(service,)
    )


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` (mode 0600) holding ``text``, or raise FileExistsError. The file
    appears complete or not at all (written aside, then hard-linked): several instances of
    a service starting together on one var dir must never read a half-written key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text + "\n")
        os.link(tmp, path)  # atomic, and FileExistsError when another process won
    finally:
        tmp.unlink(missing_ok=True)


def ensure_checkpoint_key(directory: Path, service: str) -> SigningKey:
    """``service``'s checkpoint key kept in ``directory`` (created on first use), with its
    public JWKS written beside it."""
    private, public = key_paths(directory, service)
    if not private.exists():
        # FileExistsError: another process of the service created it first: use that one.
        with contextlib.suppress(FileExistsError):
            _write_private(private, new_checkpoint_key(service).to_json())
    key = SigningKey.from_file(private)
    jwks = KeySet.of([key]).to_json() + "\n"
    if not public.exists() or public.read_text(encoding="utf-8") != jwks:
        tmp = public.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(jwks, encoding="utf-8")
        tmp.replace(public)
    return key


def checkpoint_signing_key(cfg: ServiceConfig) -> SigningKey:
    """The configured checkpoint key of ``cfg.service``, or the one kept under
    ``<var_dir>/keys`` (module doc). Raises :class:`ConfigError` for an unusable key."""
    text = inline_or_file(
        cfg.checkpoint_signing_key, CHECKPOINT_SIGNING_KEY_FILE, cfg.checkpoint_signing_key_file
    )
    try:
        if text:
            key = SigningKey.from_json(text)
        else:
            key = ensure_checkpoint_key(cfg.var_dir / "keys", cfg.service)
    except KeyMaterialError as exc:
        raise ConfigError(f"checkpoint signing key of {cfg.service}: {exc}") from None
    if not key.verification.allows(CHECKPOINT_ROLE, cfg.service):
        raise ConfigError(
            f"checkpoint signing key {key.kid!r} must list electric_roles "
            f'["{CHECKPOINT_ROLE}"] and electric_subjects ["{cfg.service}"]'
        )
    return key


class CheckpointCollector(Collector):
    """The checkpoint writer's metrics (module doc), read at scrape time."""

    def __init__(self, writer: CheckpointWriter) -> None:
        self.writer = writer

    def collect(self) -> Iterator[Metric]:
        w = self.writer
        gauges = (
            (
                "electric_checkpoint_last_position",
                "Global position of the last checkpoint this process signed (0: none yet).",
                w.last_position or 0,
            ),
            (
                "electric_checkpoint_last_sequence",
                "Sequence number of the last checkpoint this process signed (0: none yet).",
                w.sequence - 1,
            ),
            (
                "electric_checkpoint_last_timestamp_seconds",
                "created_at of the last checkpoint this process signed (0: none yet).",
                w.last_written_at or 0.0,
            ),
            (
                "electric_checkpoint_last_pass_timestamp_seconds",
                "When the checkpoint writer last read the store and signed what was new "
                "(its start until the first pass).",
                w.last_pass_at,
            ),
            (
                "electric_checkpoint_interval_seconds",
                "Seconds between two passes of the checkpoint writer.",
                w.interval,
            ),
        )
        for name, doc, value in gauges:
            yield GaugeMetricFamily(name, doc, value=float(value))
        yield CounterMetricFamily(
            "electric_checkpoints_written",
            "Checkpoints (sequence numbers) this process signed and published.",
            value=float(w.sequence - 1),
        )
        yield CounterMetricFamily(
            "electric_checkpoint_failures",
            "Checkpoint passes that failed (retried at the next one).",
            value=float(w.failures),
        )


async def open_checkpoints(
    host: ServiceHost, engine: Engine, bus: EventBus, instance_id: str
) -> CheckpointWriter | None:
    """Start ``host``'s checkpoint writer (None when ``checkpoint_interval`` is 0).

    Registers the periodic task and the final checkpoint as a shutdown hook: call this after
    registering the bus stop and before the final relay drain, so that at shutdown the relay
    drains first, then the final checkpoint is written, then the bus stops.
    """
    cfg = host.config
    if cfg.checkpoint_interval <= 0:
        host.log.warning("checkpoints.disabled", reason="ELECTRIC_CHECKPOINT_INTERVAL_SECONDS=0")
        return None
    key = checkpoint_signing_key(cfg)
    file: Path | None = None
    if cfg.uses_kafka:
        from electric_eventlog.kafka import ensure_topics

        await ensure_topics(
            cfg.kafka_bootstrap_servers,
            [CHECKPOINT_TOPIC],
            with_dlq=False,
            namespace=cfg.kafka_namespace,
        )
    else:
        file = cfg.var_dir / "checkpoints" / f"{cfg.service}.jsonl"
    writer = CheckpointWriter(
        engine,
        bus,
        producer=cfg.service,
        kid=key.kid,
        private_key=key.private,
        interval=cfg.checkpoint_interval,
        instance_id=instance_id,
        file=file,
    )
    host.add_background("checkpoints", lambda: writer.run(host.stopping), restart=True)
    host.metrics.registry.register(CheckpointCollector(writer))
    host.on_shutdown(writer.close)
    host.log.info(
        "checkpoints.opened",
        kid=key.kid,
        interval_seconds=cfg.checkpoint_interval,
        topic=CHECKPOINT_TOPIC,
        file=str(file) if file else None,
    )
    return writer


def main(argv: list[str] | None = None) -> int:
    """``python -m electric_platform.checkpointing DIR``: a checkpoint key per service."""
    parser = argparse.ArgumentParser(
        prog="python -m electric_platform.checkpointing",
        description="Write a checkpoint signing key per service (private JWK + public JWKS).",
    )
    parser.add_argument("directory", help="where to write the keys (created if missing)")
    parser.add_argument("--service", action="append", choices=SERVICES, default=None)
    args = parser.parse_args(argv)
    directory = Path(args.directory)
    for service in args.service or SERVICES:
        ensure_checkpoint_key(directory, service)
        private, _ = key_paths(directory, service)
        print(f"export ELECTRIC_{service.upper()}_CHECKPOINT_SIGNING_KEY_FILE={private}")
    print(f"# auditors: electric-audit verify --checkpoint-keys {directory} ...")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

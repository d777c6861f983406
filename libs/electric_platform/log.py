"""Structured JSON logging (structlog over the standard library).

One JSON object per line on stderr with ``timestamp``, ``level``, ``event``, ``logger``,
``service`` and, inside gRPC calls, ``request_id``, ``correlation_id``, ``rpc`` and
``principal``. Third-party loggers (grpc, aiokafka, sqlalchemy, alembic) go through the
same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_configured = False


def configure_logging(level: str = "INFO", fmt: str = "json") -> None:
    """Configure structlog and stdlib logging for the whole process (idempotent).

    ``fmt`` is ``json`` (default) or ``console``. Calling again changes level/format.
    """
    global _configured
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_electric", False):
            root.removeHandler(old)
    handler._electric = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in ("aiokafka", "kafka", "sqlalchemy.engine", "alembic", "grpc", "asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    _configured = True


def get_logger(name: str = "electric", **initial: Any) -> Any:
    """A structlog bound logger; ``initial`` key/values are attached to every line."""
    if not _configured:
        configure_logging()
    return structlog.stdlib.get_logger(name).bind(**initial)

"""Structured JSON logging (structlog over the standard library).

One JSON object per line on stderr with ``timestamp``, ``level``, ``event`` (always a
constant name: details go in fields), ``logger``, ``service`` and, whenever a unit of work
is bound (a gRPC call, a consumed event, an owed call, a table driver step),
``correlation_id`` and ``causation_id`` (:mod:`electric_eventlog.causality`), plus inside
gRPC calls ``request_id``, ``rpc`` and ``principal``. Standard-library loggers (ours in
``electric_eventlog``, which log with ``extra=`` fields, and grpc, aiokafka, sqlalchemy,
alembic) go through the same renderer. The schema of every event name: docs/logging.md.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from electric_eventlog import causality

_configured = False


#: The ``event`` of a line from a library's logger whose message is free text.
LIBRARY_EVENT = "library.message"


def constant_event(
    _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Lines of third-party loggers (asyncio, grpc, aiokafka, …) carry free text: it moves to
    ``message`` and ``event`` becomes :data:`LIBRARY_EVENT` (ours always log a constant)."""
    logger = str(event_dict.get("logger", ""))
    event = event_dict.get("event")
    if not logger.startswith("electric") and isinstance(event, str) and " " in event.strip():
        event_dict["message"] = event
        event_dict["event"] = LIBRARY_EVENT
    return event_dict


def add_ids(
    _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Add the bound correlation and causation ids (when set and not given explicitly)."""
    correlation = causality.correlation_id()
    if correlation:
        event_dict.setdefault("correlation_id", correlation)
    causation = causality.causation_id()
    if causation:
        event_dict.setdefault("causation_id", causation)
    return event_dict


def configure_logging(level: str = "INFO", fmt: str = "json", stream: TextIO | None = None) -> None:
    """Configure structlog and stdlib logging for the whole process (idempotent).

    ``fmt`` is ``json`` (default) or ``console``. Calling again changes level/format.
    ``stream`` (default: ``sys.stderr`` at call time) receives the lines.
    """
    global _configured
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        add_ids,
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
        # ExtraAdder: the ``extra=`` fields of standard-library log calls become fields.
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder(), constant_event],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream or sys.stderr)
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

"""The causal context of the work in progress: correlation id and causation id.

Every event records (``Envelope.correlation_id`` / ``causation_id``, docs/logging.md):

- the **correlation id** of the request that started the chain (a Register, an operator's
  call, a service instance's start-up), carried unchanged through every event, consumer,
  owed call and gRPC call the chain causes, in every service;
- the **causation id**: the id of what directly caused the event — the event a consumer
  applied, the event an owed call or a timer was owed by, or the request id of a command.

Whoever starts a unit of work binds both here (the gRPC interceptor per call, the
:class:`~electric_eventlog.ConsumerWorker` per applied event, the owed-work runner per call, a
table's driver per step); :meth:`electric_eventlog.EventStore.append` uses them when the
caller passes none, and the platform's log processor adds them to every log line. Plain
:class:`contextvars.ContextVar` values: ``asyncio.to_thread`` and tasks inherit them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_correlation: ContextVar[str] = ContextVar("electric_correlation_id", default="")
_causation: ContextVar[str] = ContextVar("electric_causation_id", default="")


def correlation_id() -> str:
    """The correlation id of the current work, or ""."""
    return _correlation.get()


def causation_id() -> str:
    """The causation id of the current work, or ""."""
    return _causation.get()


def set_ids(correlation: str, causation: str) -> None:
    """Set both ids for the rest of the current context (a gRPC call's task)."""
    _correlation.set(correlation)
    _causation.set(causation)


@contextlib.contextmanager
def caused_by(correlation: str, causation: str) -> Iterator[None]:
    """Bind both ids for the ``with`` block, then restore the previous ones.

    An empty ``correlation`` keeps the current correlation id (a step inside a chain that
    does not know where the chain started)."""
    t1 = _correlation.set(correlation or _correlation.get())
    t2 = _causation.set(causation)
    try:
        yield
    finally:
        _causation.reset(t2)
        _correlation.reset(t1)

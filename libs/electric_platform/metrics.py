"""Prometheus metrics: gRPC RED metrics from a server interceptor and the /metrics server.

Each service has its own :class:`prometheus_client.CollectorRegistry` (so several services
can run in one process, each with its own ``/metrics`` port). Metric names follow the
go-grpc-prometheus conventions that ready-made Grafana dashboards expect:

- ``grpc_server_started_total{grpc_service,grpc_method,grpc_type}``
- ``grpc_server_handled_total{grpc_service,grpc_method,grpc_type,grpc_code}``
- ``grpc_server_handling_seconds{grpc_service,grpc_method,grpc_type}`` (histogram)
- ``grpc_server_in_flight{grpc_service,grpc_method,grpc_type}`` (gauge)
- ``grpc_server_msg_sent_total{grpc_service,grpc_method,grpc_type}`` (streamed responses)
- ``electric_service_info{service,version}`` (always 1) and ``electric_service_up`` (1 while
  serving, 0 while draining)
- ``electric_background_restarts_total{task}``
- the standard ``process_*`` and ``python_*`` collectors.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    platform_collector,
    process_collector,
    start_http_server,
)

from electric_platform.errors import ServiceError, service_error_for
from electric_platform.rpc import (
    Context,
    HandlerCallDetails,
    RpcHandler,
    method_kind,
    split_method,
    wrap_handler,
)

_LABELS = ("grpc_service", "grpc_method", "grpc_type")

#: Histogram buckets for call latency, seconds (5 ms … 60 s; streams last long).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServiceMetrics:
    """The metric families of one service, registered in its own registry."""

    def __init__(self, service: str, registry: CollectorRegistry | None = None) -> None:
        self.service = service
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = self.registry
        process_collector.ProcessCollector(registry=reg)
        platform_collector.PlatformCollector(registry=reg)
        gc_collector.GCCollector(registry=reg)
        self.started = Counter(
            "grpc_server_started_total",
            "gRPC calls started on the server.",
            _LABELS,
            registry=reg,
        )
        self.handled = Counter(
            "grpc_server_handled_total",
            "gRPC calls completed on the server, by status code.",
            (*_LABELS, "grpc_code"),
            registry=reg,
        )
        self.latency = Histogram(
            "grpc_server_handling_seconds",
            "Time from the start of a gRPC call to its completion (whole stream for streams).",
            _LABELS,
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.in_flight = Gauge(
            "grpc_server_in_flight", "gRPC calls being handled now.", _LABELS, registry=reg
        )
        self.msg_sent = Counter(
            "grpc_server_msg_sent_total",
            "Response messages sent by server-streaming calls.",
            _LABELS,
            registry=reg,
        )
        self.info = Gauge(
            "electric_service_info",
            "Service identity (always 1).",
            ("service", "version"),
            registry=reg,
        )
        self.up = Gauge(
            "electric_service_up",
            "1 while the service accepts calls, 0 while draining.",
            registry=reg,
        )
        self.background_restarts = Counter(
            "electric_background_restarts_total",
            "Restarts of a crashed background task (outbox relay, consumer).",
            ("task",),
            registry=reg,
        )
        self.info.labels(service=service, version=software_version()).set(1)


def software_version() -> str:
    """Installed version of the platform package, or ``dev``."""
    try:
        from importlib.metadata import version

        return version("electric-poker")
    except Exception:
        return "dev"


def status_of(context: Context, exc: BaseException | None) -> grpc.StatusCode:
    """The status code a call ends with, from the exception (if any) and its context."""
    if isinstance(exc, ServiceError):
        return exc.code
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return grpc.StatusCode.CANCELLED
    code: Any = None
    with contextlib.suppress(Exception):
        code = context.code()
    if isinstance(code, int) and not isinstance(code, grpc.StatusCode):
        code = next((c for c in grpc.StatusCode if c.value[0] == code), None)
    if isinstance(code, grpc.StatusCode) and (exc is None or code is not grpc.StatusCode.OK):
        return code
    if exc is None:
        return grpc.StatusCode.OK
    if isinstance(exc, grpc.aio.AbortError):
        return grpc.StatusCode.UNKNOWN
    return service_error_for(exc).code  # what the outermost wrapper will answer


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Records RED metrics for every call (unary and streaming)."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._m = metrics

    async def intercept_service(
        self,
        continuation: Callable[[HandlerCallDetails], Awaitable[RpcHandler]],
        handler_call_details: HandlerCallDetails,
    ) -> RpcHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        service, method = split_method(handler_call_details.method)
        kind = method_kind(handler)
        labels = {"grpc_service": service, "grpc_method": method, "grpc_type": kind}
        m = self._m

        @contextlib.asynccontextmanager
        async def around(context: Context) -> AsyncIterator[None]:
            m.started.labels(**labels).inc()
            gauge = m.in_flight.labels(**labels)
            gauge.inc()
            start = time.perf_counter()
            error: BaseException | None = None
            try:
                yield
            except BaseException as exc:
                error = exc
                raise
            finally:
                gauge.dec()
                m.latency.labels(**labels).observe(time.perf_counter() - start)
                code = status_of(context, error)
                m.handled.labels(**labels, grpc_code=code.name).inc()

        wrapped = wrap_handler(handler, around)
        if handler.response_streaming:
            wrapped = _count_stream(wrapped, m.msg_sent.labels(**labels))
        return wrapped


def _count_stream(handler: RpcHandler, counter: Counter) -> RpcHandler:
    behaviour = handler.unary_stream or handler.stream_stream

    async def counted(request: Any, context: Context) -> AsyncIterator[Any]:
        async for item in behaviour(request, context):
            counter.inc()
            yield item

    factory: Any = (
        grpc.unary_stream_rpc_method_handler
        if handler.unary_stream is not None
        else grpc.stream_stream_rpc_method_handler
    )
    return factory(
        counted,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class MetricsServer:
    """The ``/metrics`` HTTP endpoint of one service (prometheus_client's WSGI server)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.host = host
        self.port: int = int(self._server.server_port)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

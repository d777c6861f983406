"""Service bootstrap: one :class:`ServiceHost` per service, wiring the whole platform.

A host owns a ``grpc.aio`` server with, in this order, the context interceptor (request and
correlation ids, log binding), the metrics interceptor, the auth interceptor and any extra
interceptors; gRPC health checking and server reflection (v1 and v1alpha, with the protos'
comments); the ``/metrics`` HTTP server;
background tasks; and start-up/shutdown hooks. :func:`run_hosts` runs one or several hosts in
one asyncio loop (one gRPC server per service, each on its own port) until SIGTERM/SIGINT,
then drains them: health NOT_SERVING, stop accepting calls, give in-flight calls
``ELECTRIC_SHUTDOWN_GRACE_SECONDS`` to finish (streams are told through
:attr:`ServiceHost.stopping`), cancel what is left, cancel background tasks, run the shutdown
hooks in reverse order (flush the producer, close the database) and exit 0.

Example ``__main__``::

    async def setup(host: ServiceHost) -> None:
        store = await open_store(host.config.database_url)
        host.on_shutdown(store.close)
        host.add_service(
            registration_pb2.DESCRIPTOR.services_by_name["RegistrationService"],
            registration_pb2_grpc.add_RegistrationServiceServicer_to_server,
            RegistrationApi(store, stopping=host.stopping),
        )

    if __name__ == "__main__":
        main("registration", setup)
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
import structlog
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from electric_platform.auth import DEFAULT_EXEMPT_PREFIXES, AuthInterceptor, token_policy
from electric_platform.config import ConfigError, ServiceConfig, load_config
from electric_platform.context import (
    CAUSATION_ID_KEY,
    CORRELATION_ID_KEY,
    REQUEST_ID_KEY,
    bind_ids,
    new_id,
)
from electric_platform.log import configure_logging, get_logger
from electric_platform.metrics import MetricsInterceptor, MetricsServer, ServiceMetrics, status_of
from electric_platform.paging import configure_page_tokens
from electric_platform.reflection import enable_reflection
from electric_platform.retry import Stopped, retry_async
from electric_platform.rpc import (
    Context,
    HandlerCallDetails,
    RpcHandler,
    method_kind,
    split_method,
    wrap_handler,
)

Hook = Callable[[], object]  # sync or async; the result is ignored
SetupFn = Callable[["ServiceHost"], Awaitable[None]]
BackgroundFn = Callable[[], Awaitable[None]]

_EXPECTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.UNIMPLEMENTED,
}


def _metadata_value(metadata: Any, key: str) -> str:
    for k, v in metadata or ():
        if k.lower() == key:
            return v.decode() if isinstance(v, bytes) else str(v)
    return ""


#: Methods whose access line is logged at DEBUG (probes call them every few seconds).
QUIET_PREFIXES = ("/grpc.health.v1.Health/",)


class ContextInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Binds request/correlation/causation ids (from metadata, generated if absent) and log
    context, and writes the access line of every call.

    The access line is ``rpc.completed`` at INFO (DEBUG for health checks) with the method,
    status code, duration, call kind, peer role and the ids (docs/logging.md). A call that
    ends with a server-fault status (UNKNOWN, INTERNAL, UNAVAILABLE, …) also logs
    ``rpc.failed`` at ERROR, with the traceback of an unexpected exception.
    """

    def __init__(self, service: str) -> None:
        self._service = service
        self._log = get_logger("electric.rpc")

    async def intercept_service(
        self,
        continuation: Callable[[HandlerCallDetails], Awaitable[RpcHandler]],
        handler_call_details: HandlerCallDetails,
    ) -> RpcHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        md = handler_call_details.invocation_metadata
        full = handler_call_details.method
        svc, method = split_method(full)
        kind = method_kind(handler)
        log = self._log
        quiet = full.startswith(QUIET_PREFIXES)

        @contextlib.asynccontextmanager
        async def around(context: Context) -> AsyncIterator[None]:
            started = time.perf_counter()
            request = _metadata_value(md, REQUEST_ID_KEY) or new_id()
            correlation = _metadata_value(md, CORRELATION_ID_KEY) or request
            causation = _metadata_value(md, CAUSATION_ID_KEY) or request
            bind_ids(request, correlation, causation)
            # correlation_id / causation_id come from the causal context (log.add_ids), so a
            # step inside the call that binds its own cause (owed work) logs that cause.
            structlog.contextvars.bind_contextvars(
                service=self._service, request_id=request, rpc=full
            )
            error: BaseException | None = None
            try:
                yield
            except BaseException as exc:
                error = exc
                raise
            finally:
                code = status_of(context, error)
                fields = {
                    "grpc_service": svc,
                    "grpc_method": method,
                    "kind": kind,
                    "code": code.name,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                    "peer_role": structlog.contextvars.get_contextvars().get(
                        "peer_role", "anonymous"
                    ),
                    "request_id": request,
                    "correlation_id": correlation,
                }
                if code not in _EXPECTED:
                    log.error(
                        "rpc.failed",
                        **fields,
                        exc_info=error
                        if error and code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
                        else None,
                    )
                (log.debug if quiet else log.info)("rpc.completed", **fields)

        return wrap_handler(handler, around)


class ServiceHost:
    """Everything one service needs to serve: gRPC server, health, reflection, metrics,
    auth, logging, background tasks and graceful shutdown.

    ``setup`` (optional) is awaited by :meth:`start` before the server binds; it adds the
    servicers and hooks. Attributes for servicers: :attr:`config`, :attr:`metrics` (its
    Prometheus registry is ``metrics.registry``), :attr:`log`, :attr:`stopping` (an
    :class:`asyncio.Event` set when shutdown begins — long-lived streams should end then).
    """

    def __init__(
        self,
        config: ServiceConfig,
        setup: SetupFn | None = None,
        *,
        auth: bool = True,
        auth_exempt_prefixes: Iterable[str] = DEFAULT_EXEMPT_PREFIXES,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),  # type: ignore[type-arg]
    ) -> None:
        self.config = config
        self.name = config.service
        self.metrics = ServiceMetrics(config.service)
        self.log: Any = get_logger(f"electric.{config.service}", service=config.service)
        self._setup = setup
        self._auth = auth
        self._auth_exempt = tuple(auth_exempt_prefixes)
        self._extra_interceptors = list(interceptors)
        self._services: list[tuple[ServiceDescriptor, Callable[[Any, Any], None], Any]] = []
        self._startup: list[Hook] = []
        self._shutdown: list[Hook] = []
        self._background: list[tuple[str, BackgroundFn, bool]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._server: grpc.aio.Server | None = None
        self._health: Any = None
        self._metrics_server: MetricsServer | None = None
        self._stopping: asyncio.Event | None = None
        self._stopped = False
        self.grpc_port: int = 0
        self.metrics_port: int = 0

    # -- composition -----------------------------------------------------------------------

    def add_service(
        self,
        descriptor: ServiceDescriptor,
        add_to_server: Callable[[Any, Any], None],
        servicer: Any,
    ) -> None:
        """Serve ``servicer`` (added with the generated ``add_…_to_server`` function).

        ``descriptor`` (``<pkg>_pb2.DESCRIPTOR.services_by_name["XService"]``) names the
        service for health checking and reflection.
        """
        self._services.append((descriptor, add_to_server, servicer))

    def add_interceptor(self, interceptor: grpc.aio.ServerInterceptor) -> None:  # type: ignore[type-arg]
        """Add ``interceptor`` inside every other one (after the auth check), from setup:
        the server is built after setup, with the interceptors known then."""
        if self._server is not None:
            raise RuntimeError("add_interceptor after the server started: call it in setup")
        self._extra_interceptors.append(interceptor)

    def on_startup(self, hook: Hook) -> None:
        """Run ``hook`` (sync or async) after setup, before the server accepts calls."""
        self._startup.append(hook)

    def on_shutdown(self, hook: Hook) -> None:
        """Run ``hook`` (sync or async) at shutdown, after calls drained; reverse order."""
        self._shutdown.append(hook)

    def add_background(self, name: str, fn: BackgroundFn, *, restart: bool = False) -> None:
        """Run ``fn()`` as a task while serving (e.g. the outbox relay, a consumer).

        It is started after the server, cancelled at shutdown before the shutdown hooks. If it
        raises: with ``restart`` it is logged, counted in
        ``electric_background_restarts_total{task}`` and started again after a backoff
        (0.5 s doubling to 30 s; e.g. Kafka briefly away); without, the host shuts down with
        exit code 1 (a dead task must not go unnoticed).
        """
        self._background.append((name, fn, restart))
        if restart:  # present at 0 from the start, so increase() sees the first restart
            self.metrics.background_restarts.labels(task=name)

    @property
    def stopping(self) -> asyncio.Event:
        """Set when shutdown begins."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    @property
    def service_names(self) -> list[str]:
        """Fully qualified names of the services added so far."""
        return [d.full_name for d, _, _ in self._services]

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Run setup and start hooks, bind the gRPC and metrics servers, start tasks."""
        # Bound for the start-up lines and inherited by the background tasks created here.
        with structlog.contextvars.bound_contextvars(service=self.name):
            await self._start()

    async def _start(self) -> None:
        cfg = self.config
        _ensure_sqlite_dir(cfg.database_url)
        # No default key exists: without a JWKS the service refuses to start (ConfigError).
        policy = token_policy(cfg) if self._auth else None
        configure_page_tokens(cfg.page_token_key)
        _ = self.stopping
        if self._setup is not None:
            await self._setup(self)
        for hook in self._startup:
            await _call(hook)
        interceptors: list[Any] = [ContextInterceptor(self.name), MetricsInterceptor(self.metrics)]
        if policy is not None:
            interceptors.append(AuthInterceptor(policy, exempt_prefixes=self._auth_exempt))
        interceptors.extend(self._extra_interceptors)
        server = grpc.aio.server(interceptors=interceptors)
        for _, add, servicer in self._services:
            add(servicer, server)
        self._health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        enable_reflection(server, [*self.service_names, health.SERVICE_NAME])
        self.grpc_port = server.add_insecure_port(f"{cfg.grpc_host}:{cfg.grpc_port}")
        if self.grpc_port == 0:
            raise OSError(f"cannot bind gRPC {cfg.grpc_host}:{cfg.grpc_port}")
        await server.start()
        self._server = server
        if cfg.metrics_port >= 0:
            self._metrics_server = MetricsServer(
                self.metrics.registry, cfg.metrics_host, cfg.metrics_port
            )
            self.metrics_port = self._metrics_server.port
        for name in [*self.service_names, ""]:
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.metrics.up.set(1)
        for name, fn, restart in self._background:
            self._tasks.append(asyncio.create_task(self._guard(name, fn, restart), name=name))
        self.log.info(
            "service.started",
            grpc=f"{cfg.grpc_host}:{self.grpc_port}",
            metrics=(
                f"http://{cfg.metrics_host}:{self.metrics_port}/metrics"
                if self._metrics_server
                else None
            ),
            services=self.service_names,
            config=cfg.describe(),
        )

    async def _guard(self, name: str, fn: BackgroundFn, restart: bool) -> None:
        def restarting(error: BaseException, attempt: int, delay: float) -> None:
            self.log.error("background.restarting", task=name, delay_seconds=delay, exc_info=error)
            self.metrics.background_restarts.labels(task=name).inc()

        try:
            await retry_async(
                fn,
                retry_on=lambda _: restart and not self.stopping.is_set(),
                initial=0.5,
                maximum=30.0,
                stop=self.stopping,
                before_sleep=restarting,
            )
        except Stopped:
            return  # shutting down while waiting to restart
        except Exception:
            self.log.exception("background.crashed", task=name)
            self.stopping.set()

    async def stop(self, grace: float | None = None) -> None:
        """Drain and stop (idempotent). ``grace`` defaults to the configured grace period."""
        if self._stopped:
            return
        self._stopped = True
        grace = self.config.shutdown_grace_seconds if grace is None else grace
        self.log.info("service.stopping", grace_seconds=grace)
        self.stopping.set()
        self.metrics.up.set(0)
        if self._health is not None:
            await self._health.enter_graceful_shutdown()
        if self._server is not None:
            await self._server.stop(grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for hook in reversed(self._shutdown):
            try:
                await _call(hook)
            except Exception:
                self.log.exception("shutdown.hook_failed", hook=getattr(hook, "__qualname__", ""))
        if self._metrics_server is not None:
            self._metrics_server.close()
        self.log.info("service.stopped")

    async def wait_stopping(self) -> None:
        """Return when shutdown was requested (signal, :meth:`stop` or a crashed task)."""
        await self.stopping.wait()


async def _call(hook: Hook) -> None:
    result = hook()
    if inspect.isawaitable(result):
        await result


def _ensure_sqlite_dir(url: str) -> None:
    prefix, sep, path = url.partition(":///")
    if sep and prefix.startswith("sqlite") and path and not path.startswith(":memory:"):
        Path(path.split("?", 1)[0]).parent.mkdir(parents=True, exist_ok=True)


async def run_hosts(
    hosts: Sequence[ServiceHost],
    *,
    install_signal_handlers: bool = True,
    ready: Callable[[Sequence[ServiceHost]], None] | None = None,
) -> int:
    """Start ``hosts``, serve until SIGTERM/SIGINT (or one host stops), drain all; exit code.

    Returns 0 after a clean drain, 1 when start-up failed or a background task crashed.
    ``ready`` is called once all hosts serve (e.g. to print addresses).
    """
    loop = asyncio.get_running_loop()
    requested = asyncio.Event()
    log = get_logger("electric.platform")
    if install_signal_handlers:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, requested.set)
    started: list[ServiceHost] = []
    code = 0
    try:
        for host in hosts:
            started.append(host)  # stopped (hooks run) even if its start fails midway
            await host.start()
        if ready is not None:
            ready(hosts)
        waiters = [asyncio.create_task(requested.wait())] + [
            asyncio.create_task(h.wait_stopping()) for h in hosts
        ]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            w.cancel()
        if not requested.is_set():
            log.error("platform.host_stopped_unexpectedly")
            code = 1
        else:
            log.info("platform.signal_received")
    except Exception:
        log.exception("platform.start_failed")
        code = 1
    finally:
        await asyncio.gather(*(h.stop() for h in reversed(started)), return_exceptions=True)
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
    return code


def serve(*hosts: ServiceHost) -> None:
    """Run ``hosts`` in a new event loop until a signal; exit the process with its code."""
    if not hosts:
        raise ValueError("serve() needs at least one ServiceHost")
    cfg = hosts[0].config
    configure_logging(cfg.log_level, cfg.log_format)
    sys.exit(asyncio.run(run_hosts(hosts)))


def main(service: str, setup: SetupFn, **host_options: Any) -> None:
    """Entry point of ``python -m electric_<service>``: load config, serve, exit."""
    try:
        config = load_config(service)
        if host_options.get("auth", True):
            token_policy(config)  # no keys, unreadable keys: say so before anything starts
    except ConfigError as exc:
        print(f"electric_{service}: configuration error: {exc}", file=sys.stderr)
        sys.exit(2)
    configure_logging(config.log_level, config.log_format)
    serve(ServiceHost(config, setup, **host_options))

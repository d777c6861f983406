"""The embedded platform: the four services in ONE process, bots playing, a live summary.

``python -m electric_runner`` (``make run``) hosts registration, table, wallet and payout
with their own ``setup`` functions (the same code as ``python -m electric_<service>``), each
on its own gRPC port with its own SQLite file under ``var/`` and all sharing the in-process
event bus; then starts the bot runner (bots are gRPC clients of those ports, like any
front end) and prints a compact summary every couple of seconds. Ctrl-C / SIGTERM drains
and exits 0.

Configuration is the services' own environment variables (docs/platform.md); the plain
``DATABASE_URL`` is ignored here (four services must not share one database: use
``ELECTRIC_<SVC>_DATABASE_URL``). See docs/running.md.

Tokens: at every start the runner writes a fresh Ed25519 key set into ``<var dir>/keys/``
(the issuer key and one key per service, private files mode 0600, plus the public
``jwks.json`` the services verify with) and prints how to mint a token with the issuer key;
there is no shared development secret. To use keys of your own, set
``ELECTRIC_AUTH_JWKS`` / ``ELECTRIC_AUTH_JWKS_FILE``, the services' signing keys and
``ELECTRIC_AUTH_ISSUER_KEY_FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from electric_bots.casino_runner import (
    NEVER_DECIDES_EVERY,
    CasinoRunner,
    CasinoRunnerConfig,
    add_casino_options,
    check_casino_options,
)
from electric_bots.runner import DEFAULT_MIX, BotRunner, BotRunnerConfig, Targets, parse_mix
from electric_eventlog import EventBus
from electric_platform.auth import Role, TokenSource
from electric_platform.config import (
    DEFAULT_GRPC_PORTS,
    SERVICES,
    ConfigError,
    ServiceConfig,
    load_config,
)
from electric_platform.eventpath import inprocess_bus
from electric_platform.keys import SigningKey, write_dev_keys
from electric_platform.log import configure_logging
from electric_platform.server import ServiceHost, run_hosts
from electric_platform.token import ISSUER_KEY_FILE

from electric_runner.summary import Figures, follow_events, poll_wallet, render
from electric_runner.web import DevSignIn, EdgeSettings, WebEdge, allowed_origins, web_port

SetupFn = Callable[[ServiceHost], Awaitable[None]]


def service_setups() -> dict[str, SetupFn]:
    """Each service's ``setup`` (imported lazily: the services are separate packages)."""
    from electric_payout.app import setup as payout_setup
    from electric_registration.app import setup as registration_setup
    from electric_table.app import setup as table_setup
    from electric_wallet.app import setup as wallet_setup

    return {
        "registration": registration_setup,
        "table": table_setup,
        "wallet": wallet_setup,
        "payout": payout_setup,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def embedded_environ(base: Mapping[str, str], *, free_ports: bool = False) -> dict[str, str]:
    """The environment the four in-process services are configured from.

    Drops the plain ``DATABASE_URL`` (each service keeps its own SQLite file unless
    ``ELECTRIC_<SVC>_DATABASE_URL`` is set). With ``free_ports`` (or a per-service port of
    0) a free port is chosen now, so the ``ELECTRIC_<SVC>_TARGET`` addresses the services use
    to reach each other are known before they start.
    """
    env = {k: v for k, v in base.items() if k != "DATABASE_URL"}
    for service in SERVICES:
        key = f"ELECTRIC_{service.upper()}_GRPC_PORT"
        port = env.get(key) or env.get("ELECTRIC_GRPC_PORT") or str(DEFAULT_GRPC_PORTS[service])
        if free_ports or port == "0":
            port = str(_free_port())
            env[key] = port
            metrics = f"ELECTRIC_{service.upper()}_METRICS_PORT"
            if not env.get(metrics):
                env[metrics] = "0"
        elif env.get("ELECTRIC_GRPC_PORT") and not env.get(key):
            raise ConfigError(
                "ELECTRIC_GRPC_PORT would give the four embedded services one port: "
                "set ELECTRIC_<SVC>_GRPC_PORT per service"
            )
        env.setdefault(f"ELECTRIC_{service.upper()}_TARGET", f"127.0.0.1:{port}")
    return env


def embedded_keys(env: dict[str, str]) -> Path:
    """Make sure ``env`` carries token keys; returns the issuer's private key file.

    Keys given in ``env`` (a JWKS and ``ELECTRIC_AUTH_ISSUER_KEY_FILE``) are used as they
    are; otherwise a fresh set is written into ``<ELECTRIC_VAR_DIR>/keys`` and ``env`` gets
    the variables that point the services at it.
    """
    given = env.get("ELECTRIC_AUTH_JWKS") or env.get("ELECTRIC_AUTH_JWKS_FILE")
    if given and env.get(ISSUER_KEY_FILE):
        return Path(env[ISSUER_KEY_FILE])
    files = write_dev_keys(Path(env.get("ELECTRIC_VAR_DIR") or "var") / "keys")
    env.update(files.env())
    env[ISSUER_KEY_FILE] = str(files.issuer)
    return files.issuer


@dataclass
class RunnerOptions:
    """Command-line options of the runner."""

    bots: int = 30
    think: float = 0.05
    duration: float | None = None
    refresh: float = 1.5
    free_ports: bool = False
    log_file: str = ""
    entries: int = 1
    mix: tuple[tuple[str, int], ...] = DEFAULT_MIX
    #: Casino bots beside the poker bots: THB (each at a private table) and UTH (one table).
    thb_bots: int = 4
    uth_bots: int = 6
    #: The browser edge's port (None: ELECTRIC_WEB_PORT or 8080; 0: a free one); web=False
    #: starts no edge.
    web_port: int | None = None
    web: bool = True


def parse_args(argv: Sequence[str] | None) -> RunnerOptions:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        prog="python -m electric_runner",
        description="Electric Poker, embedded: four services in one process, bots playing.",
    )
    parser.add_argument("--bots", type=int, default=30, help="bot players (0 = none); 30")
    parser.add_argument(
        "--think", type=float, default=0.05, help="bot thinking-time scale (0 = instant); 0.05"
    )
    parser.add_argument(
        "--duration", type=float, default=None, help="stop the bots after SECONDS (then idle)"
    )
    parser.add_argument(
        "--mix",
        default="",
        help="bot strategies with weights, e.g. random:3,tag:1 (the default); names: "
        "random, tag, timeout, sitout",
    )
    parser.add_argument("--refresh", type=float, default=1.5, help="summary refresh, seconds")
    parser.add_argument(
        "--free-ports", action="store_true", help="pick free ports instead of 50051-50054"
    )
    parser.add_argument(
        "--entries", type=int, default=1, help="entries per bot registration (1-10); 1"
    )
    add_casino_options(parser)
    parser.add_argument(
        "--web-port",
        type=int,
        default=None,
        help="the browser edge and web client's port (0 = a free one); 8080",
    )
    parser.add_argument("--no-web", action="store_true", help="start no browser edge")
    parser.add_argument(
        "--log-file",
        default="",
        help="service logs go here (default <var dir>/electric-run.log; '-' = stderr)",
    )
    ns = parser.parse_args(argv)
    try:
        mix = parse_mix(ns.mix) if ns.mix else DEFAULT_MIX
    except ValueError as exc:
        parser.error(str(exc))
    check_casino_options(parser, ns.thb_bots, ns.uth_bots)
    if ns.bots < 0 or ns.think < 0 or ns.refresh <= 0 or not 1 <= ns.entries <= 10:
        parser.error("--bots/--think must be >= 0, --refresh > 0, --entries 1..10")
    return RunnerOptions(
        bots=ns.bots,
        think=ns.think,
        duration=ns.duration,
        refresh=ns.refresh,
        free_ports=ns.free_ports,
        log_file=ns.log_file,
        entries=ns.entries,
        mix=mix,
        thb_bots=ns.thb_bots,
        uth_bots=ns.uth_bots,
        web_port=ns.web_port,
        web=not ns.no_web,
    )


def _route_logs(path: str, var_dir: Path) -> str:
    """Send the (JSON) service logs to a file so the terminal shows the summary."""
    if path == "-":
        return "stderr"
    target = Path(path) if path else var_dir / "electric-run.log"
    target.parent.mkdir(parents=True, exist_ok=True)
    stream = target.open("a", encoding="utf-8")
    for handler in logging.getLogger().handlers:
        if getattr(handler, "_electric", False) and isinstance(handler, logging.StreamHandler):
            handler.setStream(stream)
    return str(target)


def header(
    hosts: Sequence[ServiceHost], cfg: ServiceConfig, log_target: str, issuer_key: Path
) -> list[str]:
    """The lines printed once at start: where to connect and how to get a token."""
    lines = ["Electric Poker — embedded platform (4 services in one process)", ""]
    for host in hosts:
        metrics = (
            f"  metrics http://{host.config.metrics_host}:{host.metrics_port}/metrics"
            if host.metrics_port
            else ""
        )
        lines.append(f"  {host.name:<13} grpc {host.config.grpc_host}:{host.grpc_port}{metrics}")
    storage = "in-process bus" if not cfg.uses_kafka else f"Kafka {cfg.kafka_bootstrap_servers}"
    lines += [
        f"  state: SQLite under {cfg.var_dir}/ (one file per service), events: {storage}",
        f"  logs: {log_target}",
        "",
        f"  keys:    {issuer_key.parent}/ (fresh Ed25519 keys of this run; issuer key "
        f"{issuer_key.name})",
        "  token:   TOKEN=$(.venv/bin/python -m electric_platform.token "
        f"--key {issuer_key} --sub alice --role player)",
        '  call:    grpcurl -plaintext -H "authorization: Bearer $TOKEN" '
        f"127.0.0.1:{hosts[0].grpc_port} electric.registration.v1.RegistrationService/ListLobby",
        "  (operator calls, e.g. wallet Deposit: --role operator; see docs/running.md)",
        "  Ctrl-C stops.",
        "",
    ]
    return lines


class Screen:
    """Prints the summary: redrawn in place on a terminal, one line per refresh otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self._drawn = 0

    def show(self, lines: list[str]) -> None:
        if self.tty:
            if self._drawn:
                self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self.out.write("\n".join(lines) + "\n")
            self._drawn = len(lines)
        else:
            self.out.write(" | ".join(" ".join(line.split()) for line in lines) + "\n")
        self.out.flush()


def _casino_line(casino: CasinoRunner) -> str:
    s = casino.stats
    timeouts = sum(sum(t.timeouts.values()) for t in s.games.values())
    return (
        f"casino bots  {len(casino.assignments)} playing  results acknowledged {s.acks}"
        f"  timeouts {timeouts}  retries {s.retries}  errors {s.errors}"
    )


async def _summary_loop(
    figures: Figures,
    runner: BotRunner | None,
    screen: Screen,
    every: float,
    stop: asyncio.Event,
    casino: CasinoRunner | None = None,
    web_ready: asyncio.Task[None] | None = None,
) -> None:
    if web_ready is not None:
        # The web line joins the header before the summary starts redrawing below it.
        await asyncio.wait([web_ready], timeout=30)
    started = time.monotonic()
    while not stop.is_set():
        extra = f"uptime {int(time.monotonic() - started)}s"
        if runner is not None:
            s = runner.stats
            extra = (
                f"bots         {len(runner.assignments)} playing  actions {s.actions}"
                f"  registrations {s.registrations}  stale {s.stale_commands}"
                f"  errors {s.errors}  {extra}"
            )
            if s.unimplemented:
                extra += f"  (UNIMPLEMENTED answers: {s.unimplemented})"
        lines = render(figures, extra=extra)
        if casino is not None:
            lines.append(_casino_line(casino))
        screen.show(lines)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every)


async def run(options: RunnerOptions, environ: Mapping[str, str] | None = None) -> int:
    """Host the four services, run bots and the summary until a signal; the exit code."""
    env = embedded_environ(
        os.environ if environ is None else environ, free_ports=options.free_ports
    )
    issuer_path = embedded_keys(env)
    issuer_key = SigningKey.from_file(issuer_path)
    configs = {name: load_config(name, env) for name in SERVICES}
    first = configs["registration"]
    configure_logging(first.log_level, first.log_format)
    log_target = _route_logs(options.log_file, first.var_dir)
    setups = service_setups()
    # The wallet first: the others call it.
    order = ("wallet", "registration", "table", "payout")
    hosts = [ServiceHost(configs[name], setups[name]) for name in order]
    stop = asyncio.Event()
    figures = Figures()
    screen = Screen(sys.stdout)
    tasks: list[asyncio.Task[object]] = []
    runner: BotRunner | None = None
    casino: CasinoRunner | None = None
    web: list[WebEdge | DevSignIn] = []

    def ready(started: Sequence[ServiceHost]) -> None:
        nonlocal runner, casino
        by_name = {h.name: h for h in started}
        ordered = [by_name[name] for name in SERVICES]
        print("\n".join(header(ordered, first, log_target, issuer_path)), flush=True)
        bus: EventBus = inprocess_bus() if not first.uses_kafka else _kafka_bus(first)
        operator = TokenSource(issuer_key, "electric-runner", Role.OPERATOR)
        wallet_target = f"127.0.0.1:{by_name['wallet'].grpc_port}"
        tasks.append(asyncio.create_task(follow_events(bus, figures, stop)))
        tasks.append(asyncio.create_task(poll_wallet(wallet_target, operator, figures, stop)))
        if options.bots > 0:
            runner = BotRunner(
                BotRunnerConfig(
                    targets=Targets(
                        registration=f"127.0.0.1:{by_name['registration'].grpc_port}",
                        table=f"127.0.0.1:{by_name['table'].grpc_port}",
                        wallet=wallet_target,
                    ),
                    key=issuer_key,
                    bots=options.bots,
                    mix=options.mix,
                    entries=options.entries,
                    max_active=options.entries,
                    duration=options.duration,
                    think_scale=options.think,
                )
            )
            runner.stop = stop
            tasks.append(asyncio.create_task(runner.run()))
        if options.thb_bots or options.uth_bots:
            casino = CasinoRunner(
                CasinoRunnerConfig(
                    targets=Targets(
                        registration=f"127.0.0.1:{by_name['registration'].grpc_port}",
                        table=f"127.0.0.1:{by_name['table'].grpc_port}",
                        wallet=wallet_target,
                    ),
                    key=issuer_key,
                    thb_bots=options.thb_bots,
                    uth_bots=options.uth_bots,
                    never_every=NEVER_DECIDES_EVERY,
                    duration=options.duration,
                )
            )
            tasks.append(asyncio.create_task(casino.run()))
            tasks.append(asyncio.create_task(_propagate(stop, casino.stop)))
        web_ready = asyncio.create_task(_start_web(options, env, by_name, issuer_key, web))
        tasks.append(web_ready)
        tasks.append(
            asyncio.create_task(
                _summary_loop(figures, runner, screen, options.refresh, stop, casino, web_ready)
            )
        )
        tasks.append(asyncio.create_task(_stop_with(started, stop)))

    try:
        code = await run_hosts(hosts, ready=ready)
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for part in web:
            if isinstance(part, WebEdge):
                part.stop()
            else:
                await part.close()
    print(
        f"stopped: {figures.tournaments_finished} tournaments finished, "
        f"{figures.hands_dealt} hands dealt; exit code {code}",
        flush=True,
    )
    if code != 0 and log_target != "stderr":
        print(f"something failed; the last log lines ({log_target}):", file=sys.stderr)
        for line in _tail(Path(log_target), 8):
            print(f"  {line}", file=sys.stderr)
    return code


def _tail(path: Path, n: int) -> list[str]:
    with contextlib.suppress(OSError):
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:]
    return []


def _kafka_bus(cfg: ServiceConfig) -> EventBus:
    from electric_eventlog.kafka import KafkaBus

    return KafkaBus(
        cfg.kafka_bootstrap_servers,
        client_id="electric-runner-summary",
        namespace=cfg.kafka_namespace,
    )


async def _start_web(
    options: RunnerOptions,
    env: Mapping[str, str],
    hosts: Mapping[str, ServiceHost],
    issuer: SigningKey,
    parts: list[WebEdge | DevSignIn],
) -> None:
    """Start development sign-in and the browser edge, and print the page's URL."""
    if not options.web:
        return
    missing = WebEdge.available()
    if missing:
        print(f"  web:     not started: {missing}", flush=True)
        return
    sign_in = DevSignIn(
        issuer, f"127.0.0.1:{hosts['wallet'].grpc_port}", asyncio.get_running_loop()
    )
    sign_in.start()
    parts.append(sign_in)
    settings = EdgeSettings(
        port=web_port(options.web_port, options.free_ports, env),
        backends={name: hosts[name].grpc_port for name in SERVICES},
        dev_upstream=sign_in.url,
        origins=allowed_origins(env),
    )
    try:
        edge = WebEdge(
            settings, _edge_log(options.log_file, Path(env.get("ELECTRIC_VAR_DIR") or "var"))
        )
        parts.append(edge)
        url = await edge.start()
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"  web:     the browser edge did not start: {exc}", flush=True)
        return
    print(f"  web:     {url}  (the web client; sign in with any name)", flush=True)


def _edge_log(path: str, var_dir: Path) -> TextIO | None:
    """The edge's JSON log lines go where the services' go (stderr for '-')."""
    if path == "-":
        return sys.stderr
    target = Path(path) if path else var_dir / "electric-run.log"
    return target.open("a", encoding="utf-8")


async def _propagate(stop: asyncio.Event, casino_stop: asyncio.Event) -> None:
    """The casino bots stop with the platform (their own end does not stop it)."""
    await stop.wait()
    casino_stop.set()


async def _stop_with(hosts: Sequence[ServiceHost], stop: asyncio.Event) -> None:
    """Stop bots and summary as soon as any host begins to shut down."""
    waiters = [asyncio.create_task(h.wait_stopping()) for h in hosts]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
    stop.set()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m electric_runner``."""
    options = parse_args(argv)
    try:
        return asyncio.run(run(options))
    except ConfigError as exc:
        print(f"electric_runner: configuration error: {exc}", file=sys.stderr)
        return 2

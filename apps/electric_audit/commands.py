"""The source-reading subcommands of ``electric-audit``: ``events`` and ``verify``.

Both take the same sources: ``--store URL`` (repeatable; any service's database, opened
read-only) and/or ``--kafka HOST:PORT`` (every service topic from offset 0; ``--namespace``
as the services' ``ELECTRIC_KAFKA_NAMESPACE``; ``--service`` restricts the topics). Output is
human text, or JSON lines with ``--json``. Exit status: 0 all checks pass, 1 a check fails,
2 a usage or connection error.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from electric_audit.checks import CheckResult, run_checks
from electric_audit.checks_checkpoints import add_arguments as add_checkpoint_arguments
from electric_audit.checks_checkpoints import load_anchors, run_checkpoint_checks
from electric_audit.checks_money import run_money_checks
from electric_audit.checks_progress import check_progress
from electric_audit.events import EventFilter, select_events
from electric_audit.events import event_text as _event_text
from electric_audit.sources import SERVICES, Source, SourceError, read_store, read_topics

COMMANDS = ("events", "verify")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _add_sources(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sources (at least one)")
    group.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="URL",
        help="a service's database URL (sqlite:///path or postgresql+psycopg://...), read-only",
    )
    group.add_argument("--kafka", metavar="HOST:PORT", help="Kafka bootstrap address")
    group.add_argument("--namespace", default="", help="Kafka topic namespace (prefix)")
    group.add_argument(
        "--service",
        action="append",
        choices=SERVICES,
        default=None,
        help="with --kafka: read only this service's topic (repeatable; default all four)",
    )
    parser.add_argument("--json", action="store_true", help="JSON lines instead of text")


def add_parsers(sub: Any) -> None:
    """Register ``events`` and ``verify`` on the CLI's subparsers."""
    p_events = sub.add_parser("events", help="decoded events, filtered, merged across sources")
    _add_sources(p_events)
    p_events.add_argument("--stream", help="exact stream id, e.g. table-t1")
    p_events.add_argument("--type", dest="event_type", help="event type (full or short name)")
    p_events.add_argument("--tournament", help="tournament id (stream id or payload field)")
    p_events.add_argument("--table", help="table id (stream id or payload field)")
    p_events.add_argument("--player", help="player id (stream id or payload field)")
    p_events.add_argument("--since", type=_moment, help="occurred at or after (ISO 8601)")
    p_events.add_argument("--until", type=_moment, help="occurred at or before (ISO 8601)")
    p_verify = sub.add_parser("verify", help="run every check over the sources")
    _add_sources(p_verify)
    add_checkpoint_arguments(p_verify)


def load_sources(args: argparse.Namespace) -> list[Source]:
    """Read every source the arguments name (raises :class:`SourceError`)."""
    sources = [read_store(url) for url in args.store]
    if args.kafka:
        sources += read_topics(args.kafka, args.namespace, args.service or SERVICES)
    return sources


def sources_or_exit(args: argparse.Namespace) -> list[Source] | int:
    """The sources the arguments name, or the usage exit status (said on stderr) when they
    name none or one cannot be read."""
    if not args.store and not args.kafka:
        sys.stderr.write(f"electric-audit {args.command}: give --store URL and/or --kafka\n")
        return EXIT_USAGE
    try:
        return load_sources(args)
    except SourceError as exc:
        sys.stderr.write(f"electric-audit {args.command}: cannot read {exc}\n")
        return EXIT_USAGE


def _events(args: argparse.Namespace, sources: list[Source]) -> int:
    keep = EventFilter(
        stream=args.stream,
        event_type=args.event_type,
        tournament=args.tournament,
        table=args.table,
        player=args.player,
        since=args.since,
        until=args.until,
    )
    write = sys.stdout.write
    for record in select_events(sources, keep):
        write((json.dumps(record, sort_keys=True) if args.json else _event_text(record)) + "\n")
    return EXIT_OK


def result_text(result: CheckResult) -> str:
    status = "ok" if result.ok else "FAILED"
    line = f"{result.name:<14} {status:<6} checked {result.checked}, failed {result.failed}"
    if result.first_failure is not None:
        line += f"\n{'':<14} first failure: {result.first_failure}"
    return line


def write_results(results: list[CheckResult], as_json: bool) -> bool:
    """Print the checks (text or JSON lines); True when all pass."""
    write = sys.stdout.write
    for result in results:
        if as_json:
            record = {
                "check": result.name,
                "ok": result.ok,
                "checked": result.checked,
                "failed": result.failed,
                "first_failure": result.first_failure,
            }
            write(json.dumps(record) + "\n")
        else:
            write(result_text(result) + "\n")
    return all(r.ok for r in results)


def _verify(args: argparse.Namespace, sources: list[Source]) -> int:
    try:
        anchors = load_anchors(args)
    except SourceError as exc:
        sys.stderr.write(f"electric-audit verify: cannot read {exc}\n")
        return EXIT_USAGE
    results = [*run_checks(sources), check_progress(sources), *run_money_checks(sources)]
    results += run_checkpoint_checks(sources, anchors)
    write = sys.stdout.write
    if not args.json:
        names = ", ".join(f"{s.label} ({len(s.events)} events)" for s in sources)
        write(f"sources: {names}\n")
    ok = write_results(results, args.json)
    if not args.json:
        write("all checks pass\n" if ok else "SOME CHECKS FAILED\n")
    return EXIT_OK if ok else EXIT_FAILED


def run(args: argparse.Namespace) -> int:
    """Run ``events`` or ``verify``; returns the exit status."""
    sources = sources_or_exit(args)
    if isinstance(sources, int):
        return sources
    if args.command == "events":
        return _events(args, sources)
    return _verify(args, sources)

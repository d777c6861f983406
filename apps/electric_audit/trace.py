"""``electric-audit trace ID``: the causal tree of one request, event or correlation id.

Every envelope records its ``correlation_id`` (the request that started the chain) and its
``causation_id`` (the event, command or timer that directly caused it; docs/logging.md).
``trace`` reads the given sources (stores and/or topics, merged and de-duplicated as by
``events``) and selects:

- with an **event id**: that event and every event caused by it, directly or not;
- with any other id (a **correlation id** or a **request id**): every event with that
  correlation id or caused by that id, and every event caused by those, directly or not
  (so a chain is followed even where a step records a different correlation id).

The tree's root is the id. An event hangs under the event that caused it; an event caused
by something that is not a selected event — a command's request id, an event outside the
selection — hangs under a ``cause`` node for that id, itself under the root. Children are in
the merged (causal) order of ``events``.

Text output: one line per node, indented by depth (depths beyond 40 are shown as numbers),
then a summary per producer. ``--json``: one JSON object per node (``node`` = ``root``,
``cause`` or ``event``, with ``depth`` and ``parent``), then a ``summary`` object. Exit
status 0 when the id matches at least one event, 1 when it matches none, 2 on a usage or
connection error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from electric_audit.commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _add_sources, load_sources
from electric_audit.events import merged, occurred_at
from electric_audit.sources import Located, Source, SourceError

#: Indentation stops growing here (long timer chains); deeper lines show their depth.
MAX_INDENT = 40


@dataclass
class Node:
    """One node of the causal tree."""

    #: ``root``, ``cause`` or ``event``.
    kind: str
    #: The id the node stands for (the event id for an event).
    id: str
    event: Located | None = None
    children: list[Node] = field(default_factory=list)


@dataclass
class Trace:
    """The selected events and their tree."""

    root: Node
    events: list[Located]

    def walk(self) -> Iterator[tuple[int, Node, Node | None]]:
        """``(depth, node, parent)`` in depth-first pre-order (iterative: chains are long)."""
        stack: list[tuple[int, Node, Node | None]] = [(0, self.root, None)]
        while stack:
            depth, node, parent = stack.pop()
            yield depth, node, parent
            for child in reversed(node.children):
                stack.append((depth + 1, child, node))


def select(sources: Sequence[Source], trace_id: str) -> list[Located]:
    """The events of the trace of ``trace_id`` (module doc), in merged order."""
    every = merged(sources)
    by_id = {e.envelope.event_id: e for e in every}
    caused: dict[str, list[Located]] = defaultdict(list)
    for e in every:
        caused[e.envelope.causation_id].append(e)
    if trace_id in by_id:
        seeds = [by_id[trace_id]]
    else:
        seeds = [
            e
            for e in every
            if e.envelope.correlation_id == trace_id or e.envelope.causation_id == trace_id
        ]
    chosen: set[str] = set()
    todo = list(seeds)
    while todo:
        e = todo.pop()
        event_id = e.envelope.event_id
        if event_id in chosen:
            continue
        chosen.add(event_id)
        todo.extend(caused.get(event_id, ()))
    return [e for e in every if e.envelope.event_id in chosen]


def build(sources: Sequence[Source], trace_id: str) -> Trace:
    """The causal tree of ``trace_id`` over ``sources``."""
    events = select(sources, trace_id)
    root = Node("root", trace_id)
    nodes = {e.envelope.event_id: Node("event", e.envelope.event_id, e) for e in events}
    causes: dict[str, Node] = {}
    for e in events:
        node = nodes[e.envelope.event_id]
        cause = e.envelope.causation_id
        if node.id == trace_id:
            root.event = e  # the id is an event: the root stands for it
            continue
        if cause == trace_id or not cause:
            parent = root
        elif cause in nodes and cause != node.id:
            parent = nodes[cause]
        elif cause in causes:
            parent = causes[cause]
        else:
            parent = causes[cause] = Node("cause", cause)
            root.children.append(parent)
        parent.children.append(node)
    return Trace(root, events)


def short_type(event_type: str) -> str:
    return event_type.rsplit(".", 1)[-1]


def node_record(depth: int, node: Node, parent: Node | None) -> dict[str, Any]:
    """One node as a JSON-able record (the ``--json`` line)."""
    record: dict[str, Any] = {
        "node": node.kind,
        "id": node.id,
        "depth": depth,
        "parent": parent.id if parent is not None else None,
    }
    if node.event is not None:
        e = node.event.envelope
        record.update(
            event_id=e.event_id,
            event_type=e.event_type,
            producer=e.producer,
            stream_id=e.stream_id,
            stream_version=e.stream_version,
            global_position=e.global_position,
            occurred_at=occurred_at(node.event).isoformat(),
            correlation_id=e.correlation_id,
            causation_id=e.causation_id,
            source=node.event.source,
            where=node.event.where,
        )
    return record


def node_text(depth: int, node: Node) -> str:
    """One node as an indented line of text."""
    indent = "  " * min(depth, MAX_INDENT)
    deep = f"[{depth}] " if depth > MAX_INDENT else ""
    if node.event is not None:
        e = node.event.envelope
        return (
            f"{indent}{deep}{short_type(e.event_type)}  {e.producer} {e.stream_id} "
            f"v{e.stream_version}  {occurred_at(node.event).isoformat()}  {e.event_id}"
        )
    if node.kind == "root":
        return f"{indent}trace {node.id}"
    return f"{indent}{deep}cause {node.id} (a command or an event outside the trace)"


def summary(trace: Trace) -> dict[str, Any]:
    """Counts of the trace: events per producer and per type."""
    producers = Counter(e.envelope.producer for e in trace.events)
    types = Counter(short_type(e.envelope.event_type) for e in trace.events)
    correlations = sorted({e.envelope.correlation_id for e in trace.events})
    return {
        "node": "summary",
        "id": trace.root.id,
        "events": len(trace.events),
        "producers": dict(sorted(producers.items())),
        "event_types": dict(sorted(types.items())),
        "correlation_ids": correlations,
    }


def add_parser(sub: Any) -> None:
    """Register ``trace`` on the CLI's subparsers."""
    p_trace = sub.add_parser("trace", help="the causal tree of a correlation, request or event id")
    p_trace.add_argument("id", help="a correlation id, a request id or an event id")
    _add_sources(p_trace)


def run(args: argparse.Namespace) -> int:
    """Run ``trace``; returns the exit status."""
    if not args.store and not args.kafka:
        sys.stderr.write("electric-audit trace: give --store URL and/or --kafka\n")
        return EXIT_USAGE
    try:
        sources = load_sources(args)
    except SourceError as exc:
        sys.stderr.write(f"electric-audit trace: cannot read {exc}\n")
        return EXIT_USAGE
    trace = build(sources, args.id)
    write = sys.stdout.write
    for depth, node, parent in trace.walk():
        if args.json:
            write(json.dumps(node_record(depth, node, parent), sort_keys=True) + "\n")
        else:
            write(node_text(depth, node) + "\n")
    counts = summary(trace)
    if args.json:
        write(json.dumps(counts, sort_keys=True) + "\n")
    else:
        per = ", ".join(f"{p} {n}" for p, n in counts["producers"].items()) or "none"
        write(f"{counts['events']} events ({per})\n")
    return EXIT_OK if trace.events else EXIT_FAILED

"""The story and export subcommands of ``electric-audit``: ``tournament ID``, ``round ID`` and
``export``. They take the same sources as ``events`` / ``verify`` (``--store URL``
repeatable, read-only; ``--kafka HOST:PORT`` from offset 0) and the same exit status: 0 every
check passes, 1 a check fails (or the id is not found), 2 a usage or connection error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from electric_audit import export
from electric_audit.commands import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    _add_sources,
    _moment,
    sources_or_exit,
    write_results,
)
from electric_audit.narrative import Narrative
from electric_audit.sources import Source
from electric_audit.story import tournament_story

COMMANDS = ("tournament", "round", "export")


def add_parsers(sub: Any) -> None:
    """Register ``tournament``, ``round`` and ``export`` on the CLI's subparsers."""
    p_tournament = sub.add_parser("tournament", help="the whole story of one tournament, checked")
    p_tournament.add_argument("id", help="tournament id (= its table id)")
    _add_sources(p_tournament)
    p_round = sub.add_parser("round", help="the whole story of one THB or UTH round, checked")
    p_round.add_argument("id", help="casino round id")
    p_round.add_argument(
        "--uth-windows",
        type=_windows,
        metavar="GREEN,YELLOW,DECISION",
        help="a UTH table's windows in ms (its ELECTRIC_TABLE_UTH_*_MS); default: the round's own",
    )
    _add_sources(p_round)
    p_export = sub.add_parser("export", help="hand histories as PHH and PokerStars-style text")
    _add_sources(p_export)
    export.add_arguments(p_export)
    p_export.add_argument("--since", type=_moment, help="hands started at or after (ISO 8601)")
    p_export.add_argument("--until", type=_moment, help="hands started at or before (ISO 8601)")
    p_export.add_argument(
        "--validate",
        action="store_true",
        help="read both formats back with pokerkit (an independent parser); fail on any hand",
    )


def _windows(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: three whole numbers of ms, e.g. 12000,3000,15000"
        )
    green, yellow, decision = (int(p) for p in parts)
    return green, yellow, decision


def _tournament(args: argparse.Namespace, sources: list[Source]) -> int:
    return _tell(args, f"tournament {args.id}", tournament_story(sources, args.id))


def _round(args: argparse.Namespace, sources: list[Source]) -> int:
    from electric_audit.rounds import round_story

    story = round_story(sources, args.id, windows=args.uth_windows)
    return _tell(args, f"round {args.id}", story)


def _tell(args: argparse.Namespace, subject: str, story: Narrative) -> int:
    """Print a story's facts then its checks (text or JSON lines); the exit status."""
    write = sys.stdout.write
    if not story.found:
        message = f"{subject}: no events in the sources given"
        write((json.dumps({"error": message}) if args.json else message) + "\n")
        return EXIT_FAILED
    if not args.json:
        write(f"{subject}\n")
    for topic, text in story.facts:
        if args.json:
            write(json.dumps({"fact": topic, "text": text}) + "\n")
        else:
            write(f"  {topic:<9} {text}\n")
    if not args.json:
        write("checks:\n")
    ok = write_results(story.results, args.json)
    if not args.json:
        write("all checks pass\n" if ok else "SOME CHECKS FAILED\n")
    return EXIT_OK if ok else EXIT_FAILED


def _export(args: argparse.Namespace, sources: list[Source]) -> int:
    code = export.run_export(args, sources)
    if not args.validate:
        return code
    from electric_audit.validate import ValidatorMissing, validate_documents

    keep = export.HandFilter(args.tournament, args.table, args.player, args.since, args.until)
    hands = export.select_hands(sources, keep).hands
    try:
        result = validate_documents(
            hands,
            export.phhs_document(hands),
            export.pokerstars_document(hands, export.rakes_of(sources)),
        )
    except ValidatorMissing as exc:
        sys.stderr.write(f"electric-audit export --validate: {exc}\n")
        return EXIT_USAGE
    report = {
        "validated_phh": result.phh_checked,
        "validated_pokerstars": result.text_checked,
        "validation_failed": len(result.failures),
        "first_validation_failure": result.failures[0] if result.failures else None,
    }
    out = sys.stdout if args.out else sys.stderr
    if args.json:
        out.write(json.dumps(report) + "\n")
    else:
        out.write(
            f"pokerkit read back {result.phh_checked} PHH and {result.text_checked} "
            f"PokerStars-style hands, {len(result.failures)} failed\n"
        )
        if result.failures:
            out.write(f"first failure: {result.failures[0]}\n")
    return code if result.ok else EXIT_FAILED


def run(args: argparse.Namespace) -> int:
    """Run ``tournament``, ``round`` or ``export``; returns the exit status."""
    sources = sources_or_exit(args)
    if isinstance(sources, int):
        return sources
    if args.command == "tournament":
        return _tournament(args, sources)
    if args.command == "round":
        return _round(args, sources)
    return _export(args, sources)

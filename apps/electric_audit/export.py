"""``electric-audit export``: hand histories of the recorded hands, as PHH and as
PokerStars-style text.

Selection (every given criterion must hold): ``--tournament ID`` (a tournament is one table:
its id is the table id), ``--table ID``, ``--player ID`` (the player was dealt in),
``--since`` / ``--until`` (the hand's start). Only finished hands are exported.

Formats (``--format``): ``phh`` — one ``.phhs`` document, a ``[k]`` section per hand, each
with the PHH core (variant, antes, blinds, min bet, starting stacks, actions, finishing
stacks) and its metadata (hand number, table, date and time in UTC, currency, seats and
players, level, the event) plus user-defined fields (``_hand_id``, ``_tournament_id``,
``_player_ids``, ``_deck_commitment``, ``_deck_seed``); ``pokerstars`` — the hands as
PokerStars-style text (:mod:`electric_audit.pokerstars`), separated by two blank lines.
With ``--out DIR`` both go to files (``hands.phhs``, ``hands.txt``); otherwise the chosen
format goes to standard output. Every exported hand is first replayed through our engine
(:func:`electric_audit.hands.replay_hand`); a hand that does not replay to its recorded
stacks is reported and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from electric.registration.v1 import events_pb2 as rev
from electric_domain.holdem import events as he

from electric_audit.hands import Hand, all_hands, hand_phh_core, replay_hand
from electric_audit.pokerstars import pokerstars_text
from electric_audit.sources import Source

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class HandFilter:
    tournament: str | None = None
    table: str | None = None
    player: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def keeps(self, hand: Hand) -> bool:
        if self.tournament is not None and hand.table_id != self.tournament:
            return False
        if self.table is not None and hand.table_id != self.table:
            return False
        if self.player is not None and self.player not in hand.player_ids():
            return False
        if self.since is not None and hand.started_at < self.since:
            return False
        return self.until is None or hand.started_at <= self.until


def _toml_str(text: str) -> str:
    """A TOML literal string when possible, else a basic (JSON-escaped) string."""
    if "'" not in text and "\n" not in text and text.isprintable():
        return f"'{text}'"
    return json.dumps(text)


def _toml_list(values: Sequence[str | int]) -> str:
    return "[" + ", ".join(_toml_str(v) if isinstance(v, str) else str(v) for v in values) + "]"


def phh_text(hand: Hand) -> str:
    """The hand's PHH document (core + metadata + user-defined audit fields)."""
    first = hand.events[0]
    assert isinstance(first, he.HandStarted)
    cfg = first.config
    n = cfg.players
    order = [(cfg.button + 1 + k) % n for k in range(n)]
    ids = hand.player_ids()
    moment = hand.started_at
    lines = [
        hand_phh_core(hand).rstrip("\n"),
        "venue = 'Electric Poker'",
        f"event = {_toml_str('Electric Poker tournament ' + hand.table_id)}",
        f"table = {_toml_str(hand.table_name)}",
        f"hand = {hand.number}",
        f"level = {hand.started.level.level or 1}",
        f"seats = {_toml_list([hand.seats[i] for i in order])}",
        f"seat_count = {max([len(hand.roster), *hand.seats])}",
        f"day = {moment.day}",
        f"month = {moment.month}",
        f"year = {moment.year}",
        f"time = {moment.strftime('%H:%M:%S')}",
        "time_zone = 'UTC'",
        f"currency = {_toml_str(hand.currency)}",
        f"_hand_id = {_toml_str(hand.hand_id)}",
        f"_tournament_id = {_toml_str(hand.table_id)}",
        f"_player_ids = {_toml_list([ids[i] for i in order])}",
        f"_buy_in_cents = {hand.buy_in_cents}",
        f"_deck_commitment = {_toml_str(hand.started.deck_commitment)}",
    ]
    if hand.ended is not None:
        lines.append(f"_deck_seed = {_toml_str(hand.ended.deck_seed)}")
    return "\n".join(lines) + "\n"


def phhs_document(hands: Sequence[Hand]) -> str:
    """Several hands as one ``.phhs`` document (``[1]``, ``[2]``, ... sections)."""
    return "".join(f"[{k}]\n{phh_text(h)}\n" for k, h in enumerate(hands, 1))


def pokerstars_document(hands: Sequence[Hand], rakes: dict[str, int] | None = None) -> str:
    """Several hands as PokerStars-style text, separated by two blank lines."""
    rakes = rakes or {}
    return "\n\n".join(pokerstars_text(h, rake_cents=rakes.get(h.table_id)) for h in hands)


def rakes_of(sources: Sequence[Source]) -> dict[str, int]:
    """Tournament id → rake per entry (from registration's TournamentStarted, when read)."""
    name = rev.TournamentStarted.DESCRIPTOR.full_name
    rakes: dict[str, int] = {}
    for source in sources:
        for located in source.events:
            if located.envelope.event_type == name:
                started = rev.TournamentStarted()
                started.ParseFromString(located.envelope.payload.value)
                rakes[started.table_id] = started.rake.cents
    return rakes


@dataclass
class Export:
    hands: list[Hand]
    failures: list[tuple[Hand, str]]


def select_hands(sources: Sequence[Source], keep: HandFilter) -> Export:
    """The finished hands kept by ``keep``, each replayed through our engine."""
    export = Export([], [])
    for hand in all_hands(sources):
        if hand.ended is None or not keep.keeps(hand):
            continue
        verdict = replay_hand(hand)
        if verdict.ok:
            export.hands.append(hand)
        else:
            export.failures.append((hand, f"{hand.location}: {verdict.reason}"))
    return export


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tournament", help="tournament id (= its table id)")
    parser.add_argument("--table", help="table id")
    parser.add_argument("--player", help="player id (hands the player was dealt in)")
    parser.add_argument("--format", choices=("phh", "pokerstars"), default="phh")
    parser.add_argument("--out", metavar="DIR", help="write hands.phhs and hands.txt here")


def run_export(args: argparse.Namespace, sources: list[Source]) -> int:
    keep = HandFilter(args.tournament, args.table, args.player, args.since, args.until)
    export = select_hands(sources, keep)
    phh = phhs_document(export.hands)
    text = pokerstars_document(export.hands, rakes_of(sources))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "hands.phhs").write_text(phh, encoding="utf-8")
        (out / "hands.txt").write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(phh if args.format == "phh" else text)
    report: dict[str, Any] = {
        "exported": len(export.hands),
        "failed": len(export.failures),
        "first_failure": export.failures[0][1] if export.failures else None,
    }
    if args.out:
        report["files"] = [str(Path(args.out) / n) for n in ("hands.phhs", "hands.txt")]
    line = json.dumps(report) if args.json else _report_text(report)
    (sys.stdout if args.out else sys.stderr).write(line + "\n")
    return EXIT_FAILED if export.failures else EXIT_OK


def _report_text(report: dict[str, Any]) -> str:
    text = f"exported {report['exported']} hands, {report['failed']} failed to replay"
    if report["first_failure"]:
        text += f"\nfirst failure: {report['first_failure']}"
    for name in report.get("files", []):
        text += f"\nwrote {name}"
    return text

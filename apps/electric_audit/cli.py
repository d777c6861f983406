"""``electric-audit``: audit tools over the pure domain.

Subcommands:

* ``replay-phh FILE...`` — replay every hand of ``.phh``/``.phhs`` files through our engine;
  one JSON object per line: ``{"file", "index", "finishing_stacks", "error"}``. Stacks are
  in the file's own units (integers when the hand uses integers, exact decimals otherwise).
  A bad hand prints its error (naming the offending action) and the run carries on; the exit
  status is 1 if any hand failed, else 0.
* ``math {electric,thb,uth} [--json]`` — exact game math (:mod:`electric_math.audit_math`).
* ``verify-deck SEED_HEX COMMITMENT_HEX`` — check a revealed seed against its commitment and
  print the derived deck.
* ``events`` / ``verify`` — over sources given by ``--store URL`` (repeatable, read-only)
  and/or ``--kafka HOST:PORT [--namespace NS]``; see :mod:`electric_audit.commands` and
  docs/audit.md. Exit status 0 = every check passes, 1 = a check fails, 2 = usage or
  connection error.
* ``trace ID`` — the causal tree of a correlation, request or event id over the same sources
  (:mod:`electric_audit.trace`).
* ``tournament ID`` / ``round ID`` / ``export`` — a tournament's or casino round's whole
  story, each step checked, and hand histories as PHH and PokerStars-style text
  (:mod:`electric_audit.subcommands`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from electric_domain.cards import card_str
from electric_domain.deck import derive_deck, verify_deck

from electric_audit.phh_files import default_jobs, replay_file

#: The subcommands whose module is imported only when one of them runs (or its ``--help``
#: is asked): those modules load SQLAlchemy, the event log and Kafka (~0.6 s), which
#: ``replay-phh`` and ``verify-deck`` never need (issue 26: the 10,000-hand corpus replay
#: had doubled to 2.5-3.4 s). Each module registers its own parsers (``add_parsers``);
#: the help line here is what ``electric-audit --help`` shows without importing it, and a
#: test checks it is the module's own.
LAZY: dict[str, tuple[str, str]] = {
    "math": ("electric_math.audit_math", "exact game math: electric pay table, THB, UTH"),
    "events": ("electric_audit.commands", "decoded events, filtered, merged across sources"),
    "verify": ("electric_audit.commands", "run every check over the sources"),
    "trace": ("electric_audit.trace", "the causal tree of a correlation, request or event id"),
    "tournament": ("electric_audit.subcommands", "the whole story of one tournament, checked"),
    "round": ("electric_audit.subcommands", "the whole story of one THB or UTH round, checked"),
    "export": ("electric_audit.subcommands", "hand histories as PHH and PokerStars-style text"),
}


def _stack_json(v: int | Decimal) -> str:
    return str(v)  # ints and exact decimals are valid JSON numbers as printed


def _line(file: str, index: int, stacks: Sequence[int | Decimal] | None, error: str | None) -> str:
    stacks_json = "null" if stacks is None else "[" + ", ".join(map(_stack_json, stacks)) + "]"
    return (
        f'{{"file": {json.dumps(file)}, "index": {index}, '
        f'"finishing_stacks": {stacks_json}, "error": {json.dumps(error)}}}'
    )


def replay_phh(files: Sequence[str], jobs: int = 1) -> int:
    """Replay the files (a large ``.phhs`` file by ``jobs`` processes); print one JSON line
    per hand. Returns the exit status."""
    write = sys.stdout.write
    failed = False
    for name in files:
        try:
            results = list(replay_file(name, jobs=jobs))
        except (OSError, UnicodeDecodeError) as exc:
            write(_line(name, 0, None, f"cannot read file: {exc}") + "\n")
            failed = True
            continue
        for r in results:
            failed = failed or r.error is not None
            write(_line(name, r.index, r.finishing_stacks, r.error) + "\n")
    return 1 if failed else 0


def verify(seed_hex: str, commitment_hex: str) -> int:
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        print(json.dumps({"ok": False, "reason": "seed is not hex"}))
        return 1
    v = verify_deck(seed, commitment_hex)
    deck = [card_str(c) for c in derive_deck(seed)] if len(seed) == 32 else None
    print(json.dumps({"ok": v.ok, "reason": v.reason, "deck": deck}))
    return 0 if v.ok else 1


def _register(sub: Any, module: Any) -> None:
    """The module's own parsers (``add_parsers`` or ``add_parser``)."""
    add = getattr(module, "add_parsers", None) or module.add_parser
    add(sub)


def build_parser(command: str | None) -> tuple[argparse.ArgumentParser, Any]:
    """The parser, with the full parsers of ``command``'s module only (its module imported
    and returned); every other lazy subcommand is listed by name and help line."""
    parser = argparse.ArgumentParser(prog="electric-audit", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_replay = sub.add_parser("replay-phh", help="replay PHH hands through our engine")
    p_replay.add_argument("files", nargs="+", metavar="FILE")
    p_replay.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="processes for a large .phhs file (default 0: one per CPU; 1: this one only)",
    )
    p_verify = sub.add_parser("verify-deck", help="check a revealed deck seed")
    p_verify.add_argument("seed_hex")
    p_verify.add_argument("commitment_hex")
    wanted = LAZY[command][0] if command in LAZY else None
    module = importlib.import_module(wanted) if wanted else None
    if module is not None:
        _register(sub, module)
    for name, (module_name, help_line) in LAZY.items():
        if module_name != wanted:
            sub.add_parser(name, help=help_line)
    return parser, module


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args_in if not a.startswith("-")), None)
    parser, module = build_parser(command)
    args = parser.parse_args(args_in)
    if args.command == "replay-phh":
        return replay_phh(args.files, jobs=args.jobs or default_jobs())
    if args.command == "verify-deck":
        return verify(args.seed_hex, args.commitment_hex)
    assert module is not None  # a lazy command: its module was imported for the parse
    result: int = module.run(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

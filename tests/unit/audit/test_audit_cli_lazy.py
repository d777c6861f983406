"""``electric-audit`` imports a subcommand's module only when that subcommand runs (issue 26
item 7): ``replay-phh`` and ``verify-deck`` load neither SQLAlchemy, the event log nor Kafka,
and ``--help`` lists every subcommand with the help line its own module registers."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest
from electric_audit import cli

HEAVY = ("sqlalchemy", "aiokafka", "electric_eventlog", "grpc", "numpy")


def _imported_after(statement: str) -> set[str]:
    """Which of HEAVY a fresh interpreter has imported after ``statement`` (output muted)."""
    code = (
        "import sys, contextlib, io\n"
        "from electric_audit.cli import build_parser, main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    {statement}\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return set(filter(None, out.strip().split(",")))


def test_replay_and_verify_deck_import_no_store_nor_kafka() -> None:
    seed, corpus = "00" * 32, "tests/data/conformance/pluribus-10000.phhs"
    assert _imported_after(f"main(['verify-deck', {seed!r}, {'ab' * 32!r}])") == set()
    assert _imported_after(f"main(['replay-phh', {corpus!r}])") == set()
    assert _imported_after("build_parser(None)") == set()  # --help


def test_a_store_subcommand_still_loads_its_module() -> None:
    """The probe above can fail: it sees the event log once a subcommand reading stores is
    parsed."""
    assert {"sqlalchemy", "electric_eventlog"} <= _imported_after("build_parser('events')")


def test_the_help_lines_are_each_modules_own() -> None:
    for name, (module_name, help_line) in cli.LAZY.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers(dest="command")
        cli._register(sub, importlib.import_module(module_name))
        own = {a.dest: a.help for a in sub._choices_actions}
        assert own[name] == help_line, name


@pytest.mark.parametrize("command", sorted(cli.LAZY))
def test_each_lazy_command_parses_with_its_own_arguments(command: str) -> None:
    parser, module = cli.build_parser(command)
    assert module is not None and module.__name__ == cli.LAZY[command][0]
    with pytest.raises(SystemExit) as done:
        parser.parse_args([command, "--help"])
    assert done.value.code == 0

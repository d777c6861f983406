"""One tree's side of the side-by-side run, in a process of its own.

Run by the orchestrator (``run.py``) with the tree's own code first on ``PYTHONPATH``
(``python -m tools.side_by_side.worker run|replay ...``); this module and its scenarios
are the harness (taken from the checkout that runs it), everything they import from
``electric_*`` is the tree's. It writes one ``result.json`` per scenario:

* ``run``: plays the seeded scenarios on fresh SQLite stores (one per scenario), then
  dumps what was published (every outbox row as the Kafka message the relay would send:
  topic, key, the envelope, its payload as protobuf JSON), every player view, the final
  views (what each player reads at the end) and ``electric-audit``'s reports on the store.
* ``replay``: takes another run's stores (copies them) and, with this tree's code as after
  a restart, rebuilds the table service's rows from their events and compares them with
  the rows stored there (``projections.rebuild_and_compare``), reads the final views again
  at the same virtual time, and audits the store: "old streams still replay".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

from tools.side_by_side import determinism

# Before anything of the tree is imported: seeded ids, and no fallback to another checkout.
determinism.install_ids()
determinism.drop_editable_finder()

from electric_audit.cli import main as audit_main  # noqa: E402
from electric_eventlog import EventStore, create_engine, migrate, upgrade  # noqa: E402
from electric_eventlog.bus import envelope_message  # noqa: E402
from electric_eventlog.codec import envelope_from_row  # noqa: E402
from electric_eventlog.schema import events as events_table  # noqa: E402
from electric_eventlog.schema import outbox as outbox_table  # noqa: E402
from electric_platform.auth import Role  # noqa: E402
from electric_table.store import tables as table_tables  # noqa: E402
from sqlalchemy import Engine, select  # noqa: E402

from tools.side_by_side.casino import PLAYERS as CASINO_PLAYERS  # noqa: E402
from tools.side_by_side.casino import CasinoRun  # noqa: E402
from tools.side_by_side.determinism import CLOCK  # noqa: E402
from tools.side_by_side.recording import Recorder, as_json  # noqa: E402
from tools.side_by_side.tournament import AUDITOR, PLAYERS, TournamentRun  # noqa: E402

#: Every scenario starts at this virtual time (2027-01-15T08:00:00Z).
T0 = 1_800_000_000_000
DB = "table.db"


def open_store(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate(engine)
    upgrade(
        engine,
        versions_dir=table_tables.VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=table_tables.metadata,
    )
    return engine


def published(engine: Engine) -> list[dict[str, Any]]:
    """Every outbox row, in order, as the message the relay publishes."""
    store = EventStore(engine, producer="table")
    query = (
        select(outbox_table.c.topic, events_table)
        .join(events_table, events_table.c.global_position == outbox_table.c.global_position)
        .order_by(outbox_table.c.global_position, outbox_table.c.topic)
    )
    out = []
    with engine.connect() as conn:
        for row in conn.execute(query).mappings():
            env = envelope_from_row(row)
            message = envelope_message(row["topic"], env)
            envelope = as_json(env)
            envelope.pop("payload", None)
            out.append(
                {
                    "topic": message.topic,
                    "key": message.key.decode(),
                    "value": message.value.hex(),
                    "envelope": envelope,
                    "payload": as_json(store.decode(env)),
                }
            )
    return out


def audit(url: str, argv: list[str]) -> dict[str, Any]:
    """One ``electric-audit`` command over the store: exit status and output lines."""
    determinism.install_clock()  # the audit loads its commands' modules lazily
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            status = audit_main([*argv, "--store", url])
        except SystemExit as exc:  # argparse or a command that exits
            status = int(exc.code or 0)
    return {"argv": argv, "status": status, "lines": out.getvalue().splitlines()}


def audits(url: str, subjects: dict[str, list[str]]) -> list[dict[str, Any]]:
    reports = [audit(url, ["verify", "--json"])]
    for table_id in subjects.get("tournaments", []):
        reports.append(audit(url, ["tournament", table_id, "--json"]))
        for fmt in ("phh", "pokerstars"):
            reports.append(audit(url, ["export", "--tournament", table_id, "--format", fmt]))
    for round_id in subjects.get("rounds", []):
        reports.append(audit(url, ["round", round_id, "--json"]))
    return reports


async def final_tournament_views(run: TournamentRun, rec: Recorder) -> None:
    for player in PLAYERS:
        await run._get(rec, player)
    await run._get(rec, AUDITOR, Role.AUDITOR)


async def final_casino_views(run: CasinoRun, rec: Recorder, tables: list[str]) -> None:
    from electric.table.v1 import casino_pb2

    for round_id in run.rounds:
        for player in CASINO_PLAYERS:
            request = casino_pb2.GetRoundRequest(round_id=round_id)
            await rec.call(player, "GetRound", run.api.GetRound, request)
        await run._round_views(rec, round_id, AUDITOR)
    for table_id in tables:
        get = casino_pb2.GetCasinoTableRequest(table_id=table_id)
        for player in CASINO_PLAYERS:
            await rec.call(player, "GetCasinoTable", run.api.GetCasinoTable, get)


def scenario_names(args: argparse.Namespace) -> list[str]:
    return (
        [f"tournament-{i}" for i in range(args.tournaments)]
        + [f"thb-{i}" for i in range(args.thb_sets)]
        + [f"uth-{i}" for i in range(args.uth_tables)]
    )


async def play(name: str, engine: Engine, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario; its views and what the audit should look at."""
    kind, index = name.split("-")
    rec, final = Recorder(), Recorder()
    subjects: dict[str, list[str]] = {"tournaments": [], "rounds": [], "uth_tables": []}
    if kind == "tournament":
        t = TournamentRun(engine, args.seed, int(index), perturb=args.perturb)
        await t.play(engine, rec)
        await final_tournament_views(t, final)
        subjects["tournaments"].append(t.table_id)
    else:
        c = CasinoRun(engine, args.seed, int(index), perturb=args.perturb)
        try:
            if kind == "thb":
                await c.play_thb(rec, args.thb_rounds)
            else:
                await c.play_uth(rec, args.uth_rounds)
                subjects["uth_tables"].append(f"uth-{args.seed * 100 + int(index)}")
            await final_casino_views(c, final, subjects["uth_tables"])
        finally:
            await c.close()
        subjects["rounds"] = list(c.rounds)
    return {"views": rec.views, "final": final.views, "subjects": subjects, "clock": CLOCK.now}


def run(args: argparse.Namespace) -> None:
    for name in scenario_names(args):
        folder = Path(args.out) / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        determinism.IDS.reseed(args.seed, name)
        CLOCK.now = T0
        engine = open_store(folder / DB)
        determinism.install_clock()  # the tree's modules are loaded by now
        determinism.check_origins(*args.roots)
        result = asyncio.run(play(name, engine, args))
        engine.dispose()
        result["published"] = published(create_engine(f"sqlite:///{folder / DB}"))
        result["audits"] = audits(f"sqlite:///{folder / DB}", result["subjects"])
        (folder / "result.json").write_text(json.dumps(result))
        print(f"{name} done", flush=True)


async def replay_final(name: str, engine: Engine, old: dict[str, Any]) -> list[dict[str, Any]]:
    """The final views read again by this tree from the other tree's store."""
    kind, index = name.split("-")
    seed = int(old["seed"])
    final = Recorder()
    if kind == "tournament":
        t = TournamentRun(engine, seed, int(index), perturb=False)
        try:
            await final_tournament_views(t, final)
        finally:
            t.stopping.set()
            await t.manager.close()
    else:
        c = CasinoRun(engine, seed, int(index), perturb=False)
        c.rounds = list(old["subjects"]["rounds"])
        try:
            await final_casino_views(c, final, old["subjects"]["uth_tables"])
        finally:
            await c.close()
    return final.views


def rebuild_and_compare(engine: Engine, store: EventStore) -> list[str]:
    """The tree's own check of its rows against a fold of the events (the module moved from
    ``store/projections.py`` to ``projections.py`` in issue 25 item 5)."""
    try:
        from electric_table import projections
    except ImportError:
        from electric_table.store import projections  # type: ignore[attr-defined,no-redef]
    differences: list[str] = projections.rebuild_and_compare(engine, store)
    return differences


def replay(args: argparse.Namespace) -> None:
    for name in scenario_names(args):
        source = Path(args.source) / name
        folder = Path(args.out) / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copyfile(source / DB, folder / DB)
        old = json.loads((source / "result.json").read_text())
        old["seed"] = args.seed
        determinism.IDS.reseed(args.seed, name, "replay")
        CLOCK.now = int(old["clock"])
        engine = open_store(folder / DB)  # this tree's migrations over the old schema
        store = EventStore(engine, producer="table")
        rows = rebuild_and_compare(engine, store)
        determinism.install_clock()
        determinism.check_origins(*args.roots)
        final = asyncio.run(replay_final(name, engine, old))
        engine.dispose()
        result = {
            "row_differences": rows,
            "final": final,
            "audits": audits(f"sqlite:///{folder / DB}", old["subjects"]),
        }
        (folder / "result.json").write_text(json.dumps(result))
        print(f"{name} replayed", flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.side_by_side.worker")
    p.add_argument("mode", choices=["run", "replay"])
    p.add_argument("--out", required=True, help="folder of the scenarios' stores and results")
    p.add_argument("--source", help="replay: the other run's --out")
    p.add_argument("--roots", nargs="+", required=True, help="where this tree's code lives")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tournaments", type=int, default=1)
    p.add_argument("--thb-sets", type=int, default=1, help="THB tables (players take turns)")
    p.add_argument("--thb-rounds", type=int, default=6, help="rounds per THB table")
    p.add_argument("--uth-tables", type=int, default=1)
    p.add_argument("--uth-rounds", type=int, default=3, help="rounds per UTH table")
    p.add_argument("--perturb", action="store_true", help="inject a difference (a deck seed)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.disable(logging.INFO)  # the services' info lines are not results
    if args.mode == "run":
        run(args)
    else:
        replay(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

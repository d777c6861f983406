"""electric-audit export of real ante and Electric Mode hands: bots play tournaments on the
embedded platform (four services, SQLite) with blind levels of LEVEL_MS, so the antes of
level 3 and Electric Mode (after the last level) come within a couple of seconds; every hand
is exported (PHH + PokerStars-style text) and ``--validate`` reads both back with pokerkit
(PHH replayed to the recorded stacks, every PokerStars hand parsed and replayed); the files
are checked again with pokerkit directly, and ``tournament ID`` passes its ``hands`` check.

``ELECTRIC_AUDIT_LEVEL_TOURNAMENTS`` (default 2) sets how many tournaments: ``make
audit-levels`` plays more."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from electric.table.v1 import events_pb2 as tev
from electric_audit.cli import main
from electric_audit.sources import read_store
from electric_audit.validate import ante_parser
from electric_domain.tournament import default_config
from electric_registration.app import setup as registration_setup
from electric_runner.app import service_setups
from pokerkit.notation import HandHistory

from tests.support import platform_kit
from tests.support.platform_kit import embedded_platform

TOURNAMENTS = int(os.environ.get("ELECTRIC_AUDIT_LEVEL_TOURNAMENTS", "2"))
pytestmark = pytest.mark.timeout(300 + 60 * TOURNAMENTS)

#: Short enough that level 3 (antes) and Electric Mode come within the first hands.
LEVEL_MS = 500


def _setups() -> dict[str, Any]:
    setups = dict(service_setups())
    config = dataclasses.replace(default_config(), level_duration_ms=LEVEL_MS)
    setups["registration"] = functools.partial(registration_setup, config=config)
    return setups


async def _play(tmp_path: Path) -> dict[str, str]:
    async with embedded_platform(tmp_path) as platform:
        runner = platform.bot_runner(
            seed=14, player_prefix="lv", until_finished=TOURNAMENTS, mix=(("tag", 1),)
        )  # tight players: long enough tournaments to reach the antes
        stats = await asyncio.wait_for(runner.run(), timeout=120 + 60 * TOURNAMENTS)
        assert len(stats.tables_finished) >= TOURNAMENTS and not stats.errors, stats
        await asyncio.sleep(1.0)  # the last prize credit (not needed by `hands`)
        return dict(platform.db_urls)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(platform_kit, "service_setups", _setups)
        return asyncio.run(_play(tmp_path_factory.mktemp("levels")))


def _started(url: str) -> list[tev.HandStarted]:
    out = []
    for x in read_store(url).events:
        if x.envelope.event_type.endswith(".HandStarted"):
            m = tev.HandStarted()
            m.ParseFromString(x.envelope.payload.value)
            out.append(m)
    return out


def test_ante_and_electric_mode_hands_export_and_validate(
    run: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = _started(run["table"])
    antes = [h for h in started if h.level.ante > 0]
    electric = [h for h in started if h.electric_mode]
    with capsys.disabled():
        print(f"\n{len(started)} hands: {len(antes)} with antes, {len(electric)} in Electric Mode")
    assert antes and electric, (len(started), len(antes), len(electric))
    stores = ["--store", run["table"], "--store", run["registration"]]
    out = tmp_path / "export"
    code = main(["export", *stores, "--out", str(out), "--validate", "--json"])
    report = {
        k: v for line in capsys.readouterr().out.splitlines() for k, v in json.loads(line).items()
    }
    assert code == 0, report
    ended = sum(
        1 for x in read_store(run["table"]).events if x.envelope.event_type.endswith(".HandEnded")
    )
    assert report["exported"] == report["validated_phh"] == report["validated_pokerstars"] == ended
    assert report["validation_failed"] == 0
    # the files, read with pokerkit directly: every PHH hand replays to its finishing stacks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phh = list(HandHistory.loads_all((out / "hands.phhs").read_text()))
        assert len(phh) == ended
        for hh in phh:
            assert list(list(hh)[-1].stacks) == list(hh.finishing_stacks)
        assert sum(1 for hh in phh if any(hh.antes)) == len(antes)
        text = list(ante_parser()((out / "hands.txt").read_text(), error_status=True))
        assert len(text) == ended


def test_the_tournaments_replay_hand_by_hand(
    run: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    finished = [
        x.envelope.stream_id.removeprefix("table-")
        for x in read_store(run["table"]).events
        if x.envelope.event_type.endswith(".TournamentFinished")
    ]
    assert len(finished) >= TOURNAMENTS
    stores = [a for s in ("registration", "table", "wallet", "payout") for a in ("--store", run[s])]
    for tid in finished:
        main(["tournament", tid, *stores, "--json"])
        checks = {
            x["check"]: x
            for x in map(json.loads, capsys.readouterr().out.splitlines())
            if "check" in x
        }
        for name in ("chains", "decks", "hands"):
            assert checks[name]["failed"] == 0 and checks[name]["checked"] >= 1, (name, checks)

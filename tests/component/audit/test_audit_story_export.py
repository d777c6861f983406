"""electric-audit tournament / round / export over the four stores of a real run: bots play
tournaments and THB rounds on the embedded platform (four services, SQLite), then:

* ``tournament ID`` tells each finished tournament's story with every check exercised and
  passing; a prize transfer deleted from a copy of the wallet database is reported;
* ``round ID`` does the same for every THB round; a payout credit deleted from a copy of the
  payout database is reported;
* ``export --validate`` exports every hand, pokerkit replays every PHH hand to the recorded
  stacks and reads every PokerStars-style hand (checked here too, straight from the files).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import time
import warnings
from pathlib import Path

import pytest
from electric_audit.cli import main
from electric_audit.sources import read_store
from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from pokerkit.notation import HandHistory
from sqlalchemy.engine import make_url

from tests.support.casino_setup import reservations_closed
from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(420)

SERVICES = ("registration", "table", "wallet", "payout")


def _count(url: str, *types: str) -> dict[str, int]:
    counts = dict.fromkeys(types, 0)
    for located in read_store(url).events:
        name = located.envelope.event_type.rsplit(".", 1)[-1]
        if name in counts:
            counts[name] += 1
    return counts


async def _settled(urls: dict[str, str], deadline: float) -> None:
    """Until payout credited every prize and casino win it owes and the wallet closed every
    reservation (the table posts or voids each bet after the round, in the background)."""
    while time.monotonic() < deadline:
        c = _count(
            urls["payout"], "PrizeAwarded", "PrizeCredited", "CasinoWinOwed", "CasinoWinCredited"
        )
        credited = (c["PrizeAwarded"], c["CasinoWinOwed"]) == (
            c["PrizeCredited"],
            c["CasinoWinCredited"],
        )
        if credited and reservations_closed(urls["wallet"]):
            return
        await asyncio.sleep(0.3)
    raise AssertionError("payout did not credit everything it owes")


async def _play(tmp_path: Path) -> dict[str, str]:
    async with embedded_platform(tmp_path) as platform:
        targets = platform.bot_targets
        poker = platform.bot_runner(bots=6, until_finished=2, seed=11, player_prefix="story")
        stats = await asyncio.wait_for(poker.run(), timeout=240)
        assert len(stats.tables_finished) >= 2 and not stats.errors, stats
        casino = CasinoRunner(
            CasinoRunnerConfig(
                targets=targets, key=platform.issuer_key, thb_bots=2, thb_rounds=8,
                player_prefix="story-casino",
            )
        )  # fmt: skip
        cstats = await asyncio.wait_for(casino.run(), timeout=120)
        assert cstats.games["thb"].rounds == 8 and not cstats.errors, cstats
        await _settled(dict(platform.db_urls), time.monotonic() + 60)
        return dict(platform.db_urls)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return asyncio.run(_play(tmp_path_factory.mktemp("story")))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, object]]]:
    code = main([*argv, "--json"])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _stores(urls: dict[str, str]) -> list[str]:
    return [arg for name in SERVICES for arg in ("--store", urls[name])]


def _ids(urls: dict[str, str], event_type: str) -> list[str]:
    """The ids in the stream ids (``table-<id>``, ``casino-<id>``) of one event type."""
    ids = []
    for located in read_store(urls["table"]).events:
        if located.envelope.event_type.endswith("." + event_type):
            ids.append(located.envelope.stream_id.split("-", 1)[1])
    assert ids, event_type
    return ids


def test_tournament_story_of_every_finished_tournament(
    run: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    for tid in _ids(run, "TournamentFinished"):
        code, lines = _cli(capsys, "tournament", tid, *_stores(run))
        checks = {str(x["check"]): x for x in lines if "check" in x}
        facts = [x for x in lines if "fact" in x]
        assert code == 0, checks
        assert list(checks) == [
            "chains", "entries", "buy-ins", "multiplier", "decks", "hands", "prizes", "payouts",
        ]  # fmt: skip
        for name, result in checks.items():
            assert result["failed"] == 0 and int(str(result["checked"])) >= 1, (name, result)
        assert checks["decks"]["checked"] == checks["hands"]["checked"]
        assert {x["fact"] for x in facts} >= {"opened", "entry", "filled", "hand", "place"}

    code, lines = _cli(capsys, "tournament", "no-such-tournament", *_stores(run))
    assert code == 1 and "error" in lines[0]


def test_tournament_story_reports_a_missing_prize_transfer(
    run: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = _ids(run, "TournamentFinished")[0]
    copy = tmp_path / "wallet.db"
    shutil.copy(str(make_url(run["wallet"]).database), copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:  # foreign keys off
        gone = conn.execute(
            "DELETE FROM eventlog_events WHERE stream_id LIKE ?",
            (f"wallet-transfer-prize-{tid}-%",),
        ).rowcount
    assert gone >= 1
    stores = {**run, "wallet": f"sqlite:///{copy}"}
    code, lines = _cli(capsys, "tournament", tid, *_stores(stores))
    checks = {str(x["check"]): x for x in lines if "check" in x}
    assert code == 1
    assert checks["payouts"]["failed"] == 1, checks["payouts"]
    assert "0 wallet postings, not 1" in str(checks["payouts"]["first_failure"])


def test_round_story_of_every_thb_round(
    run: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rounds = _ids(run, "CasinoRoundSettled")
    assert len(rounds) == 8
    credited = 0
    for rid in rounds:
        code, lines = _cli(capsys, "round", rid, *_stores(run))
        checks = {str(x["check"]): x for x in lines if "check" in x}
        assert code == 0, checks
        assert list(checks) == ["chains", "deck", "domain", "settlement", "bets", "payouts"]
        for name in ("chains", "deck", "domain", "settlement", "bets"):
            assert checks[name]["failed"] == 0 and int(str(checks[name]["checked"])) >= 1, name
        credited += int(str(checks["payouts"]["checked"]))
    assert credited >= 1  # some round won something


def test_round_story_reports_a_win_never_credited(
    run: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "payout.db"
    shutil.copy(str(make_url(run["payout"]).database), copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:  # foreign keys off
        event_id, stream_id = conn.execute(
            "SELECT event_id, stream_id FROM eventlog_events "
            "WHERE event_type LIKE '%.CasinoWinCredited' LIMIT 1"
        ).fetchone()
        conn.execute("DELETE FROM eventlog_events WHERE event_id = ?", (event_id,))
    rid = str(stream_id).removeprefix("payout-casino-")
    code, lines = _cli(capsys, "round", rid, *_stores({**run, "payout": f"sqlite:///{copy}"}))
    checks = {str(x["check"]): x for x in lines if "check" in x}
    assert code == 1 and checks["payouts"]["failed"] == 1
    assert "credited 0 times, not once" in str(checks["payouts"]["first_failure"])


def test_export_every_hand_and_validate_both_formats(
    run: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "export"
    code, lines = _cli(capsys, "export", *_stores(run), "--out", str(out), "--validate")
    report = {k: v for line in lines for k, v in line.items()}
    hands = _count(run["table"], "HandEnded")["HandEnded"]
    assert code == 0, report
    assert report["exported"] == report["validated_phh"] == report["validated_pokerstars"] == hands
    assert report["failed"] == report["validation_failed"] == 0

    # Straight from the files, with pokerkit alone: every PHH hand replays to its stacks.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = list(HandHistory.loads_all((out / "hands.phhs").read_text(encoding="utf-8")))
        assert len(read) == hands
        for hh in read:
            assert list(list(hh)[-1].stacks) == list(hh.finishing_stacks)
    text = (out / "hands.txt").read_text(encoding="utf-8")
    assert text.count("PokerStars Hand #") == hands

    # Per player: exactly the hands the player was dealt in.
    player = "story-1"
    mine = tmp_path / "mine"
    code, lines = _cli(capsys, "export", *_stores(run), "--player", player, "--out", str(mine))
    report = {k: v for line in lines for k, v in line.items()}
    assert code == 0 and report["exported"] == text.count(f"Dealt to {player} [") > 0

"""A person plays every game through the web page, in headless Chromium (issue 27).

``make run`` (the runner, as a child process, on free ports) serves the page through the
browser edge. One page signs in, sees the bots' running tables in the lobby, plays a whole
Electric Poker tournament against two bots, one THB round (reloading the page in the middle,
which must come back to the same round) and two live UTH rounds, all by clicking. What the
screen shows is checked against the run's own stores: the stacks and the pot against the
table's events, the place and prize against its TournamentFinished, the casino results
against the settled rounds, and the balance against the wallet's ledger. Screenshots go to
``var/test-artifacts/web/`` (``ELECTRIC_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import events_pb2 as tev
from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.support.web_browser import ARTIFACTS, RunProcess, Stores, chromium

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

PLAYER = "ada"
#: The issue's bound: the page shows a running table within 10 s of being opened.
RUNNING_TABLE_SECONDS = 10.0
#: Generous bounds: a loaded 2-core machine runs this beside Chromium and 15 bots.
TOURNAMENT_SECONDS = 300.0
STEP_MS = 250
#: UTH windows long enough to click through under load (the table's own settings).
UTH_ENV = {
    "ELECTRIC_TABLE_UTH_GREEN_MS": "9000",
    "ELECTRIC_TABLE_UTH_YELLOW_MS": "2000",
    "ELECTRIC_TABLE_UTH_DECISION_MS": "9000",
}
T = TypeVar("T")


def tid(name: str) -> str:
    return f"[data-testid={name}]"


def attr(page: Page, name: str, attribute: str) -> str:
    return page.locator(tid(name)).first.get_attribute(attribute) or ""


def tap(button: Locator) -> bool:
    """Click, unless the button went meanwhile (the turn or the window moved on): the caller's
    loop looks again."""
    try:
        button.click(timeout=3000)
    except PlaywrightTimeout:
        return False
    return True


def until(what: str, probe: Callable[[], T | None], seconds: float, page: Page) -> T:
    """Poll ``probe`` until it returns something, driving the page's clock in between."""
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got is not None and got is not False:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(STEP_MS)


class Screens:
    """The run, its stores, the page and where its screenshots go."""

    def __init__(self, page: Page, stores: Stores, shots: Path) -> None:
        self.page, self.stores, self.shots = page, stores, shots

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def visible(self, name: str) -> bool:
        return self.page.locator(tid(name)).count() > 0

    def balance_matches_the_wallet(self, seconds: float = 30) -> int:
        """The header's balance equals the wallet's ledger (the page polls every 3 s)."""

        def same() -> int | None:
            shown = attr(self.page, "balance", "data-available-cents")
            stored = self.stores.balance(PLAYER)["balance"]
            return stored if shown and int(shown) == stored else None

        return until("the balance to match the wallet", same, seconds, self.page)

    # -- Electric Poker ------------------------------------------------------------------

    def check_table_against_store(self) -> tuple[int, int]:
        """At my turn (the table waits for me, so nothing moves): every seat's stack and the
        pot on screen against the table's events. Returns (hand, pot)."""
        page = self.page
        table_id = attr(page, "table", "data-table-id")
        hand = int(attr(page, "table", "data-hand-no"))
        seat = int(attr(page, "table", "data-your-seat"))
        events = [m for _, m in self.stores.events("table", f"table-{table_id}")]
        progress = [m for m in events if isinstance(m, tev.TableProgress)][-1]
        assert (progress.hand_number, progress.turn_seat) == (hand, seat), progress
        started = [m for m in events if isinstance(m, tev.HandStarted)][-1]
        assert started.hand_number == hand
        stored = {s.seat: s.stack for s in progress.stacks}
        shown = {
            int(el.get_attribute("data-seat") or 0): int(el.get_attribute("data-stack") or 0)
            for el in page.locator(tid("seat")).all()
        }
        assert shown == stored, (shown, stored)
        pot = sum(s.stack for s in started.stacks) - sum(stored.values())
        assert int(attr(page, "pot", "data-total")) == pot
        return hand, pot

    def play_tournament(self) -> tuple[int, int]:
        """Register at the first tier, open the table and play it out: (place, prize)."""
        page = self.page
        tier = page.locator(tid("tier")).first
        tier_id = tier.get_attribute("data-tier-id")
        tier.locator(tid("register")).click()
        row = page.locator(f"{tid('mytable')}[data-status=running]").first
        until("my table to start", lambda: row.count() > 0 or None, 120, page)
        row.click()
        until("the table", lambda: self.visible("table") or None, 30, page)
        checked = 0
        deadline = time.monotonic() + TOURNAMENT_SECONDS
        while not self.visible("finish"):
            assert time.monotonic() < deadline, "the tournament did not end"
            buttons = page.locator(",".join(tid(f"action-{a}") for a in ("allin", "call", "check")))
            if buttons.count() == 0:
                page.wait_for_timeout(STEP_MS)
                continue
            if checked < 2:
                hand, pot = self.check_table_against_store()
                checked += 1
                if checked == 1:
                    self.shot("2-electric-table-mid-hand")
                    print(f"mid-hand check: hand {hand}, pot {pot}, tier {tier_id}")
            for name in ("allin", "call", "check"):
                button = page.locator(tid(f"action-{name}"))
                if button.count():
                    tap(button.first)
                    break
            # The buttons go when the snapshot after my act arrives.
            page.wait_for_timeout(STEP_MS)
        assert checked >= 1, "never my turn with the table waiting"
        place = int(attr(page, "finish", "data-place"))
        prize = int(attr(page, "finish", "data-prize-cents") or 0)
        self.shot("3-electric-finish")
        table_id = attr(page, "table", "data-table-id")
        [finished] = [
            m
            for _, m in self.stores.events("table", f"table-{table_id}")
            if isinstance(m, tev.TournamentFinished)
        ]
        [mine] = [p for p in finished.places if p.player_id == PLAYER]
        assert (place, prize) == (mine.place, mine.prize.cents)
        shown = {
            li.get_attribute("data-player"): int(li.get_attribute("data-prize-cents") or 0)
            for li in page.locator(f"{tid('finish')} li[data-player]").all()
        }
        assert shown == {p.player_id: p.prize.cents for p in finished.places}
        return place, prize

    # -- casino --------------------------------------------------------------------------

    def settled(self, kind: type[Any], round_id: str) -> list[Any]:
        return [
            m
            for _, m in self.stores.events("table")
            if isinstance(m, kind) and m.round_id == round_id
        ]

    def play_thb(self) -> None:
        """One THB round: ante, deal, reload (resume), decide to the end, the result."""
        page = self.page
        page.locator(tid("casino-thb")).first.click()
        until("the THB table", lambda: self.visible("thb-deal") or None, 30, page)
        page.locator(tid("thb-deal")).click()
        round_id = until(
            "a THB round", lambda: attr(page, "thb", "data-round-id") or None, 30, page
        )
        page.reload()
        until(
            "the same round after a reload",
            lambda: attr(page, "thb", "data-round-id") == round_id or None,
            30,
            page,
        )
        while not self.visible("thb-result"):
            for option in ("call_flop", "check"):
                button = page.locator(tid(f"thb-decide-{option}"))
                if button.count():
                    tap(button.first)
                    break
            page.wait_for_timeout(STEP_MS)
        self.shot("4-thb-result")
        [settled] = self.settled(cev.CasinoRoundSettled, round_id)
        [mine] = [p for p in settled.players if p.player_id == PLAYER]
        returned = sum(r.returned_cents for r in mine.results)
        staked = sum(r.stake_cents for r in mine.results)
        assert int(attr(page, "thb-result", "data-payout-cents")) == returned
        assert int(attr(page, "thb-result", "data-net-cents")) == returned - staked
        page.locator(tid("thb-ack")).click()

    def uth_round(self, first: bool) -> None:
        """One UTH round: bets (chips onto Ante and Trips, or Repeat), decisions, result."""
        page = self.page
        last_result = (
            attr(page, "uth-result", "data-round-id") if self.visible("uth-result") else ""
        )

        def betting_opened() -> str | None:
            if attr(page, "uth-light", "data-state") != "green":
                return None
            round_id = attr(page, "uth", "data-round-id")
            return round_id if round_id and round_id != last_result else None

        round_id = until("a UTH betting window", betting_opened, 90, page)
        if first:
            chip = page.locator(tid("uth-chip")).first
            chip.click()
            page.locator(tid("uth-spot-ante")).click()
            chip.click()
            page.locator(tid("uth-spot-trips")).click()
            page.locator(tid("uth-place")).click()
        else:
            # Round 2 is the page's own: Repeat, and auto-check with auto-fold answer every
            # window (pre-flop and flop checks, the river fold) without a click.
            page.locator(tid("uth-repeat")).click()
            page.locator(tid("uth-auto-check")).check()
            page.locator(tid("uth-auto-fold")).check()
        until(
            "my bets on the table",
            lambda: int(attr(page, "uth-spot-ante", "data-cents") or 0) > 0 or None,
            30,
            page,
        )

        def result_shown() -> bool:
            shown = self.visible("uth-result")
            return shown and attr(page, "uth-result", "data-round-id") == round_id

        decided = False
        while not result_shown():
            if first:
                decisions = {
                    name: page.locator(tid(f"uth-decide-{name}")) for name in ("check", "1x")
                }
                if not decided and decisions["check"].count():
                    self.shot("5-uth-decision")
                for name in ("check", "1x"):
                    if decisions[name].count() and tap(decisions[name].first):
                        decided = True
                        break
            page.wait_for_timeout(STEP_MS)
        if not first:
            made = [
                (m.street, m.decision, m.timed_out)
                for m in self.settled(cev.CasinoDecisionMade, round_id)
                if m.player_id == PLAYER
            ]
            # Answered by the page at once, not by the table's clock at each deadline.
            assert made and all(not timed_out for _, _, timed_out in made), made
            assert {d for _, d, _ in made} <= {"check", "fold"}, made
        game_no = attr(page, "uth-result", "data-game-no")
        [started] = self.settled(cev.CasinoRoundStarted, round_id)
        assert game_no == started.game_number
        seats = [s for s in self.settled(cev.CasinoSeatSettled, round_id) if s.player_id == PLAYER]
        assert len(seats) == 1, seats
        returned = sum(r.returned_cents for r in seats[0].results)
        staked = sum(r.stake_cents for r in seats[0].results)
        assert int(attr(page, "uth-result", "data-payout-cents")) == returned
        assert int(attr(page, "uth-result", "data-net-cents")) == returned - staked
        assert {r.spot for r in seats[0].results} >= {"ante", "blind", "trips"}
        print(f"UTH game {game_no}: staked {staked}, returned {returned}")


def test_a_person_plays_every_game_through_the_page(tmp_path: Path) -> None:
    shots = ARTIFACTS / "web"
    shots.mkdir(parents=True, exist_ok=True)
    run = RunProcess(
        tmp_path / "var",
        (
            *("--free-ports", "--web-port", "0", "--refresh", "5"),
            *("--bots", "9", "--thb-bots", "1", "--uth-bots", "2"),
        ),
        env=UTH_ENV,
    )
    run.start()
    stores = Stores(tmp_path / "var")
    try:
        url = run.url()
        printed = time.monotonic()
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            screens = Screens(page, stores, shots)
            opened = time.monotonic()
            page.goto(url)
            page.locator(tid("signin-player")).fill(PLAYER)
            page.locator(tid("signin-submit")).click()
            until("the lobby", lambda: screens.visible("lobby") or None, 30, page)
            assert page.locator(tid("whoami")).inner_text().strip().endswith(PLAYER)
            # The bots' tables are on the lobby, to watch.
            until(
                "a running table in the lobby",
                lambda: screens.visible("running-table") or None,
                RUNNING_TABLE_SECONDS,
                page,
            )
            seen = time.monotonic()
            print(
                f"a running table shown {seen - opened:.1f} s after the page opened, "
                f"{seen - printed:.1f} s after the URL was printed"
            )
            start = screens.balance_matches_the_wallet()
            assert start == 100_000, "the development bankroll"
            screens.shot("1-lobby")
            place, prize = screens.play_tournament()
            print(f"tournament: place {place}, prize {prize} cents")
            page.goto(url + "#/lobby")
            screens.balance_matches_the_wallet(60)
            screens.play_thb()
            page.goto(url + "#/lobby")
            page.locator(tid("casino-uth")).first.click()
            screens.uth_round(first=True)
            screens.uth_round(first=False)
            page.goto(url + "#/lobby")
            screens.balance_matches_the_wallet(60)
            assert page.locator(tid("status")).get_attribute("data-code") in (None, "")
    finally:
        stores.close()
        code = run.stop()
    assert code == 0, run.output()

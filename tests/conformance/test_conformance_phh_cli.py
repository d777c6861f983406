"""PHH import/export and the ``electric-audit replay-phh`` console script end to end."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from electric_domain.holdem import HoldemHand
from electric_domain.phh import replay_text, to_phh

HAND_INT = """variant = 'NT'
ante_trimming_status = true
antes = [0, 0, 0]
blinds_or_straddles = [50, 100, 0]
min_bet = 100
starting_stacks = [10000, 10000, 10000]
actions = ['d dh p1 AsAd', 'd dh p2 KsKd', 'd dh p3 7c2d', 'p3 f', 'p1 cbr 300', 'p2 cc', \
'd db 2c7d9h', 'p1 cbr 400', 'p2 cc', 'd db Jc', 'p1 cc', 'p2 cc', 'd db 3s', 'p1 cc', \
'p2 cc', 'p1 sm AsAd', 'p2 sm']
finishing_stacks = [10700, 9300, 10000]
"""

# decimal amounts, heads-up (p1 = big blind, p2 = button posts the small blind), unknown
# cards of a player whose cards never matter
HAND_DEC = """variant = 'NT'
antes = [0.00, 0.00]
blinds_or_straddles = [0.25, 0.50]
min_bet = 0.50
starting_stacks = [20.00, 13.37]
actions = ['d dh p1 ????', 'd dh p2 AhKh', 'p2 cbr 1.25', 'p1 cbr 3.75', 'p2 cc', \
'd db 2c7d9h', 'p1 cbr 2.1', 'p2 f']
"""

HAND_BAD = """variant = 'NT'
antes = [0, 0, 0]
blinds_or_straddles = [1, 2, 0]
min_bet = 2
starting_stacks = [200, 200, 200]
actions = ['d dh p1 AsAd', 'd dh p2 KsKd', 'd dh p3 7c2d', 'p3 cbr 3', 'p1 f']
"""


def _phhs(*hands: str) -> str:
    return "\n".join(f"[{i}]\n{h}" for i, h in enumerate(hands, 1))


def test_replay_int_decimal_heads_up_and_unknown_cards() -> None:
    results = list(replay_text(_phhs(HAND_INT, HAND_DEC, HAND_BAD), multi=True))
    assert results[0].error is None and results[0].finishing_stacks == (10700, 9300, 10000)
    assert results[1].error is None
    # p2 (button, small blind) opens to 1.25, p1 re-raises to 3.75, p2 calls; p2 folds the
    # flop: p1 wins 3.75 from p2
    assert results[1].finishing_stacks == (Decimal("23.75"), Decimal("9.62"))
    assert results[2].finishing_stacks is None
    assert results[2].error is not None and "'p3 cbr 3'" in results[2].error
    assert "minimum of 4" in results[2].error


def test_outcome_depending_on_unknown_cards_is_an_error() -> None:
    hand = HAND_INT.replace("'d dh p2 KsKd'", "'d dh p2 ????'").replace("'p2 sm'", "'p2 sm'")
    (r,) = replay_text(hand, multi=False)
    # p2 mucks after p1 shows: a forfeit the record cannot check; AA wins
    assert r.error is None and r.finishing_stacks == (10700, 9300, 10000)
    hand2 = hand.replace(", 'p1 sm AsAd', 'p2 sm'", "")
    (r2,) = replay_text(hand2, multi=False)
    assert r2.error is not None and "unknown" in r2.error


def test_export_round_trip_random_hands() -> None:
    rng = random.Random(5)
    for k in range(200):
        n = rng.randint(2, 6)
        stacks = [rng.choice((15, 60, 400, 2000)) for _ in range(n)]
        h = HoldemHand.start(
            stacks, rng.randrange(n), 5, 10, rng.choice((0, 2)), seed=bytes([k]) * 32
        )
        while not h.is_complete:
            la = h.legal_actions()
            assert la is not None
            r = rng.random()
            if la.can_raise and r < 0.3:
                h.raise_to(la.min_raise_to) if not la.is_bet else h.bet(la.min_raise_to)
            elif la.can_raise and r < 0.4:
                h.all_in()
            elif la.can_fold and r < 0.5:
                h.fold()
            else:
                h.check() if la.can_check else h.call()
        text = to_phh(h.events)
        (res,) = replay_text(text, multi=False)
        assert res.error is None, (k, res.error, text)
        order = [(h.config.button + 1 + j) % n for j in range(n)]
        assert list(res.finishing_stacks or ()) == [h.stacks[i] for i in order]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("electric-audit")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "electric_audit.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, check=False)


def test_cli_replay_phh_end_to_end(tmp_path: Path) -> None:
    many = tmp_path / "small.phhs"
    many.write_text(_phhs(HAND_INT, HAND_DEC, HAND_BAD, HAND_INT), encoding="utf-8")
    single = tmp_path / "one.phh"
    single.write_text(HAND_INT, encoding="utf-8")
    broken = tmp_path / "broken.phh"
    broken.write_text("variant = 'NT'\nactions = [\n", encoding="utf-8")
    proc = _cli("replay-phh", str(many), str(single), str(broken))
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(x["file"], x["index"]) for x in lines] == [
        (str(many), 1),
        (str(many), 2),
        (str(many), 3),
        (str(many), 4),
        (str(single), 1),
        (str(broken), 1),
    ]
    assert lines[0] == {
        "file": str(many),
        "index": 1,
        "finishing_stacks": [10700, 9300, 10000],
        "error": None,
    }
    assert '"finishing_stacks": [23.75, 9.62]' in proc.stdout.splitlines()[1]
    assert lines[2]["finishing_stacks"] is None and "'p3 cbr 3'" in lines[2]["error"]
    assert lines[3]["error"] is None and lines[4]["error"] is None
    assert lines[5]["error"] and lines[5]["finishing_stacks"] is None
    assert proc.returncode == 1  # some hands failed


def test_cli_all_good_exit_zero(tmp_path: Path) -> None:
    f = tmp_path / "ok.phhs"
    f.write_text(_phhs(HAND_INT, HAND_DEC), encoding="utf-8")
    proc = _cli("replay-phh", str(f))
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 2


def test_multiline_toml_falls_back_to_tomllib_and_keeps_decimals_exact() -> None:
    hand = """# a hand written by hand
variant = "NT"
antes = [0.01, 0.01, 0.01]
blinds_or_straddles = [0.05, 0.10, 0]
min_bet = 0.10
starting_stacks = [1.00, 2.00, 0.30]
actions = [
  "d dh p1 AsAd",  # aces
  "d dh p2 KsKd",
  "d dh p3 QsQd",
  "p3 cbr 0.29",
  "p1 cbr 0.99",
  "p2 cc",
  "d db 2c7d9h",
  "d db Jc",
  "d db 3s",
]
"""
    (r,) = replay_text(hand, multi=False)
    assert r.error is None, r.error
    # p3 all-in 0.29 (+0.01 ante), p1 all-in 0.99, p2 calls: aces win everything
    assert r.finishing_stacks == (Decimal("2.30"), Decimal("1.00"), Decimal("0.00"))
    assert r.scale == 100

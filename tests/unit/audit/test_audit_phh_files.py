"""electric_audit.phh_files: PHH file reading (the I/O the pure electric_domain.phh leaves out)."""

from __future__ import annotations

from pathlib import Path

import pytest
from electric_audit.phh_files import is_multi, read_phh, replay_file
from electric_domain.phh import replay_text

HAND = """variant = 'NT'
antes = [0, 0, 0]
blinds_or_straddles = [50, 100, 0]
min_bet = 100
starting_stacks = [10000, 10000, 10000]
actions = ['d dh p1 AsAd', 'd dh p2 KsKd', 'd dh p3 7c2d', 'p3 f', 'p1 cbr 300', 'p2 f']
"""


def test_the_suffix_decides_one_hand_or_sections(tmp_path: Path) -> None:
    single = tmp_path / "one.PHH"
    single.write_text(HAND, encoding="utf-8")
    many = tmp_path / "two.Phhs"
    many.write_text(f"[7]\n{HAND}\n[9]\n{HAND}", encoding="utf-8")
    assert not is_multi(single) and is_multi(many)
    [one] = list(replay_file(single))
    assert (one.index, one.error, one.finishing_stacks) == (1, None, (10100, 9900, 10000))
    assert [r.index for r in replay_file(many)] == [7, 9]
    # the same results as the pure text replay of what was read
    assert list(replay_file(many)) == list(replay_text(read_phh(many), multi=True))
    assert next(replay_file(many, keep_events=True)).events


def test_unreadable_files_raise(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        list(replay_file(tmp_path / "missing.phh"))
    bad = tmp_path / "bad.phh"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        list(replay_file(bad))

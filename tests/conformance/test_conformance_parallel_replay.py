"""``electric-audit replay-phh`` shares a large ``.phhs`` file between processes (issue 26
item 7: the 10,000-hand corpus in under 1 s): the file is cut at section headers, the parts
replay on their own and the lines come out in the file's order, the same as one process
prints, bad hands included. The replays run as the console script does, in a process of
their own (forking this test process, with its threads, is not what users run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from electric_audit import phh_files

CORPUS = Path(__file__).resolve().parents[1] / "data/conformance/pluribus-10000.phhs"


def _replay(path: Path, jobs: int) -> list[str]:
    exe = Path(sys.executable).with_name("electric-audit")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "electric_audit.cli"]
    done = subprocess.run(
        [*cmd, "replay-phh", "--jobs", str(jobs), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def test_the_corpus_prints_the_same_lines_in_two_processes_as_in_one() -> None:
    one, two = _replay(CORPUS, 1), _replay(CORPUS, 2)
    assert len(one) == 10_000 and two == one
    assert [json.loads(line)["index"] for line in two] == list(range(1, 10_001))


def test_parts_are_whole_sections_and_a_bad_hand_keeps_its_place(tmp_path: Path) -> None:
    text = CORPUS.read_text(encoding="utf-8")
    parts = phh_files.split_sections(text, 3)
    assert len(parts) == 3 and "".join(parts) == text[text.index("[1]") :]
    assert all(p.startswith("[") for p in parts)
    # A small file stays in one process.
    assert phh_files.split_sections("[1]\nx = 1\n[2]\nx = 2\n", 2) == ["[1]\nx = 1\n[2]\nx = 2\n"]
    # A broken hand in the middle of a large file: reported at its index, in order.
    head, tail = text.split("\n[5000]\n", 1)
    broken = tmp_path / "broken.phhs"
    broken.write_text(f"{head}\n[5000]\nactions = [\n{tail}", encoding="utf-8")
    two = _replay(broken, 2)
    assert two == _replay(broken, 1)
    bad = [json.loads(line) for line in two if json.loads(line)["error"] is not None]
    assert [b["index"] for b in bad] == [5000]

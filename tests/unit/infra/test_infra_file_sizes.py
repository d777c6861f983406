"""tools/check_file_sizes.py: files over the limit fail, generated code is exempt."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

TOOL = Path(__file__).resolve().parents[3] / "tools" / "check_file_sizes.py"


@pytest.fixture(scope="module")
def tool() -> dict[str, Any]:
    return runpy.run_path(str(TOOL))


def _write(path: Path, lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n" * lines, encoding="utf-8")


def test_only_hand_written_files_over_the_limit_fail(
    tool: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "libs" / "ok.py", 600)
    _write(tmp_path / "libs" / "big.py", 601)
    _write(tmp_path / "gen" / "electric" / "x_pb2.py", 5_000)
    _write(tmp_path / "services" / "s" / "migrations" / "versions" / "m_0001.py", 900)
    _write(tmp_path / "notes.txt", 10_000)
    assert tool["oversized"](tmp_path, 600) == [(Path("libs/big.py"), 601)]
    assert tool["main"]([str(tmp_path)]) == 1
    assert "libs/big.py: 601 lines" in capsys.readouterr().err
    assert tool["main"]([str(tmp_path), "--max", "601"]) == 0

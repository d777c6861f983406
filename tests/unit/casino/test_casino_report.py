"""``make math-report`` (small sizes): the HTML names the 98.06% problem and embeds plots."""

from __future__ import annotations

from pathlib import Path

from electric_math import report


def test_casino_report_writes_html_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert report.main(["--out", str(out), "--sim-rounds", "20000", "--reserve-runs", "0"]) == 0
    text = (out / "index.html").read_text("utf-8")
    assert "98.06% is not attainable" in text and "97.9631%" in text
    assert "27803331067/28381438800" in text  # THB exact RTP per Ante
    for png in ("thb_strategy.png", "uth_strategy.png", "bankroll_swing.png",
                "electric_paytable.png", "uth_decisions.png"):  # fmt: skip
        assert (out / png).stat().st_size > 5000
        assert f'src="{png}"' in text

"""electric_runner casino summary: per game rounds, handle, house win, observed vs exact RTP."""

from __future__ import annotations

import json
import uuid
from fractions import Fraction
from pathlib import Path

import electric_math
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as cev
from electric_eventlog import pack
from electric_runner.app import parse_args
from electric_runner.casino_summary import exact_figures, render_casino
from electric_runner.summary import Figures, render
from google.protobuf.message import Message


def _env(event: Message) -> Envelope:
    return Envelope(
        event_id=str(uuid.uuid4()),
        stream_id="s",
        event_type=event.DESCRIPTOR.full_name,
        payload=pack(event),
    )


def _result(spot: str, stake: int, returned: int) -> cev.CasinoBetResult:
    outcome = "win" if returned > stake else "push" if returned == stake else "lose"
    return cev.CasinoBetResult(
        spot=spot, stake_cents=stake, outcome=outcome, returned_cents=returned
    )


def test_exact_figures_come_from_the_math_data() -> None:
    data = Path(electric_math.__file__).parent / "data"
    for game in ("thb", "uth"):
        doc = json.loads((data / f"{game}.json").read_text("utf-8"))
        assert exact_figures(game)["rtp_total"] == Fraction(doc["figures"]["exact"]["rtp_total"])
    assert "trips_rtp" in exact_figures("uth")
    assert exact_figures("nope") == {}


def test_casino_rounds_fold_into_the_summary() -> None:
    f = Figures()
    f.apply(_env(cev.CasinoRoundStarted(round_id="r1", game="thb")))
    f.apply(
        _env(
            cev.CasinoRoundSettled(
                round_id="r1",
                game="thb",
                players=[
                    cev.CasinoPlayerResult(
                        player_id="p",
                        results=[_result("ante", 100, 200), _result("flop", 200, 0)],
                    )
                ],
            )
        )
    )
    f.apply(
        _env(
            cev.CasinoRoundSettled(
                round_id="u1",
                game="uth",
                players=[
                    cev.CasinoPlayerResult(
                        player_id="p",
                        results=[
                            _result("ante", 100, 100),
                            _result("blind", 100, 100),
                            _result("trips", 50, 0),
                        ],
                    )
                ],
            )
        )
    )
    f.apply(_env(cev.CasinoRoundVoided(round_id="u2", game="uth")))
    thb, uth = f.casino.games["thb"], f.casino.games["uth"]
    assert (thb.started, thb.settled, thb.handle_cents, thb.returned_cents) == (1, 1, 300, 200)
    assert thb.house_win_cents == 100 and thb.rtp == Fraction(2, 3)
    assert (uth.handle_cents, uth.side_handle_cents, uth.voided) == (200, 50, 1)
    assert uth.house_win_cents == 50 and uth.rtp == 1 and uth.side_rtp == 0
    lines = render_casino(f.casino, now=f.casino.started_monotonic + 60)
    assert lines[0].startswith("casino THB") and "rounds 1 (1/min)" in lines[0]
    assert "handle $3.00" in lines[0] and "house win $1.00" in lines[0]
    assert "RTP 66.67% (exact 99.467%)" in lines[0]
    assert "trips RTP 0.00% (exact 96.502%)" in lines[1] and "voided 1" in lines[1]
    assert any(line.startswith("casino UTH") for line in render(f))
    # Tournament figures are not disturbed by casino events.
    assert f.tournaments_started == 0 and f.hands_dealt == 0


def test_runner_options_for_casino_bots() -> None:
    assert (parse_args([]).thb_bots, parse_args([]).uth_bots) == (4, 6)
    opts = parse_args(["--thb-bots", "0", "--uth-bots", "25"])
    assert (opts.thb_bots, opts.uth_bots) == (0, 25)

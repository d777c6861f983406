"""electric_runner: the embedded environment, the strategy mix and the live summary figures."""

from __future__ import annotations

import uuid

import pytest
from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric_bots.runner import parse_mix
from electric_clients import convert
from electric_eventlog import pack
from electric_platform.config import ConfigError, load_config
from electric_runner.app import embedded_environ, parse_args
from electric_runner.summary import Figures, render, usd
from google.protobuf.message import Message


def _env(event: Message) -> Envelope:
    return Envelope(
        event_id=str(uuid.uuid4()),
        stream_id="s",
        event_type=event.DESCRIPTOR.full_name,
        payload=pack(event),
    )


def test_figures_fold_the_events() -> None:
    f = Figures()
    seats = [tournament_pb2.SeatAssignment(seat=i, player_id=f"p{i}") for i in (1, 2, 3)]
    for mult in (2, 2, 10):
        f.apply(
            _env(
                reg_events.TournamentStarted(
                    seats=seats,
                    multiplier=mult,
                    buy_in=convert.usd(500),
                    prize_pool=convert.usd(500 * mult),
                )
            )
        )
    for _ in range(7):
        f.apply(_env(table_events.HandStarted(hand_number=1)))
    f.apply(_env(table_events.TournamentFinished(tournament_id="t")))
    f.apply(_env(payout_events.PrizeCredited(amount=convert.usd(1000))))
    f.apply(_env(table_events.ActionTaken()))  # not counted
    assert (f.tournaments_started, f.tournaments_finished, f.running) == (3, 1, 2)
    assert f.hands_dealt == 7 and dict(f.multipliers) == {2: 2, 10: 1}
    assert f.buy_ins_cents == 3 * 3 * 500 and f.prize_pools_cents == 7000
    assert (f.prizes_credited, f.prizes_credited_cents) == (1, 1000)
    f.rake_cents, f.prize_reserve_cents = 315, -2
    text = "\n".join(render(f, extra="bots 3"))
    assert "running 2  finished 1" in text and "hands dealt 7" in text
    assert "2x:2 10x:1" in text and "rake $3.15" in text and "prize reserve -$0.02" in text
    assert text.endswith("bots 3")
    assert f.per_minute(now=f.started_monotonic + 30) == pytest.approx(2.0)


def test_usd() -> None:
    assert usd(0) == "$0.00" and usd(123456) == "$1,234.56" and usd(-7) == "-$0.07"
    assert usd(None) == "?"


def test_embedded_environ_gives_each_service_its_own_port_and_target() -> None:
    env = embedded_environ({"DATABASE_URL": "postgresql+psycopg://x/y"}, free_ports=True)
    assert "DATABASE_URL" not in env  # four services must not share one database
    ports = {
        s: env[f"ELECTRIC_{s.upper()}_GRPC_PORT"]
        for s in ("registration", "table", "wallet", "payout")
    }
    assert len(set(ports.values())) == 4
    for service, port in ports.items():
        cfg = load_config(service, env)
        assert cfg.grpc_port == int(port) and cfg.metrics_port == 0
        assert cfg.target("wallet") == f"127.0.0.1:{ports['wallet']}"
        assert cfg.database_url.endswith(f"/{service}.db")
    default = embedded_environ({})
    assert default["ELECTRIC_TABLE_TARGET"] == "127.0.0.1:50052"
    with pytest.raises(ConfigError):
        embedded_environ({"ELECTRIC_GRPC_PORT": "6000"})


def test_mix_and_arguments() -> None:
    assert parse_mix("random:3,tag") == (("random", 3), ("tag", 1))
    for bad in ("poker:1", "tag:0"):
        with pytest.raises(ValueError):
            parse_mix(bad)
    opts = parse_args(["--bots", "9", "--mix", "tag:1", "--free-ports", "--think", "0"])
    assert (opts.bots, opts.mix, opts.free_ports, opts.think) == (9, (("tag", 1),), True, 0.0)
    with pytest.raises(SystemExit):
        parse_args(["--mix", "nobody"])

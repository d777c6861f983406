"""electric-audit round re-decides a UTH round: live rounds played by the domain, mapped to the
table's events by the table service's own mapping (``UthBook.translate``) and written by the
real EventStore (so every chain is whole). An honest round passes; a round the domain would
never have produced — a 4x raise after the flop, a decision after its window's deadline, a
play bet of the wrong multiple — fails ``domain`` at the event that carries it, while every
other check (settlement included: those forgeries settle consistently) passes; a table event
naming the wrong player for a seat fails ``seats``; a seat taken by its first bet is the
domain's."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import electric_domain.casino.uth.events as uth
import electric_domain.casino.uth.round as uth_round
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric_audit.cli import main
from electric_audit.sources import read_store
from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.money import Outcome
from electric_domain.casino.uth.round import UthRound
from electric_eventlog import ANY, EventStore, create_engine, migrate
from electric_table.casino.uth.records import UthBook
from google.protobuf.message import Message

CONFIG = load_config()
T0 = 1_800_000_000_000
SEED = bytes(range(1, 33))
CLOSE = T0 + CONFIG.uth.betting_ms
DECISION = CONFIG.uth.decision_ms


def _play(rid: str) -> list[uth.Event]:
    """alice seated at the open, bob seated by his first bet; alice checks pre-flop and plays
    2x on the flop, bob plays 3x pre-flop. Returns the domain's events."""
    r = UthRound.open(
        CONFIG, round_id=rid, game_number="g-1", deck_seed=SEED, at=T0, players=["alice"]
    )
    r.handle(uth.PlaceBet(0, "ante", 500, T0 + 100))
    r.handle(uth.PlaceBet(0, "trips", 200, T0 + 200))
    r.handle(uth.TakeSeat("bob", T0 + 1000))  # the table's PlaceBets from an unseated player
    r.handle(uth.PlaceBet(1, "ante", 1000, T0 + 1000))
    r.handle(uth.Double(1, T0 + 2000))
    r.handle(uth.Tick(CLOSE))
    r.handle(uth.Decide(0, "check", CLOSE + 500))
    r.handle(uth.Decide(1, "play_3x", CLOSE + 900))  # the window closes: the flop is dealt
    flop = r.history[-1]
    assert isinstance(flop, uth.DecisionWindowOpened) and flop.street == "flop"
    r.handle(uth.Decide(0, "play_2x", flop.at + 700))
    assert r.finished
    return list(r.history)


def _write(
    tmp_path: Path, rid: str, events: list[Any], edit: Callable[[Message], None] | None = None
) -> str:
    """The table events of ``events`` in a fresh SQLite table store (the mapping the table
    service writes with; ``edit`` changes a message before it is stored)."""
    url = f"sqlite:///{tmp_path}/table-{rid}.db"
    engine = create_engine(url)
    migrate(engine)
    msgs = UthBook(table_id="uth-1").translate(events, request_id="req-1").msgs
    for m in msgs:
        if edit is not None:
            edit(m)
    EventStore(engine, producer="table").append_in_new_tx(f"casino-{rid}", ANY, msgs)
    engine.dispose()
    return url


def _audit(
    capsys: pytest.CaptureFixture[str], rid: str, url: str, *more: str
) -> tuple[int, dict[str, Any], list[str]]:
    code = main(["round", rid, "--store", url, "--json", *more])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    checks = {x["check"]: x for x in lines if "check" in x}
    facts = [f"{x['fact']} {x['text']}" for x in lines if "fact" in x]
    return code, checks, facts


def _version_of(url: str, pred: Callable[[Message], bool]) -> int:
    """The stream version of the first stored table event matching ``pred``."""
    for x in read_store(url).events:
        name = x.envelope.event_type.rsplit(".", 1)[-1]
        cls = getattr(cev, name, None)
        if cls is None:
            continue
        m = cls()
        m.ParseFromString(x.envelope.payload.value)
        if pred(m):
            return int(x.envelope.stream_version)
    raise AssertionError("no such event")


def _only_domain_fails(checks: dict[str, Any]) -> str:
    assert checks["domain"]["failed"] == 1, checks["domain"]
    for name in ("chains", "deck", "seats", "settlement"):
        assert checks[name]["failed"] == 0 and checks[name]["checked"] >= 1, (name, checks)
    return str(checks["domain"]["first_failure"])


def test_an_honest_round_passes_and_names_how_each_seat_was_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _play("uth-r-honest")
    url = _write(tmp_path, "uth-r-honest", events)
    code, checks, facts = _audit(capsys, "uth-r-honest", url)
    assert code == 0, checks
    assert checks["domain"]["checked"] == len(events)  # every event re-made by the domain
    assert checks["seats"]["checked"] >= 8
    assert "seat seat 0 alice (seated at the open)" in facts
    assert "seat seat 1 bob (joined with their first bet)" in facts
    assert any(
        f.startswith("windows green 15000 ms, yellow 5000 ms, decisions 15000 ms") for f in facts
    )
    # the table's windows given explicitly: the same; other windows: the record disagrees
    assert _audit(capsys, "uth-r-honest", url, "--uth-windows", "15000,5000,15000")[0] == 0
    code, checks, _ = _audit(capsys, "uth-r-honest", url, "--uth-windows", "15000,5000,9000")
    assert code == 1 and "DecisionWindowOpened" in checks["domain"]["first_failure"]


def test_a_4x_raise_after_the_flop_is_refused_at_its_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = "uth-r-flop4x"
    monkeypatch.setitem(uth_round.ACTIONS[uth_round.FLOP], "play_4x", 4)  # a forging table
    r = UthRound.open(
        CONFIG, round_id=rid, game_number="g-2", deck_seed=SEED, at=T0, players=["alice"]
    )
    r.handle(uth.PlaceBet(0, "ante", 500, T0 + 100))
    r.handle(uth.Tick(CLOSE))
    r.handle(uth.Decide(0, "check", CLOSE + 500))
    r.handle(uth.Decide(0, "play_4x", CLOSE + 1500))
    assert r.finished
    monkeypatch.undo()
    url = _write(tmp_path, rid, list(r.history))
    code, checks, _ = _audit(capsys, rid, url)
    assert code == 1
    failure = _only_domain_fails(checks)
    version = _version_of(
        url, lambda m: isinstance(m, cev.CasinoDecisionMade) and m.decision == "play_4x"
    )
    assert f"version {version} " in failure
    assert "refuses Decided(seat=0, street='flop', action='play_4x'" in failure
    assert "play_4x not allowed at flop" in failure


def test_a_decision_after_the_window_closed_is_refused_at_its_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = "uth-r-late"
    honest = _play(rid)
    k = next(i for i, e in enumerate(honest) if isinstance(e, uth.Decided) and e.street == "flop")
    late = DECISION + 5000  # past the flop window's deadline
    forged = [*honest[:k], *(dataclasses.replace(e, at=e.at + late) for e in honest[k:])]
    url = _write(tmp_path, rid, forged)
    code, checks, _ = _audit(capsys, rid, url)
    assert code == 1
    failure = _only_domain_fails(checks)
    version = _version_of(
        url,
        lambda m: isinstance(m, cev.CasinoDecisionMade) and m.street == "flop" and not m.timed_out,
    )
    assert f"version {version} " in failure
    assert "the domain first gives AutoChecked(seat=0, street='flop'" in failure
    assert "refuses Decided(seat=0, street='flop', action='play_2x'" in failure
    # the honest round with the same decision inside the window passes
    assert _audit(capsys, "uth-r-ok", _write(tmp_path, "uth-r-ok", _play("uth-r-ok")))[0] == 0


def test_a_play_bet_of_the_wrong_multiple_is_reported_at_its_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = "uth-r-multiple"
    monkeypatch.setitem(uth_round.ACTIONS[uth_round.PREFLOP], "play_3x", 4)  # charged as 4x
    events = _play(rid)
    monkeypatch.undo()
    url = _write(tmp_path, rid, events)
    code, checks, _ = _audit(capsys, rid, url)
    assert code == 1
    failure = _only_domain_fails(checks)
    version = _version_of(
        url, lambda m: isinstance(m, cev.CasinoDecisionMade) and m.decision == "play_3x"
    )
    assert f"version {version} " in failure
    assert (
        "the domain gives Decided(seat=1, street='preflop', action='play_3x', play_cents=6000"
        in failure
    )
    assert "play_cents=8000" in failure


@pytest.mark.parametrize("kind", ["CasinoUthSeatTaken", "CasinoDecisionMade"])
def test_an_event_naming_another_player_for_a_seat_fails_seats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    rid = f"uth-r-seat-{kind.lower()}"

    def edit(m: Message) -> None:
        if type(m).__name__ == kind and getattr(m, "player_id", "") == "bob":
            m.player_id = "mallory"  # type: ignore[attr-defined]

    url = _write(tmp_path, rid, _play(rid), edit)
    code, checks, _ = _audit(capsys, rid, url)
    assert code == 1
    assert checks["domain"]["failed"] == 0 and checks["settlement"]["failed"] == 0
    assert checks["seats"]["failed"] >= 1
    version = _version_of(
        url, lambda m: type(m).__name__ == kind and getattr(m, "player_id", "") == "mallory"
    )
    failure = checks["seats"]["first_failure"]
    assert f"version {version} " in failure and "names 'mallory' for seat 1" in failure
    assert "the domain seated 'bob' there" in failure


def test_a_voided_round_is_replayed_with_its_refunds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = "uth-r-void"
    r = UthRound.open(
        CONFIG, round_id=rid, game_number="g-3", deck_seed=SEED, at=T0, players=["alice", "bob"]
    )
    r.handle(uth.PlaceBet(0, "ante", 500, T0 + 100))
    r.handle(uth.PlaceBet(1, "ante", 300, T0 + 150))
    r.handle(uth.Tick(CLOSE))
    r.handle(uth.Decide(0, "play_4x", CLOSE + 300))  # bob still to decide: the round is live
    r.handle(uth.Void("card reader fault", CLOSE + 400))
    url = _write(tmp_path, rid, list(r.history))
    code, checks, _ = _audit(capsys, rid, url)
    assert code == 0, checks
    assert checks["settlement"]["checked"] == 1 and checks["domain"]["checked"] == len(r.history)
    # refunds that differ from the domain's (the Play bet kept back) are caught
    voided = next(e for e in r.history if isinstance(e, uth.RoundVoided))
    seat, results = voided.refunds[0]
    short = tuple(
        dataclasses.replace(b, outcome=Outcome.LOSE) if b.spot == "play" else b for b in results
    )
    refunds = ((seat, short), *voided.refunds[1:])
    forged = [dataclasses.replace(e, refunds=refunds) if e is voided else e for e in r.history]
    url = _write(
        tmp_path,
        "uth-r-void2",
        [dataclasses.replace(forged[0], round_id="uth-r-void2"), *forged[1:]],
    )
    code, checks, _ = _audit(capsys, "uth-r-void2", url)
    assert code == 1 and "the domain gives RoundVoided" in checks["domain"]["first_failure"]

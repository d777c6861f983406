"""Payout's read models rebuilt from payout's own events (issue 18 item 4, after a backup
restore), on SQLite and PostgreSQL (``backend_engine``).

The rows and events come from the service's own code paths (``Payouts`` consuming
TournamentStarted / HandStarted / TournamentFinished and recording credits, ``CasinoWins``
consuming settled and voided rounds): a tournament awarded with a tie and credited, one held
by the prize re-check, one whose result waits for its start, casino wins owed and credited.
``rebuild_and_compare`` agrees with them, names each corrupted or deleted row, and
``rebuild_projections`` restores exactly the rows there were (the documented non-derivable
columns of a deleted row aside)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import default_config
from electric_eventlog import EventStore, migrate, upgrade
from electric_eventlog.codec import to_utc
from electric_payout.casino.rules import BetResult, SettledBet, SettledRound
from electric_payout.casino.wins import CasinoWins
from electric_payout.handlers import Payouts
from electric_payout.store import tables as t
from electric_payout.store.projections import rebuild_and_compare, rebuild_projections
from electric_payout.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Engine, delete, select, update

from tests.support.reg_harness import finished_event, usd

TABLES = (t.prizes, t.tournaments, t.results, t.hand_buttons, t.casino_wins, t.casino_rounds)
PLAYERS = ("ava", "bo", "cy")
PLACES = [(1, 1, "ava", "e-ava", 1, 0), (2, 2, "bo", "e-bo", 2, 4), (2, 3, "cy", "e-cy", 2, 4)]


def _started(tid: str, pool: int) -> reg_events.TournamentStarted:
    """A 3-seat TournamentStarted paying 70/20/10 (as tests/component/payout does)."""
    return reg_events.TournamentStarted(
        tournament_id=tid,
        table_id=tid,
        tier_id="electric-test",
        seats=[
            tournament_pb2.SeatAssignment(seat=i + 1, player_id=p, entry_id=f"e-{p}")
            for i, p in enumerate(PLAYERS)
        ],
        multiplier=100,
        buy_in=usd(pool // 100),
        prize_pool=usd(pool),
        payouts=[
            tournament_pb2.PrizeShare(place=i + 1, share_bps=b, amount=usd(pool * b // 10_000))
            for i, b in enumerate((7000, 2000, 1000))
        ],
        paytable_version="test-ties-v1",
        table_size=3,
    )


def _env(event_id: str) -> Envelope:
    return Envelope(event_id=event_id, correlation_id=f"corr-{event_id}")


def _populate(engine: Engine) -> EventStore:
    """Real rows and events of payout (module doc)."""
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_payout",
        target_metadata=metadata,
    )
    store = EventStore(engine, producer="payout")
    payouts = Payouts(engine, store, default_config())
    # t-odd: odd cents; bo and cy tie (out in hand 4, button seat 2): 7,502 to seat 3.
    odd = finished_event("t-odd", PLACES, 100, 50_013, {1: 35_010, 2: 7_501, 3: 7_502})
    # t-bad: 1st and 2nd swapped: held by the re-check. t-wait: no TournamentStarted yet.
    bad = finished_event("t-bad", PLACES, 100, 50_000, {1: 10_000, 2: 35_000, 3: 5_000})
    wait = finished_event("t-wait", PLACES, 100, 50_000, {1: 35_000, 2: 7_500, 3: 7_500})
    with engine.begin() as conn:
        payouts.on_hand(
            conn, table_events.HandStarted(table_id="t-odd", hand_number=4, button_seat=2)
        )
        assert payouts.on_finished(conn, _env("fin-odd"), odd) is None
        decision = payouts.on_started(conn, _env("start-odd"), _started("t-odd", 50_013))
        assert decision is not None and (decision.awarded, decision.held) == (3, False)
    with engine.begin() as conn:
        payouts.on_started(conn, _env("start-bad"), _started("t-bad", 50_000))
        held = payouts.on_finished(conn, _env("fin-bad"), bad)
        assert held is not None and held.held
        assert payouts.on_finished(conn, _env("fin-wait"), wait) is None
    owed = {c.player_id: c for c in payouts.owed_credits()}
    assert payouts.mark_credited(owed["ava"], "w-ava")
    assert payouts.mark_credited(owed["cy"], "w-cy")
    payouts.note_failure(owed["bo"], "wallet unavailable")

    wins = CasinoWins(engine, store)
    r1 = SettledRound(
        "r1",
        "uth-1",
        "uth",
        (
            SettledBet("ann", "ante", 100, BetResult.WIN, 100, stake_transfer_id="bet-ante"),
            SettledBet("ann", "trips", 100, BetResult.WIN, 300, stake_transfer_id="bet-trips"),
            SettledBet("bob", "ante", 100, BetResult.LOSE, 0),
        ),
    )
    lost = SettledRound("r2", "uth-1", "uth", (SettledBet("bob", "ante", 100, BetResult.LOSE, 0),))
    with engine.begin() as conn:
        assert wins.on_settled(conn, r1, source_event_id="rs-1", correlation_id="c1").owed == 2
        assert wins.on_settled(conn, lost, source_event_id="rs-2").owed == 0
        wins.on_voided(
            conn,
            round_id="r3",
            table_id="thb-1",
            game="thb",
            reason="closed",
            source_event_id="rv-3",
        )
    ante, trips = wins.owed()
    assert wins.mark_credited(ante, "w-ante")
    wins.note_failure(trips, "wallet unavailable")
    return store


def _contents(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every row of payout's tables, sorted, datetimes in UTC."""
    out: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for table in TABLES:
            rows = [
                {k: to_utc(v) if isinstance(v, datetime) else v for k, v in r.items()}
                for r in conn.execute(select(table)).mappings()
            ]
            out[table.name] = sorted(rows, key=repr)
    return out


def test_rebuild_restores_payouts_rows_from_its_events(backend_engine: Engine) -> None:
    engine = backend_engine
    store = _populate(engine)
    assert rebuild_and_compare(engine, store) == []
    before = _contents(engine)
    assert len(before["payout_prizes"]) == 3 and len(before["payout_casino_wins"]) == 2
    assert {r["status"] for r in before["payout_prizes"]} == {"awarded", "credited"}

    p, w = t.prizes.c, t.casino_wins.c
    late = datetime(2030, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        # Lost rows (as after a restore of an older dump) and corrupted ones.
        conn.execute(delete(t.prizes).where(p.player_id == "ava"))
        conn.execute(update(t.prizes).where(p.player_id == "cy").values(status="awarded"))
        conn.execute(update(t.prizes).where(p.player_id == "bo").values(amount_cents=1))
        conn.execute(delete(t.casino_wins).where(w.bet_kind == "ante"))
        conn.execute(update(t.casino_wins).where(w.bet_kind == "trips").values(win_cents=0))
        conn.execute(delete(t.casino_rounds).where(t.casino_rounds.c.round_id == "r1"))
        conn.execute(update(t.results).values(awarded_at=None, held_at=None))
        conn.execute(
            t.prizes.insert().values(
                {**before["payout_prizes"][0], "tournament_id": "t-ghost", "awarded_at": late}
            )
        )
    diffs = rebuild_and_compare(engine, store)
    text = "\n".join(diffs)
    assert "prize ('t-odd', 1, 'ava'): in the events, missing from the table" in diffs
    assert "prize ('t-odd', 2, 'cy'): status: events say 'credited', table has 'awarded'" in text
    assert "prize ('t-odd', 2, 'bo'): amount_cents: events say 7501, table has 1" in text
    assert "prize ('t-ghost', 1, 'ava'): in the table, not in the events" in diffs
    assert "casino win ('r1', 'ann', 'ante'): in the events, missing from the table" in diffs
    assert "casino win ('r1', 'ann', 'trips'): win_cents: events say 300, table has 0" in text
    assert "casino round r1: in the events, missing from the table" in diffs
    assert any(d.startswith("result t-odd: awarded_at: events say") for d in diffs)
    assert any(d.startswith("result t-bad: held_at: events say") for d in diffs)
    assert len(diffs) == 9, diffs  # t-wait: undecided, no payout event: not checked

    # 3 PrizeAwarded + 2 PrizeCredited + 1 PrizeCheckFailed + 2 CasinoWinOwed + 1 credited.
    assert rebuild_projections(engine, store) == 9
    assert rebuild_and_compare(engine, store) == []
    after = _contents(engine)
    # A deleted win's stake transfer is not in CasinoWinOwed (module doc): "" when rebuilt.
    wins = after["payout_casino_wins"]
    assert [r["stake_transfer_id"] for r in wins] == ["", "bet-trips"]
    # Everything else is back as it was: ava's seat and buy-in come from the consumed
    # TournamentFinished / TournamentStarted, the failure bookkeeping was kept.
    restored = {
        **after,
        "payout_casino_wins": [{**wins[0], "stake_transfer_id": "bet-ante"}, wins[1]],
    }
    assert restored == before
    assert rebuild_projections(engine, store) == 9  # idempotent
    assert _contents(engine) == after


def test_rebuild_of_a_store_without_payout_events_changes_nothing(backend_engine: Engine) -> None:
    engine = backend_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_payout",
        target_metadata=metadata,
    )
    store = EventStore(engine, producer="payout")
    payouts = Payouts(engine, store, default_config())
    wait = finished_event("t-wait", PLACES, 100, 50_000, {1: 35_000, 2: 7_500, 3: 7_500})
    with engine.begin() as conn:
        assert payouts.on_finished(conn, _env("fin-wait"), wait) is None
    before = _contents(engine)
    assert rebuild_and_compare(engine, store) == []
    assert rebuild_projections(engine, store) == 0
    assert _contents(engine) == before


def test_a_result_delivered_again_after_a_restore_keeps_the_logged_decision(
    backend_engine: Engine,
) -> None:
    """After a restore, a result whose decision is in payout's log but not in its row (the
    dump was older) is delivered again by a consumer group reset: the decision stands, the
    row catches up, nothing is appended. Deciding again conflicted with NO_STREAM, and the
    worker retried that forever (the partition waited)."""
    engine = backend_engine
    store = _populate(engine)
    payouts = Payouts(engine, store, default_config())
    with engine.connect() as conn:
        logged = {s: len(store.read_stream(conn, f"payout-{s}")) for s in ("t-odd", "t-bad")}
        times = {r.tournament_id: r for r in conn.execute(select(t.results))}
    with engine.begin() as conn:  # the rows as the dump had them: undecided
        conn.execute(update(t.results).values(awarded_at=None, held_at=None))
    assert {d.table_id for d in payouts.decide_pending()} == set()
    with engine.connect() as conn:
        again = {s: len(store.read_stream(conn, f"payout-{s}")) for s in ("t-odd", "t-bad")}
        rows = {r.tournament_id: r for r in conn.execute(select(t.results))}
    assert again == logged == {"t-odd": 5, "t-bad": 1}  # 3 awarded, 2 credited; held
    assert to_utc(rows["t-odd"].awarded_at) == to_utc(times["t-odd"].awarded_at)
    assert rows["t-odd"].held_at is None
    assert to_utc(rows["t-bad"].held_at) == to_utc(times["t-bad"].held_at)
    assert rebuild_and_compare(engine, store) == []

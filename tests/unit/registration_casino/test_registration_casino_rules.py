"""The casino lobby's pure rules: THB private tables on demand, UTH one seat each, idle
expiry after 20 minutes on an injected clock, and the lobby view from the casino config."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from electric_domain.casino.common.config import load_config
from electric_domain.lobby.casino import (
    SESSION_IDLE_LIMIT,
    CasinoGame,
    CasinoTable,
    NotSeated,
    PrivateTable,
    Session,
    UnknownCasinoTable,
    expired,
    game_of,
    join,
    leave,
    next_expiry,
    seated_counts,
    table_id_for,
    touch,
)
from electric_domain.lobby.casino_lobby import casino_lobby

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
UTH1 = CasinoTable("uth-1", CasinoGame.UTH)
THB = CasinoGame.THB
UTH = CasinoGame.UTH


def test_idle_limit_is_twenty_minutes() -> None:
    assert timedelta(minutes=20) == SESSION_IDLE_LIMIT


def test_thb_creates_a_private_table_per_player_and_returns_it() -> None:
    a = join(
        THB, "ann", table_id="", tables={}, sessions=[], session_id="s1", next_thb_number=3, now=T0
    )
    assert a.created_table == CasinoTable("thb-3", THB, owner_id="ann")
    assert (a.session.table_id, a.session.seat, a.already_seated) == ("thb-3", 1, False)
    tables = {"thb-3": a.created_table}
    again = join(
        THB,
        "ann",
        table_id="",
        tables=tables,
        sessions=[a.session],
        session_id="s2",
        next_thb_number=4,
        now=T0 + timedelta(minutes=1),
    )
    assert again.already_seated and again.created_table is None
    assert again.session.session_id == "s1"
    assert again.session.last_active_at == T0 + timedelta(minutes=1)
    with pytest.raises(PrivateTable):
        join(
            THB,
            "bob",
            table_id="thb-3",
            tables=tables,
            sessions=[a.session],
            session_id="s3",
            next_thb_number=4,
            now=T0,
        )
    b = join(
        THB,
        "bob",
        table_id="",
        tables=tables,
        sessions=[a.session],
        session_id="s3",
        next_thb_number=4,
        now=T0,
    )
    assert b.created_table is not None and b.created_table.table_id == "thb-4"


def test_uth_seats_many_one_seat_each_lowest_free_first() -> None:
    tables = {"uth-1": UTH1}
    sessions: list[Session] = []
    for i, p in enumerate(["ann", "bob", "cat", "dan"]):
        j = join(
            UTH,
            p,
            table_id="uth-1",
            tables=tables,
            sessions=sessions,
            session_id=f"s{i}",
            next_thb_number=1,
            now=T0,
        )
        sessions.append(j.session)
    assert [s.seat for s in sessions] == [1, 2, 3, 4]
    again = join(
        UTH,
        "bob",
        table_id="uth-1",
        tables=tables,
        sessions=sessions,
        session_id="x",
        next_thb_number=1,
        now=T0,
    )
    assert again.already_seated and again.session.seat == 2
    gone = leave(sessions, "uth-1", "bob")
    rest = [s for s in sessions if s != gone]
    eve = join(
        UTH,
        "eve",
        table_id="uth-1",
        tables=tables,
        sessions=rest,
        session_id="s9",
        next_thb_number=1,
        now=T0,
    )
    assert eve.session.seat == 2
    assert seated_counts([*rest, eve.session]) == {"uth-1": 4}
    with pytest.raises(NotSeated):
        leave(rest, "uth-1", "bob")
    with pytest.raises(UnknownCasinoTable):
        join(
            UTH,
            "ann",
            table_id="uth-2",
            tables=tables,
            sessions=[],
            session_id="s",
            next_thb_number=1,
            now=T0,
        )


def test_table_ids() -> None:
    assert table_id_for(UTH, 2) == "uth-2"
    assert game_of("thb-17") is THB
    for bad in ["thb", "poker-1", "uth-0", "uth-x"]:
        with pytest.raises(UnknownCasinoTable):
            game_of(bad)


def test_expiry_on_an_injected_clock() -> None:
    s = join(
        UTH,
        "ann",
        table_id="uth-1",
        tables={"uth-1": UTH1},
        sessions=[],
        session_id="s1",
        next_thb_number=1,
        now=T0,
    ).session
    assert expired([s], T0 + SESSION_IDLE_LIMIT - timedelta(seconds=1)) == []
    assert expired([s], T0 + SESSION_IDLE_LIMIT) == [s]
    t = touch(s, T0 + timedelta(minutes=15))
    assert expired([t], T0 + timedelta(minutes=34)) == []
    assert expired([t], T0 + timedelta(minutes=35)) == [t]
    assert next_expiry([s, t]) == T0 + SESSION_IDLE_LIMIT
    assert touch(t, T0) == t  # a clock going backwards does not shorten the session


def test_lobby_lists_games_limits_pay_tables_and_seated() -> None:
    cfg = load_config()
    tables = [UTH1, CasinoTable("thb-1", THB, "ann"), CasinoTable("thb-2", THB, "bob")]
    games = casino_lobby(cfg, tables, {"uth-1": 5, "thb-1": 1, "thb-2": 1}, viewer_id="ann")
    thb, uth = games
    assert thb.game is THB and thb.private_tables
    assert [t.table_id for t in thb.tables] == ["thb-1"]  # bob's private table is hidden
    assert thb.seated == 2
    assert thb.limits[0].min_cents == cfg.thb.ante_min_cents
    assert uth.seated == 5 and [t.seated for t in uth.tables] == [5]
    assert [lim.spot for lim in uth.limits] == ["ante", "trips"]
    blind = dict(uth.pay_tables)["blind"]
    assert (blind[0].category, str(blind[0].ratio)) == ("royal_flush", "500:1")
    trips = dict(uth.pay_tables)["trips"]
    assert trips[-1].category == "three_of_a_kind"

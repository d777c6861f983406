"""The screens of issue 11 served by registration: player settings and display names, the
lobby's pay table, My Tables / the Multi-Table Bar fed by the table's events.

Real wallet and registration servers (reg_harness), SQLite databases, a fake table producer.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from electric.common.v1 import errors_pb2, tournament_pb2
from electric.registration.v1 import events_pb2, registration_pb2
from electric.table.v1 import events_pb2 as table_events
from electric.table.v1 import table_pb2
from electric_clients.convert import timestamp
from electric_clients.errors import error_detail
from electric_domain.tournament import default_config
from electric_eventlog import EventStore
from google.protobuf.message import Message

from tests.support.reg_harness import OPS, FakeTable, Stack, eventually, md


def _settings_events(stack: Stack, player: str) -> list[events_pb2.PlayerSettingsChanged]:
    engine = stack.engine("registration")
    store = EventStore(engine, producer="registration")
    with engine.connect() as conn:
        return [store.decode(e) for e in store.read_stream(conn, f"registration-player-{player}")]


async def test_player_settings_defaults_update_event_and_access(stack: Stack) -> None:
    got = await stack.reg.GetPlayerSettings(
        registration_pb2.GetPlayerSettingsRequest(), metadata=md("alice")
    )
    s = got.settings
    assert (s.player_id, s.display_name, s.display_name_is_default, s.version) == (
        "alice",
        "alice",
        True,
        0,
    )
    assert not s.HasField("updated_at")
    up = await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(
            display_name="Ace High", muck_losing_hands=True, four_color_deck=True
        ),
        metadata=md("alice"),
    )
    assert up.changed and up.settings.version == 1
    assert (up.settings.display_name, up.settings.muck_losing_hands) == ("Ace High", True)
    assert (up.settings.muck_winning_hands, up.settings.sound_fx) == (False, True)
    [event] = _settings_events(stack, "alice")
    assert (event.player_id, event.display_name, event.version) == ("alice", "Ace High", 1)
    assert (event.muck_losing_hands, event.four_color_deck, event.muck_winning_hands) == (
        True,
        True,
        False,
    )
    # The same values again: no change, no event.
    same = await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(muck_losing_hands=True), metadata=md("alice")
    )
    assert not same.changed and same.settings.version == 1
    assert len(_settings_events(stack, "alice")) == 1
    # An operator changes it for the player; an auditor reads it.
    by_ops = await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(player_id="alice", muck_winning_hands=True),
        metadata=OPS,
    )
    assert by_ops.changed and by_ops.settings.version == 2
    read = await stack.reg.GetPlayerSettings(
        registration_pb2.GetPlayerSettingsRequest(player_id="alice"),
        metadata=md("aud", "auditor"),
    )
    assert read.settings == by_ops.settings
    assert [e.version for e in _settings_events(stack, "alice")] == [1, 2]


@pytest.mark.parametrize(
    ("caller", "request_", "code"),
    [
        (
            md("bob"),
            registration_pb2.UpdatePlayerSettingsRequest(player_id="alice", sound_fx=False),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            md("aud", "auditor"),
            registration_pb2.UpdatePlayerSettingsRequest(player_id="alice", sound_fx=False),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            OPS,
            registration_pb2.UpdatePlayerSettingsRequest(sound_fx=False),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            md("alice"),
            registration_pb2.UpdatePlayerSettingsRequest(display_name="x" * 1000),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            md("alice"),
            registration_pb2.UpdatePlayerSettingsRequest(display_name="bad\nname"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            md("alice"),
            registration_pb2.UpdatePlayerSettingsRequest(sound_fx=False, expected_version=7),
            grpc.StatusCode.ABORTED,
        ),
    ],
)
async def test_player_settings_refusals_change_nothing(
    stack: Stack,
    caller: tuple[tuple[str, str], ...],
    request_: registration_pb2.UpdatePlayerSettingsRequest,
    code: grpc.StatusCode,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.reg.UpdatePlayerSettings(request_, metadata=caller)
    assert err.value.code() == code
    assert len(err.value.details() or "") < 400  # the bad name is not echoed back whole
    if request_.HasField("display_name"):
        bad = errors_pb2.BadRequest()
        assert error_detail(err.value, bad)
        assert bad.field_violations[0].field == "display_name"
    assert _settings_events(stack, "alice") == []
    got = await stack.reg.GetPlayerSettings(
        registration_pb2.GetPlayerSettingsRequest(), metadata=md("alice")
    )
    assert got.settings.version == 0


async def test_tournament_started_seats_carry_display_names(stack: Stack) -> None:
    await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(display_name="Named One"),
        metadata=md("n1"),
    )
    players = ("n1", "n2", "someone@example.com")
    for p in players:
        await stack.deposit(p, 300)
        r = await stack.register(p)
    started = await stack.tournament_started(r.entries[0].table_id)
    names = {s.player_id: s.display_name for s in started.seats}
    assert names["n1"] == "Named One"
    assert names["n2"] == "n2"
    assert names["someone@example.com"].startswith("Player-")
    # Prize shares in basis points sum to 10000 (winner take all: 10000, not 0).
    assert sum(p.share_bps for p in started.payouts) == 10_000
    [mine] = await stack.my_tables("n1")
    assert {s.player_id: s.display_name for s in mine.seated} == names
    assert sum(p.share_bps for p in mine.payouts) == 10_000
    assert [p.amount.cents for p in mine.payouts] == [p.amount.cents for p in started.payouts]


async def test_lobby_shows_pay_table_blinds_timers_split_and_max_entries(stack: Stack) -> None:
    config = default_config()
    lobby = await stack.reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=md("l1"))
    tier = next(t for t in lobby.tiers if t.tier_id == "electric-500")
    assert (tier.buy_in.cents, tier.rake.cents, tier.prize_pool_contribution.cents) == (
        500,
        35,
        465,
    )
    assert tier.rake_bps == 700 and tier.max_entries == 10
    assert tier.action_timer.ToMilliseconds() == config.action_timer_ms
    assert tier.time_bank.ToMilliseconds() == config.time_bank_ms
    assert tier.level_duration.ToMilliseconds() == 120_000
    assert tier.paytable_version == config.version
    rows = {r.multiplier: r for r in tier.pay_table}
    assert sorted(rows) == [2, 3, 4, 5, 10, 100, 1000, 10000]
    assert sum(r.weight for r in rows.values()) == rows[2].weight_total
    assert abs(sum(r.probability for r in rows.values()) - 1.0) < 1e-9
    assert rows[10000].prize_pool.cents == 5_000_000
    assert [(p.place, p.share_bps, p.amount.cents) for p in rows[2].prizes] == [(1, 10_000, 1000)]
    for r in rows.values():
        assert sum(p.share_bps for p in r.prizes) == 10_000
        assert sum(p.amount.cents for p in r.prizes) == r.prize_pool.cents
    minutes = {m: r.time_until_electric_mode.ToSeconds() // 60 for m, r in rows.items()}
    assert minutes == {2: 6, 3: 6, 4: 6, 5: 6, 10: 8, 100: 10, 1000: 12, 10000: 12}
    assert [len(r.levels) for r in tier.pay_table] == [m // 2 for m in minutes.values()]
    assert all(lv.duration.ToSeconds() == 120 for r in tier.pay_table for lv in r.levels)


async def _seated_table(stack: Stack, players: tuple[str, ...]) -> tuple[str, dict[str, int]]:
    """Deposit, register ``players`` at one table and start its tournament: (table, seats)."""
    seats: dict[str, int] = {}
    for p in players:
        await stack.deposit(p, 300)
        r = await stack.register(p)
        seats[p] = r.entries[0].seat
    table_id = r.entries[0].table_id
    await stack.tournament_started(table_id)
    return table_id, seats


def _table_and_hand_started(table_id: str, seats: dict[str, int]) -> list[Message]:
    """The table's TableStarted and the summary of the first deal (hand 1, 1,500 chips a
    seat, nobody's turn yet)."""
    return [
        table_events.TableStarted(
            table_id=table_id,
            starting_stack=1500,
            seats=[tournament_pb2.SeatAssignment(seat=s, player_id=p) for p, s in seats.items()],
        ),
        _progress(table_id, 1, {s: 1500 for s in seats.values()}),
    ]


def _progress(
    table_id: str,
    hand: int,
    stacks: dict[int, int],
    turn_seat: int = 0,
    deadline: datetime | None = None,
) -> table_events.TableProgress:
    """A TableProgress, the table's summary of an append (what My Tables reads)."""
    summary = table_events.TableProgress(
        table_id=table_id,
        hand_number=hand,
        stacks=[table_events.SeatStack(seat=s, stack=x) for s, x in sorted(stacks.items())],
        turn_seat=turn_seat,
    )
    if deadline is not None:
        summary.turn_deadline.CopyFrom(timestamp(deadline))
    return summary


async def test_my_tables_shows_turn_deadline_stack_and_place(stack: Stack) -> None:
    table_id, seats = await _seated_table(stack, ("m1", "m2", "m3"))
    fake = FakeTable(stack.urls["table"], stack.bus)
    deadline = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=10)
    s1, s2, s3 = seats["m1"], seats["m2"], seats["m3"]
    try:
        await fake.emit(
            table_id,
            *_table_and_hand_started(table_id, seats),
            # The per-action events come too (passed over unread), then the append's summary.
            table_events.BlindPosted(table_id=table_id, hand_number=1, seat=s1, amount=10),
            table_events.TurnStarted(
                table_id=table_id, hand_number=1, seat=s1, deadline=timestamp(deadline)
            ),
            _progress(table_id, 1, {s1: 1490, s2: 1500, s3: 1500}, s1, deadline),
        )

        async def my_turn() -> registration_pb2.MyTable | None:
            [t] = await stack.my_tables("m1")
            return t if t.my_turn else None

        t = await eventually(my_turn)
        assert (t.my_seat, t.my_stack, t.turn_seat, t.current_hand_number) == (s1, 1490, s1, 1)
        assert t.my_turn_deadline.ToDatetime(tzinfo=UTC) == deadline
        assert t.status_text == "Hand 1 · Your turn"
        [other] = await stack.my_tables("m2")
        assert not other.my_turn and other.turn_seat == s1 and other.my_stack == 1500
        assert not other.HasField("my_turn_deadline")
        # The action timer ran out and the time bank started: a later deadline.
        later = deadline + timedelta(seconds=10)
        await fake.emit(
            table_id,
            table_events.TimeoutApplied(
                table_id=table_id,
                hand_number=1,
                seat=s1,
                kind=table_events.TIMEOUT_KIND_TIME_BANK_STARTED,
                deadline=timestamp(later),
            ),
            _progress(table_id, 1, {s1: 1490, s2: 1500, s3: 1500}, s1, later),
        )

        async def extended() -> registration_pb2.MyTable | None:
            [t] = await stack.my_tables("m1")
            return t if t.my_turn_deadline.ToDatetime(tzinfo=UTC) == later else None

        assert (await eventually(extended)).my_turn
        await fake.emit(
            table_id,
            table_events.ActionTaken(
                table_id=table_id,
                hand_number=1,
                seat=s1,
                player_id="m1",
                action=table_pb2.ACTION_TYPE_CALL,
                amount_added=20,
            ),
            table_events.HandEngineEvent(
                table_id=table_id, hand_number=1, kind="UncalledBetReturned", seat=s2, amount=15
            ),
            table_events.PotAwarded(
                table_id=table_id,
                hand_number=1,
                amount=60,
                winners=[table_events.PotWinner(seat=s2, player_id="m2", amount=60)],
            ),
            table_events.PlayerEliminated(
                table_id=table_id, hand_number=1, seat=s3, player_id="m3", finishing_place=3
            ),
            _progress(table_id, 1, {s1: 1470, s2: 1575, s3: 0}),
        )

        async def acted() -> registration_pb2.MyTable | None:
            [t] = await stack.my_tables("m1")
            return t if not t.my_turn and t.my_stack == 1470 else None

        t = await eventually(acted)
        assert t.turn_seat == 0

        # The elimination and the summary may be applied in separate batches: m1's view can
        # show the call before the elimination reaches m3.
        async def awarded() -> registration_pb2.MyTable | None:
            [won] = await stack.my_tables("m2")
            return won if won.my_stack == 1575 else None

        async def eliminated() -> registration_pb2.MyTable | None:
            [out] = await stack.my_tables("m3")
            return out if out.eliminated else None

        await eventually(awarded)
        out = await eventually(eliminated)
        assert (out.eliminated, out.finishing_place, out.my_stack) == (True, 3, 0)
        assert out.status_text == "Out 3rd"
        await fake.emit(
            table_id,
            table_events.HandEnded(
                table_id=table_id,
                hand_number=1,
                stacks=[
                    table_events.SeatStack(seat=s1, stack=1400),
                    table_events.SeatStack(seat=s2, stack=3100),
                ],
            ),
            _progress(table_id, 1, {s1: 1400, s2: 3100, s3: 0}),
        )

        async def resynced() -> registration_pb2.MyTable | None:
            [t] = await stack.my_tables("m1")
            return t if t.my_stack == 1400 else None

        await eventually(resynced)
    finally:
        fake.close()


async def test_watch_my_tables_folds_a_burst_of_changes_into_few_snapshots(stack: Stack) -> None:
    # Every turn at a busy table wakes the stream; it re-reads at most every
    # WATCH_MIN_INTERVAL_SECONDS (0.25 s) and the last snapshot still shows the last turn.
    table_id, seats = await _seated_table(stack, ("w1", "w2", "w3"))
    fake = FakeTable(stack.urls["table"], stack.bus)
    order = [seats["w1"], seats["w2"], seats["w3"]]
    watch = stack.reg.WatchMyTables(registration_pb2.WatchMyTablesRequest(), metadata=md("w1"))
    snapshots: list[registration_pb2.WatchMyTablesResponse] = []

    async def collect() -> None:
        async for snap in watch:
            snapshots.append(snap)

    collector = asyncio.ensure_future(collect())
    try:
        await fake.emit(table_id, *_table_and_hand_started(table_id, seats))
        turns = 40
        loop = asyncio.get_running_loop()
        began = loop.time()
        stacks = dict.fromkeys(order, 1500)
        for k in range(turns):  # one turn per append, as a hand in play delivers them
            await fake.emit(
                table_id,
                table_events.TurnStarted(table_id=table_id, hand_number=1, seat=order[k % 3]),
                _progress(table_id, 1, stacks, order[k % 3]),
            )
            await asyncio.sleep(0.01)
        burst = loop.time() - began

        async def last_turn_shown() -> bool | None:
            tables = snapshots[-1].tables if snapshots else []
            mine = [t for t in tables if t.table_id == table_id]
            return True if mine and mine[0].turn_seat == order[(turns - 1) % 3] else None

        await eventually(last_turn_shown)
        # At most one read per 0.25 s of the burst, plus the first and the last.
        assert len(snapshots) <= burst / 0.25 + 3, (len(snapshots), burst)
    finally:
        watch.cancel()
        collector.cancel()

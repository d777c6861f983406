"""One view per table change (issue 26 item 3): the public view is built once and each
seat adds its own part (`views.with_seat` over the domain's `seat_private`). Over whole
simulated tournaments, after every stored batch, every player's and an observer's view
equal the view as it was built before, from the domain's whole per-viewer view (the
reference below, kept as the oracle), and ``player_view(t, seat)`` agrees with the
public view and `seat_private`."""

from __future__ import annotations

from electric.common.v1 import tournament_pb2
from electric.table.v1 import table_pb2
from electric_clients import convert
from electric_domain.tournament import PlayerView, Tournament, default_config
from electric_domain.tournament.timers import Phase as TimerPhase
from electric_math import simulate as sim
from electric_table.tournament import mapping
from electric_table.tournament.hand_protos import STREET_TO_PROTO
from electric_table.tournament.mapping import PRE_ACTION_TO_PROTO
from electric_table.tournament.runtime import TableRuntime
from electric_table.tournament.story import pots_proto
from electric_table.tournament.views import build_view, legal_actions_proto, watch_view

from tests.support.table_kit import table_info

LINEUPS = [
    ("random", "tag", "timeout"),
    ("sitout", "random", "random"),
    ("tag", "tag", "random"),
    ("random", "random", "random"),
]


def test_public_view_plus_each_seat_equals_the_whole_view_per_viewer() -> None:
    cfg = default_config()
    checked = {"views": 0, "own_cards": 0, "legal": 0, "deck_seed": 0}
    for index in range(8):
        holder: dict[str, TableRuntime] = {}

        def observe(t: Tournament, holder: dict[str, TableRuntime] = holder) -> None:
            rt = holder.get("rt")
            if rt is None or rt.tournament is not t:
                rt = holder["rt"] = TableRuntime("t-1", table_info(t), t.config, t, 0)
            batch = t.history[rt.version :]
            for m in mapping.to_protos(
                batch,
                rt.info,
                t.hand_facts(batch),
                level_ms=t.config.level_duration_ms,
                multiplier=t.state.multiplier,
                prize_pool_cents=t.state.prize_pool_cents,
                buy_in_cents=t.state.buy_in_cents,
            ):
                rt.version += 1
                rt.story.feed(rt.version, m.message)
            now = t.state.now
            for viewer in [*(s.player_id for s in t.state.seats), "an-observer"]:
                want = _reference_view(rt, viewer, now)
                got = build_view(rt, viewer, now)
                assert got == want, (viewer, rt.version)
                assert watch_view(rt, viewer, now) == want, (viewer, rt.version)
                checked["views"] += 1
                checked["own_cards"] += any(s.hole_cards for s in got.seats)
                checked["legal"] += bool(got.legal_actions)
                checked["deck_seed"] += bool(got.hand.deck_seed)
            for seat in range(len(t.state.seats)):
                whole, mine = t.view(seat, now), t.seat_private(seat)
                assert whole.legal == mine.legal and whole.time_bank_ms == mine.time_bank_ms
                assert whole.pre_actions == mine.pre_actions
                assert whole.pre_action == mine.pre_action
                assert whole.seats[seat].hole_cards in ((), mine.hole_cards)

        sim.play(
            cfg, sim.tournament_seed(26, index), sim.make_bots(LINEUPS[index % 4]), observe=observe
        )
    assert checked["views"] > 2_000 and min(checked.values()) > 50, checked


def _reference_view(rt: TableRuntime, viewer: str, now_ms: int) -> table_pb2.TableView:
    """The view as built before issue 26: the domain's whole view per viewer."""
    info = rt.info
    my = rt.seat_of(viewer)
    v = rt.tournament.view(my, now_ms)
    seats = [
        table_pb2.SeatView(
            seat=info.no(s.seat),
            player_id=s.player_id,
            display_name=info.seats[s.seat].display_name,
            stack=s.stack,
            street_bet=s.street_bet,
            folded=s.folded,
            all_in=s.all_in,
            sitting_out=s.sitting_out,
            eliminated=s.eliminated,
            has_cards=s.has_cards,
            hole_cards=[convert.card_of_text(c) for c in s.hole_cards],
            time_bank=convert.ms_duration(s.bank_ms),
            finishing_place=min(s.places) if s.places else 0,
        )
        for s in v.seats
    ]
    if v.has_hand:
        for sv in seats:
            last = rt.story.last_action.get(sv.seat)
            if last is not None:
                sv.last_action = last.action
                sv.last_action_amount = last.amount_added
                sv.last_action_street = last.street
    view = table_pb2.TableView(
        table_id=rt.table_id,
        table_name=info.table_name,
        status=(
            table_pb2.TABLE_STATUS_FINISHED
            if v.finished
            else (table_pb2.TABLE_STATUS_RUNNING if v.hand_no else table_pb2.TABLE_STATUS_STARTING)
        ),
        version=rt.version,
        seats=seats,
        electric_mode=v.electric_mode,
        your_seat=info.no(my) if my is not None else 0,
        multiplier=v.multiplier,
        prize_pool=convert.usd(v.prize_pool_cents),
        buy_in=convert.usd(v.buy_in_cents),
        server_time=convert.ms_timestamp(now_ms),
        clock_remaining=convert.ms_duration(v.clock_remaining_ms),
        your_time_bank=convert.ms_duration(v.time_bank_ms),
        hand_number=v.hand_no,
        action_seq=v.action_seq,
    )
    view.level.CopyFrom(
        tournament_pb2.BlindLevel(
            level=v.level,
            small_blind=v.small_blind,
            big_blind=v.big_blind,
            ante=v.ante,
            duration=convert.ms_duration(v.level_ms),
        )
    )
    if v.level_ends_at is not None:
        view.level_ends_at.CopyFrom(convert.ms_timestamp(v.level_ends_at))
    if v.has_hand:
        view.hand.CopyFrom(_reference_hand(rt, v, seated=my is not None))
    if my is not None and not v.finished:
        if v.legal is not None:
            view.legal_actions.extend(
                legal_actions_proto(v.legal, street_bet=v.legal.street_bet, opening=v.legal.is_bet)
            )
        view.pre_actions_offered.extend(
            PRE_ACTION_TO_PROTO[a] for a in sorted(v.pre_actions, key=lambda a: a.value)
        )
        if v.pre_action is not None:
            view.your_pre_action = PRE_ACTION_TO_PROTO[v.pre_action.action]
    return view


def _reference_hand(rt: TableRuntime, v: PlayerView, *, seated: bool) -> table_pb2.HandView:
    info = rt.info
    assert v.button is not None and v.small_blind_seat is not None
    assert v.big_blind_seat is not None
    live = v.hand_in_progress
    hv = table_pb2.HandView(
        hand_number=v.hand_no,
        action_seq=v.action_seq,
        button_seat=info.no(v.button),
        small_blind_seat=info.no(v.small_blind_seat),
        big_blind_seat=info.no(v.big_blind_seat),
        street=STREET_TO_PROTO[v.street] if v.street is not None else table_pb2.STREET_SHOWDOWN,
        board=[convert.card_of_text(c) for c in v.board],
        to_act_seat=info.no(v.actor) if (live and v.actor is not None) else 0,
        current_bet=v.current_bet,
        deck_commitment=v.deck_commitment,
        in_progress=live,
        pot_total=v.pot,
        electric=v.electric_hand,
    )
    story = rt.story
    if live:
        # Chips collected from earlier streets, as main and side pots (this street's bets are
        # in SeatView.street_bet; pot_total = both).
        pots = story.collected_pots() if story.hand_number == v.hand_no else []
        if sum(a for a, _ in pots) == v.collected:
            hv.pots.extend(pots_proto(pots))
        else:  # a story that is not this hand's (cannot happen once fed): one pot
            hv.pots.append(
                table_pb2.Pot(
                    index=0,
                    amount=v.collected,
                    eligible_seats=[info.no(s.seat) for s in v.seats if s.in_hand],
                )
            )
    elif story.hand_number == v.hand_no:
        hv.awards.extend(story.awards)
        if seated:
            hv.deck_seed = story.deck_seed
    if live and v.deadline is not None:
        hv.act_deadline.CopyFrom(convert.ms_timestamp(v.deadline.at))
        hv.time_bank_running = v.deadline.phase is TimerPhase.BANK
        if v.actor_min_raise_to is not None:
            hv.min_raise_to = v.actor_min_raise_to
        ring = table_pb2.TurnTimer(
            seat=info.no(v.deadline.seat),
            action_timer=convert.ms_duration(v.action_timer_ms),
            time_bank_remaining=convert.ms_duration(v.actor_bank_ms),
            time_bank_in_use=hv.time_bank_running,
            deadline=convert.ms_timestamp(v.deadline.at),
        )
        if v.turn_started_at is not None:
            ring.turn_started_at.CopyFrom(convert.ms_timestamp(v.turn_started_at))
        hv.turn_timer.CopyFrom(ring)
    return hv

"""Player-private views of a table (`TableView`), rendered from the domain's `PlayerView`.

What a viewer may see — hole-card privacy included — is decided by the domain
(`electric_domain.tournament.view`); this module only converts it to protobuf and adds the
table's seating and stream version. Observers, operators and auditors get the public view
of a player without a seat; auditors read everything from the event topics.
"""

from __future__ import annotations

from electric.common.v1 import tournament_pb2
from electric.table.v1 import table_pb2
from electric_clients import convert
from electric_domain.tournament import PlayerView
from electric_domain.tournament.hand_port import Legal
from electric_domain.tournament.timers import Phase as TimerPhase

from electric_table.store import repo
from electric_table.tournament.hand_protos import STREET_TO_PROTO
from electric_table.tournament.mapping import PRE_ACTION_TO_PROTO
from electric_table.tournament.runtime import TableRuntime
from electric_table.tournament.story import pots_proto

_STATUS = {
    repo.TableStatus.STARTING: table_pb2.TABLE_STATUS_STARTING,
    repo.TableStatus.INVALID: table_pb2.TABLE_STATUS_STARTING,
    repo.TableStatus.RUNNING: table_pb2.TABLE_STATUS_RUNNING,
    repo.TableStatus.FINISHED: table_pb2.TABLE_STATUS_FINISHED,
}


def build_view(rt: TableRuntime, viewer: str, now_ms: int) -> table_pb2.TableView:
    """``viewer``'s view of ``rt`` at ``now_ms`` (GetTable, a command's answer)."""
    return with_seat(public_view(rt, now_ms), rt, viewer)


def watch_view(rt: TableRuntime, viewer: str, now_ms: int) -> table_pb2.TableView:
    """The view pushed to ``viewer``'s watch: the public part is built once per stored
    change and shared by every watcher of the table (``rt.public``); each adds only its own
    part (issue 26). Between changes nothing is pushed, so the view is the table as of its
    change (``server_time`` says when)."""
    cached = rt.public
    if cached is None or cached[0] != rt.version:
        cached = rt.public = (rt.version, public_view(rt, now_ms))
        rt.views_built += 1
    return with_seat(cached[1], rt, viewer)


def with_seat(public: table_pb2.TableView, rt: TableRuntime, viewer: str) -> table_pb2.TableView:
    """``public`` (not changed) with ``viewer``'s own part: their seat, hole cards, time
    bank, the last hand's deck seed, legal and pre-turn actions (the domain's
    `SeatPrivate`). An observer's view is the public one."""
    my = rt.seat_of(viewer)
    if my is None:
        return public
    mine = rt.tournament.seat_private(my)
    view = table_pb2.TableView()
    view.CopyFrom(public)
    view.your_seat = rt.info.no(my)
    view.your_time_bank.CopyFrom(convert.ms_duration(mine.time_bank_ms))
    if mine.hole_cards:
        for sv in view.seats:
            if sv.seat == view.your_seat:
                del sv.hole_cards[:]
                sv.hole_cards.extend(convert.card_of_text(c) for c in mine.hole_cards)
    story = rt.story
    hand = view.hand
    if view.HasField("hand") and not hand.in_progress and story.hand_number == hand.hand_number:
        hand.deck_seed = story.deck_seed
    if not rt.tournament.state.finished:
        if mine.legal is not None:
            legal = mine.legal
            view.legal_actions.extend(
                legal_actions_proto(legal, street_bet=legal.street_bet, opening=legal.is_bet)
            )
        view.pre_actions_offered.extend(
            PRE_ACTION_TO_PROTO[a] for a in sorted(mine.pre_actions, key=lambda a: a.value)
        )
        if mine.pre_action is not None:
            view.your_pre_action = PRE_ACTION_TO_PROTO[mine.pre_action.action]
    return view


def public_view(rt: TableRuntime, now_ms: int) -> table_pb2.TableView:
    """What anyone may see of ``rt`` at ``now_ms`` (an observer's view)."""
    info = rt.info
    v = rt.tournament.view(None, now_ms)
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
        view.hand.CopyFrom(_hand_view(rt, v))
    return view


def _hand_view(rt: TableRuntime, v: PlayerView) -> table_pb2.HandView:
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
        hv.awards.extend(story.awards)  # (the deck seed: the seated players', `with_seat`)
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


def legal_actions_proto(
    legal: Legal, *, street_bet: int, opening: bool
) -> list[table_pb2.LegalAction]:
    """The engine's `Legal` as offered to the player (amounts = street total after it).

    ALL_IN is offered only when the engine accepts it: as a raise (a bet/raise is open,
    ``min_raise_to`` set; all-in = ``max_raise_to``) or as a call that takes the whole stack
    (``call_amount == stack``). After a short all-in that does not reopen the betting the
    player may only call or fold; a covered stack then has no all-in (it would be a raise)."""
    bet = street_bet
    out: list[table_pb2.LegalAction] = []
    if legal.can_fold:
        out.append(table_pb2.LegalAction(type=table_pb2.ACTION_TYPE_FOLD))
    if legal.can_check:
        out.append(table_pb2.LegalAction(type=table_pb2.ACTION_TYPE_CHECK))
    if legal.call_amount > 0:
        to = bet + legal.call_amount
        out.append(
            table_pb2.LegalAction(type=table_pb2.ACTION_TYPE_CALL, min_amount=to, max_amount=to)
        )
    can_raise = legal.min_raise_to is not None and legal.max_raise_to is not None
    if legal.min_raise_to is not None and legal.max_raise_to is not None:
        kind = table_pb2.ACTION_TYPE_BET if opening else table_pb2.ACTION_TYPE_RAISE
        out.append(
            table_pb2.LegalAction(
                type=kind, min_amount=legal.min_raise_to, max_amount=legal.max_raise_to
            )
        )
    all_in_call = 0 < legal.call_amount == legal.stack
    if legal.stack > 0 and (can_raise or all_in_call):
        to = bet + legal.stack
        out.append(
            table_pb2.LegalAction(type=table_pb2.ACTION_TYPE_ALL_IN, min_amount=to, max_amount=to)
        )
    return out


def row_view(row: repo.TableRow, caller: str) -> table_pb2.TableView:
    """View of a table that has no playable tournament (read model only)."""
    your_seat = next((s.seat for s in row.seats if s.player_id == caller), 0)
    return table_pb2.TableView(
        table_id=row.table_id,
        table_name=row.table_name,
        status=_STATUS.get(row.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        version=row.stream_version,
        seats=[
            table_pb2.SeatView(
                seat=s.seat, player_id=s.player_id, display_name=s.display_name, stack=s.stack
            )
            for s in row.seats
        ],
        your_seat=your_seat,
        multiplier=row.multiplier,
        prize_pool=convert.usd(row.prize_pool_cents),
        buy_in=convert.usd(row.buy_in_cents),
    )

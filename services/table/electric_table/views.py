"""Player-private views of a live table (`TableView`), built from the aggregate in memory.

Privacy (DESIGN §8): hole cards appear only for the viewer's own seat, or for a seat whose
cards the engine exposed (showdown order, or every hand once all-in with no more betting).
Observers, operators and auditors get the same public view as a player without a seat —
nobody's hole cards until exposed; auditors read everything from the event topics.
"""

from __future__ import annotations

from typing import Any

from electric.common.v1 import tournament_pb2
from electric.table.v1 import table_pb2
from electric_domain.holdem.state import Phase
from electric_domain.tournament import schedule as sch
from electric_domain.tournament.hand_port import Legal
from electric_domain.tournament.timers import Phase as TimerPhase

from electric_table import mapping
from electric_table.runtime import TableRuntime

_STREETS = [
    table_pb2.STREET_PREFLOP,
    table_pb2.STREET_FLOP,
    table_pb2.STREET_TURN,
    table_pb2.STREET_RIVER,
]


def _engine(rt: TableRuntime) -> tuple[Any, Any]:
    """(adapted hand, engine state) of the current/last hand, or (None, None)."""
    hand = rt.tournament.state.hand
    if hand is None:
        return None, None
    return hand, hand.state


def build_view(rt: TableRuntime, viewer: str, now_ms: int) -> table_pb2.TableView:
    """``viewer``'s view of ``rt`` at ``now_ms``."""
    t = rt.tournament
    st = t.state
    info = rt.info
    my = rt.seat_of(viewer)
    live = st.hand is not None and not st.hand_over and st.hand_no > 0
    hand, hs = _engine(rt)
    shown: dict[int, tuple[str, ...]] = dict(t.port.shown(hand)) if hs is not None else {}
    seats: list[table_pb2.SeatView] = []
    for i, s in enumerate(st.seats):
        p = hand.index[i] if hand is not None and i < len(hand.index) else -1
        in_engine = hs is not None and p >= 0
        stack = hs.stacks[p] if (live and in_engine) else s.stack
        cards: list[Any] = []
        if in_engine and hs.hole[p] and (i == my or i in shown):
            texts = t.port.hole_cards(hand, i) if i == my else shown[i]
            cards = [mapping.card_text(c) for c in texts]
        folded = bool(in_engine and hs.folded[p])
        seats.append(
            table_pb2.SeatView(
                seat=info.no(i),
                player_id=s.player_id,
                display_name=info.seats[i].display_name,
                stack=stack,
                street_bet=hs.bets[p] if (live and in_engine) else 0,
                folded=folded and live,
                all_in=bool(live and in_engine and not folded and hs.stacks[p] == 0),
                sitting_out=s.sitting_out,
                eliminated=s.eliminated,
                has_cards=bool(live and in_engine and not folded and hs.hole[p]),
                hole_cards=cards,
                time_bank=mapping.ms_duration(s.bank_ms),
                finishing_place=min(s.places) if s.places else 0,
            )
        )
    view = table_pb2.TableView(
        table_id=rt.table_id,
        table_name=info.table_name,
        status=(
            table_pb2.TABLE_STATUS_FINISHED
            if st.finished
            else (table_pb2.TABLE_STATUS_RUNNING if st.hand_no else table_pb2.TABLE_STATUS_STARTING)
        ),
        version=rt.version,
        seats=seats,
        electric_mode=st.electric_mode or st.clock_expired,
        your_seat=info.no(my) if my is not None else 0,
        multiplier=st.multiplier,
        prize_pool=mapping.usd(st.prize_pool_cents),
        buy_in=mapping.usd(st.buy_in_cents),
        server_time=mapping.ms_timestamp(now_ms),
        clock_remaining=mapping.ms_duration(
            sch.remaining_ms(now_ms - st.started_at, st.level_ms, st.levels)
        ),
        your_time_bank=mapping.ms_duration(st.seats[my].bank_ms if my is not None else 0),
        hand_number=rt.projector.hand_no,
        action_seq=rt.projector.next_action_seq,
    )
    lvl = max(st.level, 1)
    bl = rt.config.blind_levels[lvl - 1]
    view.level.CopyFrom(
        tournament_pb2.BlindLevel(
            level=lvl,
            small_blind=bl.small_blind,
            big_blind=bl.big_blind,
            ante=bl.ante,
            duration=mapping.ms_duration(st.level_ms),
        )
    )
    if not st.clock_expired:
        view.level_ends_at.CopyFrom(mapping.ms_timestamp(st.started_at + st.level * st.level_ms))
    if st.hand_no > 0 and hs is not None and st.positions is not None:
        view.hand.CopyFrom(_hand_view(rt, hs, live))
    if my is not None and not st.finished:
        legal = t.legal_actions(my)
        if legal is not None and hs is not None:
            view.legal_actions.extend(_legal(legal, hs, hand.index[my]))
        view.pre_actions_offered.extend(
            mapping.PRE_ACTION_TO_PROTO[a]
            for a in sorted(t.pre_actions_available(my), key=lambda a: a.value)
        )
        sel = st.seats[my].preaction
        if sel is not None:
            view.your_pre_action = mapping.PRE_ACTION_TO_PROTO[sel.action]
    return view


def _hand_view(rt: TableRuntime, hs: Any, live: bool) -> table_pb2.HandView:
    st = rt.tournament.state
    info = rt.info
    pos = st.positions
    assert pos is not None
    if not live or hs.phase in (Phase.SHOWDOWN, Phase.COMPLETE):
        street = table_pb2.STREET_SHOWDOWN
    else:
        street = _STREETS[min(hs.street, 3)]
    hv = table_pb2.HandView(
        hand_number=st.hand_no,
        action_seq=rt.projector.next_action_seq,
        button_seat=info.no(pos.button),
        small_blind_seat=info.no(pos.small_blind),
        big_blind_seat=info.no(pos.big_blind),
        street=street,
        board=[mapping.card(c) for c in hs.board],
        to_act_seat=info.no(st.turn.seat) if (live and st.turn is not None) else 0,
        current_bet=max(hs.bets) if live else 0,
        deck_commitment=rt.projector.commitment,
        in_progress=live,
        pot_total=hs.pot_total if live else 0,
        electric=st.electric_hand,
    )
    if live:
        # Chips collected from earlier streets; this street's bets are in SeatView.street_bet
        # (pot_total = both). Side pots are not split out in the view (they are in PotAwarded).
        hv.pots.append(
            table_pb2.Pot(
                index=0,
                amount=hs.pot_total - sum(hs.bets),
                eligible_seats=[
                    info.no(s)
                    for s in range(len(st.seats))
                    if (p := st.hand.index[s]) >= 0 and not hs.folded[p]
                ],
            )
        )
    if live and st.turn is not None:
        hv.act_deadline.CopyFrom(mapping.ms_timestamp(st.turn.deadline))
        hv.time_bank_running = st.turn.phase is TimerPhase.BANK
        legal = rt.tournament.legal_actions(st.turn.seat)
        if legal is not None and legal.min_raise_to is not None:
            hv.min_raise_to = legal.min_raise_to
    return hv


def _legal(legal: Legal, hs: Any, p: int) -> list[table_pb2.LegalAction]:
    return legal_actions_proto(legal, street_bet=hs.bets[p], opening=max(hs.bets) == 0)


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

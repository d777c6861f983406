"""Domain events of the tournament aggregate → ``electric.table.v1`` event protos.

One stored event per domain event, in the aggregate's order. Each proto carries the domain
event's canonical record (`records`), the replay source; the typed fields are a projection
for consumers (payout, bots, auditors). Every typed field comes from the domain event itself
(hand and action numbers, amounts, streets, reasons) or from the table's seating
(`TableInfo`); engine events come stated in table terms by the domain (`HandFact`). Nothing
here follows the stream: a batch maps the same way live and on replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from electric.common.v1 import tournament_pb2
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_clients.convert import ms_duration, ms_timestamp, usd
from electric_domain.holdem.moves import Move
from electric_domain.tournament import Progress
from electric_domain.tournament import events as dev
from electric_domain.tournament.hand_port import HandFact
from electric_domain.tournament.preaction import PreAction
from google.protobuf.message import Message

from electric_table.tournament import codec
from electric_table.tournament.hand_protos import STREET_TO_PROTO, hand_proto
from electric_table.tournament.records import Mapped, decode_record, domain_of, record
from electric_table.tournament.tableinfo import CommandKind, RequestContext, SeatInfo, TableInfo

__all__ = [
    "PRE_ACTION_FROM_PROTO",
    "PRE_ACTION_TO_PROTO",
    "Mapped",
    "RequestContext",
    "SeatInfo",
    "TableInfo",
    "decode_record",
    "domain_of",
    "progress_proto",
    "to_protos",
]

PRE_ACTION_TO_PROTO = {
    PreAction.FOLD: table_pb2.PRE_ACTION_TYPE_FOLD,
    PreAction.CHECK_FOLD: table_pb2.PRE_ACTION_TYPE_CHECK_FOLD,
    PreAction.CHECK: table_pb2.PRE_ACTION_TYPE_CHECK,
    PreAction.CALL: table_pb2.PRE_ACTION_TYPE_CALL,
    PreAction.ALL_IN: table_pb2.PRE_ACTION_TYPE_ALL_IN,
    PreAction.BET: table_pb2.PRE_ACTION_TYPE_BET,
}
PRE_ACTION_FROM_PROTO = {v: k for k, v in PRE_ACTION_TO_PROTO.items()}

#: A player's move on the wire: one action type per move (BET and RAISE distinct).
MOVE_TO_PROTO = {
    Move.FOLD: table_pb2.ACTION_TYPE_FOLD,
    Move.CHECK: table_pb2.ACTION_TYPE_CHECK,
    Move.CALL: table_pb2.ACTION_TYPE_CALL,
    Move.BET: table_pb2.ACTION_TYPE_BET,
    Move.RAISE_TO: table_pb2.ACTION_TYPE_RAISE,
    Move.ALL_IN: table_pb2.ACTION_TYPE_ALL_IN,
}
MOVE_FROM_PROTO = {v: k for k, v in MOVE_TO_PROTO.items()}

#: `Mapped.domain_type` of a `TableProgress` (it has no domain event).
PROGRESS_TYPE = "TableProgress"

_CAUSE = {
    dev.Cause.PLAYER: tev.ACTION_SOURCE_PLAYER,
    dev.Cause.PRE_ACTION: tev.ACTION_SOURCE_PRE_ACTION,
    dev.Cause.TIMEOUT: tev.ACTION_SOURCE_TIMEOUT,
    dev.Cause.SITTING_OUT: tev.ACTION_SOURCE_SITTING_OUT,
    dev.Cause.ELECTRIC: tev.ACTION_SOURCE_ELECTRIC_MODE,
}
_CLEAR_REASON = {
    dev.UnselectReason.PLAYER: tev.PRE_ACTION_CLEAR_REASON_PLAYER,
    dev.UnselectReason.BET: tev.PRE_ACTION_CLEAR_REASON_UNSELECTED_BY_BET,
    dev.UnselectReason.EXECUTED: tev.PRE_ACTION_CLEAR_REASON_APPLIED,
    dev.UnselectReason.ROUND_END: tev.PRE_ACTION_CLEAR_REASON_ROUND_ENDED,
    dev.UnselectReason.SITTING_OUT: tev.PRE_ACTION_CLEAR_REASON_SAT_OUT,
}
_SIT_OUT_REASON = {
    dev.SitOutReason.PLAYER: tev.SIT_OUT_REASON_PLAYER,
    dev.SitOutReason.TIMEOUTS: tev.SIT_OUT_REASON_TIMEOUT,
}
_TIMEOUT_KIND = {
    dev.TimeoutKind.ACTION_TIMER: tev.TIMEOUT_KIND_ACTION_TIMER_EXPIRED,
    dev.TimeoutKind.TIME_BANK: tev.TIMEOUT_KIND_TIME_BANK_EXHAUSTED,
}


@dataclass(frozen=True)
class Tournament:
    """Tournament-wide values some table events repeat (from the aggregate's state)."""

    level_ms: int
    multiplier: int
    prize_pool_cents: int
    buy_in_cents: int


@dataclass
class _Batch:
    """One batch being mapped: the seating, the request, the tournament values."""

    info: TableInfo
    ctx: RequestContext
    tournament: Tournament
    player_request_used: bool = False

    def request_for(self, kind: CommandKind, applies: bool = True) -> str:
        return self.ctx.request_id if applies and self.ctx.kind is kind else ""


def to_protos(
    events: Sequence[Any],
    info: TableInfo,
    facts: Sequence[HandFact | None],
    ctx: RequestContext | None = None,
    *,
    level_ms: int,
    multiplier: int,
    prize_pool_cents: int,
    buy_in_cents: int,
) -> list[Mapped]:
    """Map a batch of new domain events (in order) to table events. ``facts`` are the
    domain's statements of the batch's engine events (`Tournament.hand_facts`), in order."""
    batch = _Batch(
        info,
        ctx or RequestContext(),
        Tournament(level_ms, multiplier, prize_pool_cents, buy_in_cents),
    )
    hand_facts: Iterator[HandFact | None] = iter(facts)
    out: list[Mapped] = []
    for e in events:
        if isinstance(e, dev.HandEvent):
            msg, secret = hand_proto(e, next(hand_facts, None), info)
            out.append(Mapped(msg, codec.type_tag(e), secret))
            continue
        build = _BUILDERS.get(type(e))
        if build is None:  # pragma: no cover - exhaustive over the domain's events
            raise codec.CodecError(f"no table event for {type(e).__name__}")
        out.append(Mapped(build(e, batch), codec.type_tag(e)))
    return out


def progress_proto(progress: Progress, info: TableInfo) -> Mapped:
    """The `TableProgress` summing up an append (proto doc): no domain record (a summary of
    the state, not a replay source)."""
    msg = tev.TableProgress(
        table_id=info.table_id,
        hand_number=progress.hand_no,
        stacks=_stacks(info, progress.stacks),
        turn_seat=0 if progress.turn_seat is None else info.no(progress.turn_seat),
    )
    if progress.turn_deadline is not None:
        msg.turn_deadline.CopyFrom(ms_timestamp(progress.turn_deadline))
    return Mapped(msg, PROGRESS_TYPE)


def _blind_level(level: int, sb: int, bb: int, ante: int, level_ms: int) -> Any:
    return tournament_pb2.BlindLevel(
        level=level, small_blind=sb, big_blind=bb, ante=ante, duration=ms_duration(level_ms)
    )


def _stacks(info: TableInfo, stacks: Sequence[int]) -> list[tev.SeatStack]:
    return [
        tev.SeatStack(seat=info.no(s), player_id=info.player(s), stack=x)
        for s, x in enumerate(stacks)
    ]


def _started(e: dev.TournamentStarted, b: _Batch) -> Message:
    info = b.info
    return tev.TableStarted(
        table_id=info.table_id,
        table_name=info.table_name,
        seats=[
            tournament_pb2.SeatAssignment(
                seat=s.seat, player_id=s.player_id, entry_id=s.entry_id, display_name=s.display_name
            )
            for s in info.seats
        ],
        starting_stack=e.starting_stack,
        action_timer=ms_duration(info.action_timer_ms),
        time_bank=ms_duration(e.time_bank_ms),
        multiplier=e.multiplier,
        prize_pool=usd(e.prize_pool_cents),
        buy_in=usd(e.buy_in_cents),
        source_event_id=info.source_event_id,
        first_button_seat=info.no(e.first_button),
        domain=record(e),
    )


def _level(e: dev.LevelAdvanced, b: _Batch) -> Message:
    return tev.LevelAdvanced(
        table_id=b.info.table_id,
        level=_blind_level(e.level, e.small_blind, e.big_blind, e.ante, b.tournament.level_ms),
        domain=record(e),
    )


def _clock(e: dev.ClockExpired, b: _Batch) -> Message:
    return tev.TournamentClockExpired(
        table_id=b.info.table_id, hand_number=e.hand_no, domain=record(e)
    )


def _electric(e: dev.ElectricModeStarted, b: _Batch) -> Message:
    return tev.ElectricModeStarted(
        table_id=b.info.table_id, from_hand_number=e.hand_no, domain=record(e)
    )


def _hand_started(e: dev.HandStarted, b: _Batch) -> Message:
    info = b.info
    return tev.HandStarted(
        table_id=info.table_id,
        hand_number=e.hand_no,
        button_seat=info.no(e.button),
        small_blind_seat=info.no(e.small_blind_seat),
        big_blind_seat=info.no(e.big_blind_seat),
        level=_blind_level(e.level, e.small_blind, e.big_blind, e.ante, b.tournament.level_ms),
        stacks=_stacks(info, e.stacks),
        deck_commitment=e.deck_commitment,
        electric_mode=e.electric,
        domain=record(e),
    )


def _turn(e: dev.TurnStarted, b: _Batch) -> Message:
    return tev.TurnStarted(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        action_seq=e.action_seq,
        seat=b.info.no(e.seat),
        deadline=ms_timestamp(e.deadline),
        started_at=ms_timestamp(e.at),
        domain=record(e),
    )


def _bank(e: dev.TimeBankStarted, b: _Batch) -> Message:
    return tev.TimeoutApplied(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        action_seq=e.action_seq,
        seat=b.info.no(e.seat),
        kind=tev.TIMEOUT_KIND_TIME_BANK_STARTED,
        time_bank_remaining=ms_duration(e.deadline - e.at),
        deadline=ms_timestamp(e.deadline),
        domain=record(e),
    )


def _timed_out(e: dev.TimedOut, b: _Batch) -> Message:
    return tev.TimeoutApplied(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        action_seq=e.action_seq,
        seat=b.info.no(e.seat),
        kind=_TIMEOUT_KIND[e.kind],
        time_bank_remaining=ms_duration(0),
        domain=record(e),
    )


def _action(e: dev.ActionTaken, b: _Batch) -> Message:
    request_id = ""
    if (
        b.ctx.kind is CommandKind.ACT
        and e.cause is dev.Cause.PLAYER
        and e.seat == b.ctx.seat
        and not b.player_request_used
    ):
        request_id = b.ctx.request_id
        b.player_request_used = True
    return tev.ActionTaken(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        action_seq=e.action_seq,
        seat=b.info.no(e.seat),
        player_id=b.info.player(e.seat),
        action=MOVE_TO_PROTO[e.move],
        amount_added=e.amount_added,
        street_bet=e.street_bet,
        all_in=e.all_in,
        source=_CAUSE[e.cause],
        request_id=request_id,
        street=STREET_TO_PROTO[e.street],
        time_bank_remaining=ms_duration(e.bank_ms_after),
        domain=record(e),
    )


def _pre_action_set(e: dev.PreActionSelected | dev.PreActionChanged, b: _Batch) -> Message:
    player = isinstance(e, dev.PreActionSelected)
    return tev.PreActionSet(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        seat=b.info.no(e.seat),
        pre_action=PRE_ACTION_TO_PROTO[e.action],
        call_amount=e.to_call,
        reason=tev.PRE_ACTION_SET_REASON_PLAYER if player else tev.PRE_ACTION_SET_REASON_CONVERTED,
        request_id=b.request_for(CommandKind.PRE_ACTION, player),
        domain=record(e),
    )


def _pre_action_cleared(e: dev.PreActionUnselected, b: _Batch) -> Message:
    by_player = e.reason is dev.UnselectReason.PLAYER
    return tev.PreActionCleared(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        seat=b.info.no(e.seat),
        pre_action=(
            PRE_ACTION_TO_PROTO[e.action]
            if e.action is not None
            else table_pb2.PRE_ACTION_TYPE_UNSPECIFIED
        ),
        reason=_CLEAR_REASON[e.reason],
        request_id=b.request_for(CommandKind.CLEAR_PRE_ACTION, by_player),
        domain=record(e),
    )


def _sat_out(e: dev.SatOut, b: _Batch) -> Message:
    return tev.PlayerSatOut(
        table_id=b.info.table_id,
        seat=b.info.no(e.seat),
        player_id=b.info.player(e.seat),
        reason=_SIT_OUT_REASON[e.reason],
        request_id=b.request_for(CommandKind.SIT_OUT, e.reason is dev.SitOutReason.PLAYER),
        domain=record(e),
    )


def _sat_in(e: dev.SatIn, b: _Batch) -> Message:
    return tev.PlayerSatIn(
        table_id=b.info.table_id,
        seat=b.info.no(e.seat),
        player_id=b.info.player(e.seat),
        request_id=b.request_for(CommandKind.SIT_IN),
        domain=record(e),
    )


def _hand_ended(e: dev.HandEnded, b: _Batch) -> Message:
    return tev.HandEnded(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        deck_seed=e.deck_seed_hex,
        deck_commitment=e.deck_commitment,
        stacks=_stacks(b.info, e.stacks),
        domain=record(e),
    )


def _eliminated(e: dev.PlayerEliminated, b: _Batch) -> Message:
    return tev.PlayerEliminated(
        table_id=b.info.table_id,
        hand_number=e.hand_no,
        seat=b.info.no(e.seat),
        player_id=b.info.player(e.seat),
        finishing_place=min(e.places),
        stack_at_hand_start=e.start_stack,
        entry_id=b.info.seats[e.seat].entry_id,
        domain=record(e),
    )


def _finished(e: dev.TournamentFinished, b: _Batch) -> Message:
    """Places and prizes exactly as the domain decided them (payout credits these)."""
    info, t = b.info, b.tournament
    order = sorted(range(len(e.places)), key=lambda s: (min(e.places[s]), s))
    busted_in = e.eliminated_in or (0,) * len(e.places)
    return tev.TournamentFinished(
        table_id=info.table_id,
        tournament_id=info.table_id,
        places=[
            tev.FinishingPlace(
                place=min(e.places[s]),
                seat=info.no(s),
                player_id=info.player(s),
                entry_id=info.seats[s].entry_id,
                tied_count=len(e.places[s]),
                eliminated_in_hand=busted_in[s],
                shared_places=sorted(e.places[s]),
                prize=usd(e.prizes_cents[s]),
            )
            for s in order
        ],
        hands_played=e.hands,
        multiplier=t.multiplier,
        prize_pool=usd(t.prize_pool_cents),
        buy_in=usd(t.buy_in_cents),
        domain=record(e),
    )


_BUILDERS: dict[type, Callable[[Any, _Batch], Message]] = {
    dev.TournamentStarted: _started,
    dev.LevelAdvanced: _level,
    dev.ClockExpired: _clock,
    dev.ElectricModeStarted: _electric,
    dev.HandStarted: _hand_started,
    dev.TurnStarted: _turn,
    dev.TimeBankStarted: _bank,
    dev.TimedOut: _timed_out,
    dev.ActionTaken: _action,
    dev.PreActionSelected: _pre_action_set,
    dev.PreActionChanged: _pre_action_set,
    dev.PreActionUnselected: _pre_action_cleared,
    dev.SatOut: _sat_out,
    dev.SatIn: _sat_in,
    dev.HandEnded: _hand_ended,
    dev.PlayerEliminated: _eliminated,
    dev.TournamentFinished: _finished,
}

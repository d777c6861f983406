"""Domain events of the tournament aggregate ↔ ``electric.table.v1`` event protos.

One stored event per domain event, in the aggregate's order. Each proto carries the domain
event's canonical encoding (`DomainRecord`, see `codec`); replay decodes only that record,
so the typed fields are a projection for consumers (payout, bots, auditors) and can grow
without touching replay. The single secret — a hand's deck seed inside the engine adapter's
`DeckEscrowed` — is withheld from the published record (``redacted``) and kept in the table
service's own table ``table_deck_seeds`` until ``HandEnded`` reveals it.

`Projector` follows the stream (live and on replay) to number actions per hand and to fill
fields the domain events do not carry themselves (player ids, street, all-in flags).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from electric.common.v1 import cards_pb2, money_pb2, tournament_pb2
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_domain.cards import card_str
from electric_domain.holdem import events as hev
from electric_domain.tournament import events as dev
from electric_domain.tournament.engine_adapter import DeckEscrowed
from electric_domain.tournament.preaction import PreAction
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

from electric_table import codec

_RANK = {r: i + 2 for i, r in enumerate("23456789TJQKA")}
_SUIT = {"c": 1, "d": 2, "h": 3, "s": 4}

PRE_ACTION_TO_PROTO = {
    PreAction.FOLD: table_pb2.PRE_ACTION_TYPE_FOLD,
    PreAction.CHECK_FOLD: table_pb2.PRE_ACTION_TYPE_CHECK_FOLD,
    PreAction.CHECK: table_pb2.PRE_ACTION_TYPE_CHECK,
    PreAction.CALL: table_pb2.PRE_ACTION_TYPE_CALL,
    PreAction.ALL_IN: table_pb2.PRE_ACTION_TYPE_ALL_IN,
}
PRE_ACTION_FROM_PROTO = {v: k for k, v in PRE_ACTION_TO_PROTO.items()}

_CAUSE = {
    dev.Cause.PLAYER: tev.ACTION_SOURCE_PLAYER,
    dev.Cause.PRE_ACTION: tev.ACTION_SOURCE_PRE_ACTION,
    dev.Cause.TIMEOUT: tev.ACTION_SOURCE_TIMEOUT,
    dev.Cause.SITTING_OUT: tev.ACTION_SOURCE_SITTING_OUT,
    dev.Cause.ELECTRIC: tev.ACTION_SOURCE_ELECTRIC_MODE,
}
_CLEAR_REASON = {
    "player": tev.PRE_ACTION_CLEAR_REASON_PLAYER,
    "bet": tev.PRE_ACTION_CLEAR_REASON_UNSELECTED_BY_BET,
    "executed": tev.PRE_ACTION_CLEAR_REASON_APPLIED,
    "round_end": tev.PRE_ACTION_CLEAR_REASON_ROUND_ENDED,
    "sitting_out": tev.PRE_ACTION_CLEAR_REASON_SAT_OUT,
}
_STREET_BY_BOARD = {
    3: table_pb2.STREET_FLOP,
    4: table_pb2.STREET_TURN,
    5: table_pb2.STREET_RIVER,
}


def card(c: int) -> cards_pb2.Card:
    """Proto card of an engine card index."""
    text = card_str(c)
    return cards_pb2.Card(
        rank=_RANK[text[0]],  # type: ignore[arg-type]
        suit=_SUIT[text[1]],  # type: ignore[arg-type]
        text=text,
    )


def card_text(text: str) -> cards_pb2.Card:
    """Proto card of ``"As"``-style text."""
    return cards_pb2.Card(
        rank=_RANK[text[0]],  # type: ignore[arg-type]
        suit=_SUIT[text[1]],  # type: ignore[arg-type]
        text=text,
    )


def ms_duration(ms: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(ms)
    return d


def ms_timestamp(ms: int) -> timestamp_pb2.Timestamp:
    t = timestamp_pb2.Timestamp()
    t.FromMilliseconds(ms)
    return t


def usd(cents: int) -> money_pb2.Money:
    return money_pb2.Money(cents=cents, currency="USD")


@dataclass(frozen=True)
class SeatInfo:
    """A player's seat as registration assigned it (``seat`` is 1-based)."""

    seat: int
    player_id: str
    entry_id: str
    display_name: str


@dataclass(frozen=True)
class TableInfo:
    """What the mapping needs besides the domain events."""

    table_id: str
    table_name: str
    seats: tuple[SeatInfo, ...]  # index = domain seat (0-based)
    action_timer_ms: int
    source_event_id: str = ""

    def no(self, seat: int) -> int:
        """The 1-based table seat number of domain seat ``seat``."""
        return self.seats[seat].seat


@dataclass
class Projector:
    """Follows a table's domain events; numbers actions per hand (1-based, consecutive)."""

    info: TableInfo
    hand_no: int = 0
    actions: int = 0  # ActionTaken events in the current hand
    hand_live: bool = False
    electric_hand: bool = False
    engine_seats: tuple[int, ...] = ()
    commitment: str = ""
    bank_running: bool = False
    behind: dict[int, int] = field(default_factory=dict)
    street_bets: dict[int, int] = field(default_factory=dict)
    folded: set[int] = field(default_factory=set)
    board: int = 0
    board_cards: tuple[int, ...] = ()
    pre_actions: dict[int, PreAction] = field(default_factory=dict)
    eliminated_in: dict[int, int] = field(default_factory=dict)
    finished: bool = False

    @property
    def next_action_seq(self) -> int:
        return self.actions + 1

    def observe(self, e: Any) -> None:
        """Fold one domain event into the projection."""
        if isinstance(e, dev.HandStarted):
            self.hand_no = e.hand_no
            self.actions = 0
            self.hand_live = True
            self.electric_hand = e.electric
            self.commitment = e.deck_commitment
            self.bank_running = False
            self.behind = {i: s for i, s in enumerate(e.stacks) if s > 0}
            self.street_bets = {}
            self.folded = set()
            self.board = 0
            self.board_cards = ()
        elif isinstance(e, dev.HandEvent):
            self._observe_engine(e.event)
        elif isinstance(e, dev.TurnStarted):
            self.bank_running = False
        elif isinstance(e, dev.TimeBankStarted):
            self.bank_running = True
        elif isinstance(e, dev.ActionTaken):
            self.actions += 1
            self.bank_running = False
        elif isinstance(e, dev.PreActionSelected | dev.PreActionChanged):
            self.pre_actions[e.seat] = e.action
        elif isinstance(e, dev.PreActionUnselected):
            self.pre_actions.pop(e.seat, None)
        elif isinstance(e, dev.HandEnded):
            self.hand_live = False
            self.pre_actions.clear()
        elif isinstance(e, dev.PlayerEliminated):
            self.eliminated_in[e.seat] = e.hand_no
        elif isinstance(e, dev.TournamentFinished):
            self.finished = True

    def _seat(self, player: int) -> int:
        return self.engine_seats[player]

    def _observe_engine(self, ev: Any) -> None:
        if isinstance(ev, DeckEscrowed):
            self.engine_seats = ev.seats
            return
        if isinstance(ev, hev.AntePosted):
            self._pay(self._seat(ev.player), ev.amount, street=False)
        elif isinstance(ev, (hev.BlindPosted, hev.Called)):
            self._pay(self._seat(ev.player), ev.amount, street=True)
        elif isinstance(ev, hev.BetPlaced | hev.Raised):
            seat = self._seat(ev.player)
            self._pay(seat, ev.to - self.street_bets.get(seat, 0), street=True)
        elif isinstance(ev, hev.Folded):
            self.folded.add(self._seat(ev.player))
        elif isinstance(ev, hev.UncalledBetReturned):
            seat = self._seat(ev.player)
            self.behind[seat] = self.behind.get(seat, 0) + ev.amount
        elif isinstance(ev, hev.BoardDealt):
            self.board += len(ev.cards)
            self.board_cards = (*self.board_cards, *ev.cards)
            self.street_bets = {}
        elif isinstance(ev, hev.RoundClosed):
            self.street_bets = {}
        elif isinstance(ev, hev.PotAwarded):
            for p, share in zip(ev.winners, ev.shares, strict=False):
                seat = self._seat(p)
                self.behind[seat] = self.behind.get(seat, 0) + share

    def _pay(self, seat: int, amount: int, *, street: bool) -> None:
        self.behind[seat] = self.behind.get(seat, 0) - amount
        if street:
            self.street_bets[seat] = self.street_bets.get(seat, 0) + amount

    def any_all_in(self) -> bool:
        return any(v == 0 and s not in self.folded for s, v in self.behind.items())


@dataclass(frozen=True)
class Mapped:
    """One table event to append; ``secret_seed`` is the withheld deck seed, if any."""

    message: Message
    domain_type: str
    secret_seed: tuple[int, str] | None = None


@dataclass
class RequestContext:
    """The command a batch of events answers (request ids go into the matching events)."""

    request_id: str = ""
    seat: int = -1
    kind: str = ""  # act | pre_action | clear_pre_action | sit_out | sit_in | ""


def _record(e: Any, *, redacted: bool = False) -> tev.DomainRecord:
    tag, text = codec.encode(e)
    return tev.DomainRecord(
        type=tag, canonical_json=text, encoding_version=codec.ENCODING_VERSION, redacted=redacted
    )


def _blind_level(level: int, sb: int, bb: int, ante: int, level_ms: int) -> Any:
    return tournament_pb2.BlindLevel(
        level=level, small_blind=sb, big_blind=bb, ante=ante, duration=ms_duration(level_ms)
    )


def to_protos(
    events: list[Any],
    proj: Projector,
    ctx: RequestContext | None = None,
    *,
    level_ms: int,
    multiplier: int,
    prize_pool_cents: int,
    buy_in_cents: int,
) -> list[Mapped]:
    """Map a batch of new domain events (in order) to table events, advancing ``proj``."""
    ctx = ctx or RequestContext()
    out: list[Mapped] = []
    info = proj.info
    tid = info.table_id
    pid = [s.player_id for s in info.seats]
    player_request_used = False
    for i, e in enumerate(events):
        nxt = events[i + 1] if i + 1 < len(events) else None
        msg: Message
        secret: tuple[int, str] | None = None
        if isinstance(e, dev.TournamentStarted):
            msg = tev.TableStarted(
                table_id=tid,
                table_name=info.table_name,
                seats=[
                    tournament_pb2.SeatAssignment(
                        seat=s.seat,
                        player_id=s.player_id,
                        entry_id=s.entry_id,
                        display_name=s.display_name,
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
                domain=_record(e),
            )
        elif isinstance(e, dev.LevelAdvanced):
            msg = tev.LevelAdvanced(
                table_id=tid,
                level=_blind_level(e.level, e.small_blind, e.big_blind, e.ante, level_ms),
                domain=_record(e),
            )
        elif isinstance(e, dev.ClockExpired):
            msg = tev.TournamentClockExpired(
                table_id=tid, hand_number=proj.hand_no if proj.hand_live else 0, domain=_record(e)
            )
        elif isinstance(e, dev.ElectricModeStarted):
            msg = tev.ElectricModeStarted(
                table_id=tid, from_hand_number=e.hand_no, domain=_record(e)
            )
        elif isinstance(e, dev.HandStarted):
            msg = tev.HandStarted(
                table_id=tid,
                hand_number=e.hand_no,
                button_seat=proj.info.no(e.button),
                small_blind_seat=proj.info.no(e.small_blind_seat),
                big_blind_seat=proj.info.no(e.big_blind_seat),
                level=_blind_level(e.level, e.small_blind, e.big_blind, e.ante, level_ms),
                stacks=[
                    tev.SeatStack(seat=proj.info.no(s), player_id=pid[s], stack=x)
                    for s, x in enumerate(e.stacks)
                ],
                deck_commitment=e.deck_commitment,
                electric_mode=e.electric,
                domain=_record(e),
            )
        elif isinstance(e, dev.HandEvent):
            msg, secret = _engine_proto(e, proj)
        elif isinstance(e, dev.TurnStarted):
            msg = tev.TurnStarted(
                table_id=tid,
                hand_number=proj.hand_no,
                action_seq=proj.next_action_seq,
                seat=proj.info.no(e.seat),
                deadline=ms_timestamp(e.deadline),
                domain=_record(e),
            )
        elif isinstance(e, dev.TimeBankStarted):
            msg = tev.TimeoutApplied(
                table_id=tid,
                hand_number=proj.hand_no,
                action_seq=proj.next_action_seq,
                seat=proj.info.no(e.seat),
                kind=tev.TIMEOUT_KIND_TIME_BANK_STARTED,
                time_bank_remaining=ms_duration(e.deadline - e.at),
                domain=_record(e),
            )
        elif isinstance(e, dev.TimedOut):
            msg = tev.TimeoutApplied(
                table_id=tid,
                hand_number=proj.hand_no,
                action_seq=proj.next_action_seq,
                seat=proj.info.no(e.seat),
                kind=(
                    tev.TIMEOUT_KIND_TIME_BANK_EXHAUSTED
                    if proj.bank_running
                    else tev.TIMEOUT_KIND_ACTION_TIMER_EXPIRED
                ),
                time_bank_remaining=ms_duration(0),
                domain=_record(e),
            )
        elif isinstance(e, dev.ActionTaken):
            request_id = ""
            if (
                ctx.kind == "act"
                and e.cause is dev.Cause.PLAYER
                and e.seat == ctx.seat
                and not player_request_used
            ):
                request_id = ctx.request_id
                player_request_used = True
            engine_ev = nxt.event if isinstance(nxt, dev.HandEvent) else None
            msg = _action_proto(e, engine_ev, proj, request_id)
        elif isinstance(e, dev.PreActionSelected | dev.PreActionChanged):
            player = isinstance(e, dev.PreActionSelected)
            msg = tev.PreActionSet(
                table_id=tid,
                hand_number=proj.hand_no,
                seat=proj.info.no(e.seat),
                pre_action=PRE_ACTION_TO_PROTO[e.action],
                call_amount=e.to_call,
                reason=(
                    tev.PRE_ACTION_SET_REASON_PLAYER
                    if player
                    else tev.PRE_ACTION_SET_REASON_CONVERTED
                ),
                request_id=ctx.request_id if player and ctx.kind == "pre_action" else "",
                domain=_record(e),
            )
        elif isinstance(e, dev.PreActionUnselected):
            prev = proj.pre_actions.get(e.seat)
            msg = tev.PreActionCleared(
                table_id=tid,
                hand_number=proj.hand_no,
                seat=proj.info.no(e.seat),
                pre_action=(
                    PRE_ACTION_TO_PROTO[prev]
                    if prev is not None
                    else table_pb2.PRE_ACTION_TYPE_UNSPECIFIED
                ),
                reason=_CLEAR_REASON.get(e.reason, tev.PRE_ACTION_CLEAR_REASON_UNSPECIFIED),
                request_id=(
                    ctx.request_id
                    if e.reason == "player" and ctx.kind == "clear_pre_action"
                    else ""
                ),
                domain=_record(e),
            )
        elif isinstance(e, dev.SatOut):
            msg = tev.PlayerSatOut(
                table_id=tid,
                seat=proj.info.no(e.seat),
                player_id=pid[e.seat],
                reason=(
                    tev.SIT_OUT_REASON_PLAYER
                    if e.reason == "player"
                    else tev.SIT_OUT_REASON_TIMEOUT
                ),
                request_id=ctx.request_id if e.reason == "player" and ctx.kind == "sit_out" else "",
                domain=_record(e),
            )
        elif isinstance(e, dev.SatIn):
            msg = tev.PlayerSatIn(
                table_id=tid,
                seat=proj.info.no(e.seat),
                player_id=pid[e.seat],
                request_id=ctx.request_id if ctx.kind == "sit_in" else "",
                domain=_record(e),
            )
        elif isinstance(e, dev.HandEnded):
            msg = tev.HandEnded(
                table_id=tid,
                hand_number=e.hand_no,
                deck_seed=e.deck_seed_hex,
                deck_commitment=proj.commitment,
                stacks=[
                    tev.SeatStack(seat=proj.info.no(s), player_id=pid[s], stack=x)
                    for s, x in enumerate(e.stacks)
                ],
                domain=_record(e),
            )
        elif isinstance(e, dev.PlayerEliminated):
            msg = tev.PlayerEliminated(
                table_id=tid,
                hand_number=e.hand_no,
                seat=proj.info.no(e.seat),
                player_id=pid[e.seat],
                finishing_place=min(e.places),
                stack_at_hand_start=e.start_stack,
                entry_id=info.seats[e.seat].entry_id,
                domain=_record(e),
            )
        elif isinstance(e, dev.TournamentFinished):
            proj.observe(e)
            places = sorted(range(len(e.places)), key=lambda s: (min(e.places[s]), s))
            msg = tev.TournamentFinished(
                table_id=tid,
                tournament_id=tid,
                places=[
                    tev.FinishingPlace(
                        place=min(e.places[s]),
                        seat=proj.info.no(s),
                        player_id=pid[s],
                        entry_id=info.seats[s].entry_id,
                        tied_count=len(e.places[s]),
                        eliminated_in_hand=proj.eliminated_in.get(s, 0),
                        shared_places=sorted(e.places[s]),
                        prize=usd(e.prizes_cents[s]),
                    )
                    for s in places
                ],
                hands_played=e.hands,
                multiplier=multiplier,
                prize_pool=usd(prize_pool_cents),
                buy_in=usd(buy_in_cents),
                domain=_record(e),
            )
            out.append(Mapped(msg, codec.type_tag(e)))
            continue
        else:  # pragma: no cover - exhaustive over the domain's events
            raise codec.CodecError(f"no table event for {type(e).__name__}")
        proj.observe(e)
        out.append(Mapped(msg, codec.type_tag(e), secret))
    return out


_MOVE_TYPE = {
    "fold": table_pb2.ACTION_TYPE_FOLD,
    "check": table_pb2.ACTION_TYPE_CHECK,
    "call": table_pb2.ACTION_TYPE_CALL,
    "all_in": table_pb2.ACTION_TYPE_ALL_IN,
}


def _action_proto(
    e: dev.ActionTaken, engine_ev: Any, proj: Projector, request_id: str
) -> tev.ActionTaken:
    seat = e.seat
    before = proj.street_bets.get(seat, 0)
    added = 0
    all_in = False
    street_bet = before
    action = _MOVE_TYPE.get(e.move, table_pb2.ACTION_TYPE_UNSPECIFIED)
    if isinstance(engine_ev, hev.Called):
        added, all_in, street_bet = engine_ev.amount, engine_ev.all_in, before + engine_ev.amount
    elif isinstance(engine_ev, hev.BetPlaced | hev.Raised):
        added, all_in, street_bet = engine_ev.to - before, engine_ev.all_in, engine_ev.to
        if e.move == "raise_to":
            action = (
                table_pb2.ACTION_TYPE_BET
                if isinstance(engine_ev, hev.BetPlaced)
                else table_pb2.ACTION_TYPE_RAISE
            )
    street = _STREET_BY_BOARD.get(proj.board, table_pb2.STREET_PREFLOP)
    return tev.ActionTaken(
        table_id=proj.info.table_id,
        hand_number=proj.hand_no,
        action_seq=proj.next_action_seq,
        seat=proj.info.no(seat),
        player_id=proj.info.seats[seat].player_id,
        action=action,
        amount_added=added,
        street_bet=street_bet,
        all_in=all_in,
        source=_CAUSE[e.cause],
        request_id=request_id,
        street=street,
        domain=_record(e),
    )


def _engine_proto(e: dev.HandEvent, proj: Projector) -> tuple[Message, tuple[int, str] | None]:
    ev = e.event
    tid = proj.info.table_id
    hand = e.hand_no
    if isinstance(ev, DeckEscrowed):
        hidden = dev.HandEvent(e.hand_no, dataclasses.replace(ev, seed_hex=""))
        return (
            tev.HandEngineEvent(
                table_id=tid,
                hand_number=hand,
                kind="DeckEscrowed",
                domain=_record(hidden, redacted=True),
            ),
            (hand, ev.seed_hex),
        )
    seats = proj.engine_seats
    pid = [s.player_id for s in proj.info.seats]
    rec = _record(e)
    if isinstance(ev, hev.AntePosted | hev.BlindPosted):
        seat = seats[ev.player]
        kind = (
            tev.BLIND_TYPE_ANTE
            if isinstance(ev, hev.AntePosted)
            else (tev.BLIND_TYPE_BIG_BLIND if ev.big else tev.BLIND_TYPE_SMALL_BLIND)
        )
        left = proj.behind.get(seat, 0) - ev.amount
        return (
            tev.BlindPosted(
                table_id=tid,
                hand_number=hand,
                seat=proj.info.no(seat),
                blind_type=kind,
                amount=ev.amount,
                all_in=left == 0,
                domain=rec,
            ),
            None,
        )
    if isinstance(ev, hev.HoleCardsDealt):
        seat = seats[ev.player]
        return (
            tev.CardsDealt(
                table_id=tid,
                hand_number=hand,
                seat=proj.info.no(seat),
                player_id=pid[seat],
                cards=[card(c) for c in ev.cards],
                domain=rec,
            ),
            None,
        )
    if isinstance(ev, hev.BoardDealt):
        board_after = proj.board + len(ev.cards)
        return (
            tev.StreetDealt(
                table_id=tid,
                hand_number=hand,
                street=_STREET_BY_BOARD.get(board_after, table_pb2.STREET_UNSPECIFIED),
                cards=[card(c) for c in ev.cards],
                board=[card(c) for c in (*proj.board_cards, *ev.cards)],
                domain=rec,
            ),
            None,
        )
    if isinstance(ev, hev.HandShown):
        seat = seats[ev.player]
        return (
            tev.CardsShown(
                table_id=tid,
                hand_number=hand,
                seat=proj.info.no(seat),
                player_id=pid[seat],
                cards=[card(c) for c in ev.cards],
                reason=tev.SHOW_REASON_ALL_IN if proj.any_all_in() else tev.SHOW_REASON_SHOWDOWN,
                domain=rec,
            ),
            None,
        )
    if isinstance(ev, hev.PotAwarded):
        return (
            tev.PotAwarded(
                table_id=tid,
                hand_number=hand,
                pot_index=ev.index,
                amount=ev.amount,
                winners=[
                    tev.PotWinner(
                        seat=proj.info.no(seats[p]), player_id=pid[seats[p]], amount=share
                    )
                    for p, share in zip(ev.winners, ev.shares, strict=False)
                ],
                domain=rec,
            ),
            None,
        )
    return (
        tev.HandEngineEvent(table_id=tid, hand_number=hand, kind=type(ev).__name__, domain=rec),
        None,
    )


def domain_of(message: Message) -> tev.DomainRecord | None:
    """The `DomainRecord` a table event carries (None for events without one)."""
    if "domain" not in message.DESCRIPTOR.fields_by_name:
        return None
    if not message.HasField("domain"):
        return None
    record: tev.DomainRecord = message.domain  # type: ignore[attr-defined]
    return record


def decode_record(record: tev.DomainRecord, seeds: dict[int, str]) -> Any:
    """The domain event of ``record``; a redacted deck seed is restored from ``seeds``."""
    e = codec.decode(record.canonical_json)
    if record.redacted and isinstance(e, dev.HandEvent) and isinstance(e.event, DeckEscrowed):
        seed = seeds.get(e.hand_no)
        if not seed:
            raise codec.CodecError(f"deck seed of hand {e.hand_no} is missing")
        e = dev.HandEvent(e.hand_no, dataclasses.replace(e.event, seed_hex=seed))
    return e

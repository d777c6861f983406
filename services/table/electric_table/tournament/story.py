"""The table's story for WatchTable: every stored table event → the `TableEvent` a client
animates, in stream order, with the per-caller privacy applied when it is sent.

`Story` is fed every stored event of a table in order (live after each committed batch, and
on rebuild from the whole stream), so it is a pure fold of the log: the same events give the
same story live and after a restart. It keeps every item (a reconnecting watcher resumes from
any sequence) and the little per-hand state the typed events need but the stored events do
not repeat: chips committed per seat (for the main and side pots after each betting round),
folds, the last action per seat, the time bank per seat (timer ring), the last hand's
awards and deck seed.

Privacy (`for_viewer`): hole cards of a seat only to that seat (others get the deal with
no cards; shown hands arrive as showdown events); pre-turn selections only to their owner;
the revealed deck seed only to the players seated at the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from google.protobuf import duration_pb2
from google.protobuf.message import Message

_FORCED = {
    tev.BLIND_TYPE_ANTE: table_pb2.FORCED_BET_TYPE_ANTE,
    tev.BLIND_TYPE_SMALL_BLIND: table_pb2.FORCED_BET_TYPE_SMALL_BLIND,
    tev.BLIND_TYPE_BIG_BLIND: table_pb2.FORCED_BET_TYPE_BIG_BLIND,
}
_ORIGIN = {
    tev.ACTION_SOURCE_PLAYER: table_pb2.ACTION_ORIGIN_PLAYER,
    tev.ACTION_SOURCE_PRE_ACTION: table_pb2.ACTION_ORIGIN_PRE_ACTION,
    tev.ACTION_SOURCE_TIMEOUT: table_pb2.ACTION_ORIGIN_TIMEOUT,
    tev.ACTION_SOURCE_SITTING_OUT: table_pb2.ACTION_ORIGIN_SITTING_OUT,
    tev.ACTION_SOURCE_ELECTRIC_MODE: table_pb2.ACTION_ORIGIN_ELECTRIC_MODE,
}
_TIMER = {
    tev.TIMEOUT_KIND_TIME_BANK_STARTED: table_pb2.TIMER_KIND_TIME_BANK_STARTED,
    tev.TIMEOUT_KIND_ACTION_TIMER_EXPIRED: table_pb2.TIMER_KIND_ACTION_TIMER_EXPIRED,
    tev.TIMEOUT_KIND_TIME_BANK_EXHAUSTED: table_pb2.TIMER_KIND_TIME_BANK_EXHAUSTED,
}
_SET = {
    tev.PRE_ACTION_SET_REASON_PLAYER: table_pb2.PRE_ACTION_CHANGE_SELECTED,
    tev.PRE_ACTION_SET_REASON_CONVERTED: table_pb2.PRE_ACTION_CHANGE_CONVERTED,
}
_CLEARED = {
    tev.PRE_ACTION_CLEAR_REASON_PLAYER: table_pb2.PRE_ACTION_CHANGE_UNSELECTED,
    tev.PRE_ACTION_CLEAR_REASON_UNSELECTED_BY_BET: table_pb2.PRE_ACTION_CHANGE_UNSELECTED_BY_BET,
    tev.PRE_ACTION_CLEAR_REASON_APPLIED: table_pb2.PRE_ACTION_CHANGE_APPLIED,
    tev.PRE_ACTION_CLEAR_REASON_HAND_ENDED: table_pb2.PRE_ACTION_CHANGE_ROUND_ENDED,
    tev.PRE_ACTION_CLEAR_REASON_ROUND_ENDED: table_pb2.PRE_ACTION_CHANGE_ROUND_ENDED,
    tev.PRE_ACTION_CLEAR_REASON_SAT_OUT: table_pb2.PRE_ACTION_CHANGE_SAT_OUT,
}


@dataclass(frozen=True)
class StoryItem:
    """One stored event: its sequence (stream version), type, and the client event (None
    when it has nothing to show)."""

    sequence: int
    event_type: str
    event: table_pb2.TableEvent | None


def layered_pots(committed: dict[int, int], live: set[int]) -> list[tuple[int, tuple[int, ...]]]:
    """Main and side pots of ``committed`` chips per seat: one layer per contribution level,
    won by the live seats that reached it; consecutive layers with the same contenders are
    one pot (the engine's rule, docs/holdem-rules.md "Pots")."""
    pots: list[tuple[int, tuple[int, ...]]] = []
    prev = 0
    for level in sorted({c for c in committed.values() if c > 0}):
        amount = sum(min(c, level) - prev for c in committed.values() if c > prev)
        eligible = tuple(sorted(s for s in live if committed.get(s, 0) >= level))
        if pots and (pots[-1][1] == eligible or not eligible):
            pots[-1] = (pots[-1][0] + amount, pots[-1][1])
        else:
            pots.append((amount, eligible))
        prev = level
    return pots


@dataclass
class Story:
    """The story of one table (see the module docstring); seats are 1-based table seats."""

    items: list[StoryItem] = field(default_factory=list)
    action_timer_ms: int = 0
    bank_ms: dict[int, int] = field(default_factory=dict)
    hand_number: int = 0
    committed: dict[int, int] = field(default_factory=dict)
    street_bets: dict[int, int] = field(default_factory=dict)
    folded: set[int] = field(default_factory=set)
    last_action: dict[int, table_pb2.ActionEvent] = field(default_factory=dict)
    awards: list[table_pb2.PotAwardEvent] = field(default_factory=list)
    deck_seed: str = ""
    hands_ended: int = 0

    @property
    def head(self) -> int:
        """Sequence of the last event fed."""
        return self.items[-1].sequence if self.items else 0

    def first_sequence(self) -> int:
        return self.items[0].sequence if self.items else 0

    def since(self, sequence: int) -> list[StoryItem]:
        """Every item after ``sequence`` (sequences are contiguous from the first fed)."""
        if not self.items:
            return []
        start = max(0, sequence - self.items[0].sequence + 1)
        return self.items[start:]

    def collected_pots(self) -> list[tuple[int, tuple[int, ...]]]:
        """Pots of the chips collected from earlier rounds (this round's bets excluded)."""
        collected = {s: c - self.street_bets.get(s, 0) for s, c in self.committed.items()}
        live = {s for s in self.committed if s not in self.folded}
        return layered_pots(collected, live)

    # ------------------------------------------------------------------ feeding

    def feed(self, sequence: int, msg: Message) -> None:
        """Fold one stored event (the next in the stream)."""
        event = self._event(msg)
        if event is not None:
            event.sequence = sequence
        self.items.append(StoryItem(sequence, type(msg).DESCRIPTOR.full_name, event))

    def _event(self, m: Message) -> table_pb2.TableEvent | None:
        E = table_pb2.TableEvent
        if isinstance(m, tev.TableStarted):
            self.action_timer_ms = m.action_timer.ToMilliseconds()
            self.bank_ms = {s.seat: m.time_bank.ToMilliseconds() for s in m.seats}
            return None
        if isinstance(m, tev.HandStarted):
            self.hand_number = m.hand_number
            self.committed = {s.seat: 0 for s in m.stacks if s.stack > 0}
            self.street_bets = {}
            self.folded = set()
            self.last_action = {}
            self.awards = []
            self.deck_seed = ""
            return E(
                hand_started=table_pb2.HandStartEvent(
                    hand_number=m.hand_number,
                    button_seat=m.button_seat,
                    small_blind_seat=m.small_blind_seat,
                    big_blind_seat=m.big_blind_seat,
                    level=m.level,
                    stacks=[
                        table_pb2.SeatChips(seat=s.seat, stack=s.stack)
                        for s in m.stacks
                        if s.stack > 0
                    ],
                    deck_commitment=m.deck_commitment,
                    electric=m.electric_mode,
                )
            )
        if isinstance(m, tev.CardsDealt):
            return E(
                hole_cards_dealt=table_pb2.HoleCardsEvent(
                    hand_number=m.hand_number, seat=m.seat, cards=m.cards, card_count=len(m.cards)
                )
            )
        if isinstance(m, tev.BlindPosted):
            self._add(m.seat, m.amount, street=m.blind_type != tev.BLIND_TYPE_ANTE)
            return E(
                forced_bet=table_pb2.ForcedBetEvent(
                    hand_number=m.hand_number,
                    seat=m.seat,
                    type=_FORCED[m.blind_type],
                    amount=m.amount,
                    all_in=m.all_in,
                )
            )
        if isinstance(m, tev.ActionTaken):
            self._add(m.seat, m.amount_added, street=True)
            if m.action == table_pb2.ACTION_TYPE_FOLD:
                self.folded.add(m.seat)
            if m.HasField("time_bank_remaining"):
                self.bank_ms[m.seat] = m.time_bank_remaining.ToMilliseconds()
            ev = table_pb2.ActionEvent(
                hand_number=m.hand_number,
                action_seq=m.action_seq,
                seat=m.seat,
                action=m.action,
                amount_added=m.amount_added,
                street_bet=m.street_bet,
                all_in=m.all_in,
                street=m.street,
                origin=_ORIGIN.get(m.source, table_pb2.ACTION_ORIGIN_UNSPECIFIED),
            )
            self.last_action[m.seat] = ev
            return E(action=ev)
        if isinstance(m, tev.HandEngineEvent):
            return self._engine(m)
        if isinstance(m, tev.StreetDealt):
            return E(
                street_dealt=table_pb2.StreetEvent(
                    hand_number=m.hand_number, street=m.street, cards=m.cards, board=m.board
                )
            )
        if isinstance(m, tev.CardsShown):
            reason = {
                tev.SHOW_REASON_ALL_IN: table_pb2.SHOWDOWN_REASON_ALL_IN,
                tev.SHOW_REASON_PLAYER_SETTING: table_pb2.SHOWDOWN_REASON_SETTING,
            }.get(m.reason, table_pb2.SHOWDOWN_REASON_ORDER)
            return E(
                showdown=table_pb2.ShowdownEvent(
                    hand_number=m.hand_number,
                    seat=m.seat,
                    decision=table_pb2.SHOWDOWN_DECISION_SHOW,
                    cards=m.cards,
                    reason=reason,
                    hand_description=m.hand_description,
                )
            )
        if isinstance(m, tev.PotAwarded):
            award = table_pb2.PotAwardEvent(
                hand_number=m.hand_number,
                pot_index=m.pot_index,
                amount=m.amount,
                winners=[
                    table_pb2.PotShare(
                        seat=w.seat,
                        amount=w.amount,
                        best_five=w.best_five,
                        category=w.category,
                        hand_description=w.hand_description,
                    )
                    for w in m.winners
                ],
            )
            self.awards.append(award)
            return E(pot_awarded=award)
        if isinstance(m, tev.HandEnded):
            self.deck_seed = m.deck_seed
            self.hands_ended += 1
            self.street_bets = {}
            return E(
                hand_ended=table_pb2.HandEndEvent(
                    hand_number=m.hand_number,
                    deck_commitment=m.deck_commitment,
                    deck_seed=m.deck_seed,
                    stacks=[table_pb2.SeatChips(seat=s.seat, stack=s.stack) for s in m.stacks],
                )
            )
        if isinstance(m, tev.PlayerEliminated):
            return E(
                eliminated=table_pb2.EliminationEvent(
                    hand_number=m.hand_number, seat=m.seat, finishing_place=m.finishing_place
                )
            )
        if isinstance(m, tev.TournamentFinished):
            return E(
                tournament_finished=table_pb2.TournamentEndEvent(
                    places=[
                        table_pb2.PlaceResult(
                            place=p.place,
                            seat=p.seat,
                            player_id=p.player_id,
                            prize=p.prize,
                            tied_count=p.tied_count,
                        )
                        for p in m.places
                    ],
                    hands_played=m.hands_played,
                )
            )
        if isinstance(m, tev.TurnStarted):
            timer = table_pb2.TurnTimer(
                seat=m.seat,
                action_timer=_ms(self.action_timer_ms),
                time_bank_remaining=_ms(self.bank_ms.get(m.seat, 0)),
                time_bank_in_use=False,
                deadline=m.deadline,
            )
            if m.HasField("started_at"):
                timer.turn_started_at.CopyFrom(m.started_at)
            return E(
                turn_started=table_pb2.TurnEvent(
                    hand_number=m.hand_number, action_seq=m.action_seq, seat=m.seat, timer=timer
                )
            )
        if isinstance(m, tev.TimeoutApplied):
            if m.kind == tev.TIMEOUT_KIND_TIME_BANK_EXHAUSTED:
                self.bank_ms[m.seat] = 0
            return E(
                timer=table_pb2.TimerEvent(
                    hand_number=m.hand_number,
                    action_seq=m.action_seq,
                    seat=m.seat,
                    kind=_TIMER.get(m.kind, table_pb2.TIMER_KIND_UNSPECIFIED),
                    time_bank_remaining=m.time_bank_remaining,
                )
            )
        if isinstance(m, tev.LevelAdvanced):
            return E(level_advanced=table_pb2.LevelEvent(level=m.level))
        if isinstance(m, tev.TournamentClockExpired):
            return E(
                electric_mode=table_pb2.ElectricModeEvent(
                    clock_expired=True, hand_number=m.hand_number
                )
            )
        if isinstance(m, tev.ElectricModeStarted):
            return E(
                electric_mode=table_pb2.ElectricModeEvent(
                    clock_expired=False, hand_number=m.from_hand_number
                )
            )
        if isinstance(m, tev.PlayerSatOut):
            return E(
                seat_status=table_pb2.SeatStatusEvent(
                    seat=m.seat,
                    sitting_out=True,
                    by_timeout=m.reason == tev.SIT_OUT_REASON_TIMEOUT,
                )
            )
        if isinstance(m, tev.PlayerSatIn):
            return E(seat_status=table_pb2.SeatStatusEvent(seat=m.seat, sitting_out=False))
        if isinstance(m, tev.PreActionSet):
            return E(
                pre_action=table_pb2.PreActionEvent(
                    hand_number=m.hand_number,
                    seat=m.seat,
                    pre_action=m.pre_action,
                    change=_SET.get(m.reason, table_pb2.PRE_ACTION_CHANGE_UNSPECIFIED),
                )
            )
        if isinstance(m, tev.PreActionCleared):
            return E(
                pre_action=table_pb2.PreActionEvent(
                    hand_number=m.hand_number,
                    seat=m.seat,
                    pre_action=m.pre_action,
                    change=_CLEARED.get(m.reason, table_pb2.PRE_ACTION_CHANGE_UNSPECIFIED),
                )
            )
        return None

    def _add(self, seat: int, amount: int, *, street: bool) -> None:
        self.committed[seat] = self.committed.get(seat, 0) + amount
        if street:
            self.street_bets[seat] = self.street_bets.get(seat, 0) + amount

    def _engine(self, m: tev.HandEngineEvent) -> table_pb2.TableEvent | None:
        E = table_pb2.TableEvent
        if m.kind == "UncalledBetReturned" and m.seat:
            self._add(m.seat, -m.amount, street=True)
            return E(
                uncalled_bet_returned=table_pb2.UncalledBetEvent(
                    hand_number=m.hand_number, seat=m.seat, amount=m.amount
                )
            )
        if m.kind == "HandMucked" and m.seat:
            return E(
                showdown=table_pb2.ShowdownEvent(
                    hand_number=m.hand_number,
                    seat=m.seat,
                    decision=table_pb2.SHOWDOWN_DECISION_MUCK,
                    reason=table_pb2.SHOWDOWN_REASON_BEATEN,
                )
            )
        if m.kind == "RoundClosed":
            self.street_bets = {}
            pots = self.collected_pots()
            return E(
                pots=table_pb2.PotsEvent(
                    hand_number=m.hand_number,
                    pots=pots_proto(pots),
                    total=sum(a for a, _ in pots),
                )
            )
        return None


def pots_proto(pots: list[tuple[int, tuple[int, ...]]]) -> list[table_pb2.Pot]:
    """Pots as protos (index 0 = main pot)."""
    return [
        table_pb2.Pot(index=i, amount=a, eligible_seats=list(seats))
        for i, (a, seats) in enumerate(pots)
    ]


def for_viewer(event: table_pb2.TableEvent, viewer_seat: int) -> table_pb2.TableEvent | None:
    """``event`` as the caller in ``viewer_seat`` (1-based; 0 = not seated) may see it; None
    when it is not theirs to see (another seat's pre-turn selection)."""
    kind = event.WhichOneof("kind")
    if kind == "hole_cards_dealt" and event.hole_cards_dealt.seat != viewer_seat:
        out = table_pb2.TableEvent()
        out.CopyFrom(event)
        del out.hole_cards_dealt.cards[:]
        return out
    if kind == "pre_action" and event.pre_action.seat != viewer_seat:
        return None
    if kind == "hand_ended" and not viewer_seat and event.hand_ended.deck_seed:
        out = table_pb2.TableEvent()
        out.CopyFrom(event)
        out.hand_ended.deck_seed = ""
        return out
    return event


def _ms(ms: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(ms)
    return d

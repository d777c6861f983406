"""Live UTH domain events ↔ table casino events, and the round's bets (wallet reservations).

Each ``electric_domain.casino.uth.events`` event maps to one table event carrying its
canonical `DomainRecord` (replay source); projections without a record follow some of them:
``RoundOpened → CasinoRoundStarted`` (deck seed withheld, ``redacted``), ``SeatTaken →
CasinoUthSeatTaken``, ``BetsPlaced → CasinoBetsPlaced`` (+ one ``CasinoBetPlaced`` per
reservation), ``BetsUndone → CasinoBetsUndone``, ``LightChanged → CasinoLightChanged``,
``BettingClosed → CasinoBettingClosed``, ``CardsDealt → CasinoHoleCardsDealt`` (the shared
player hand) / ``CasinoBoardDealt``, ``DecisionWindowOpened → CasinoDecisionWindowOpened``,
``Decided / AutoChecked / AutoFolded → CasinoDecisionMade`` (``timed_out`` for the clock's;
+ ``CasinoBetPlaced`` of a Play bet), ``Showdown → CasinoShowdown``, ``SeatSettled →
CasinoSeatSettled`` (after the last one, the round's ``CasinoRoundSettled`` with one
``CasinoPlayerResult`` per seat), ``RoundVoided → CasinoRoundVoided``, ``DeckRevealed →
CasinoDeckRevealed``, ``RoundEnded → CasinoRoundEnded``.

**Bets.** One wallet reservation per spot of each betting action (an Ante placement
reserves its Blind too): bet id ``<round>:<seat>:<n>-<tok>:<spot>`` (``n`` = the seat's
action number, ``tok`` from the request id, so a retried request reserves the same
transfers and another request never reuses a refused or voided id). The ids are published in
``CasinoBetsPlaced.bet_ids`` and read back from there on replay. A Play bet is
``<round>:<seat>:play``. A spot's result names its first reservation (payout's
``stake_transfer_id``); settlement posts (win, lose) or voids (push) all of the spot's.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import electric_domain.casino.uth.events as uth
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import events_pb2 as tev
from electric_domain.casino.common.money import BetResult, Outcome
from electric_eventlog.dataclass_codec import CodecError
from google.protobuf.message import Message

from electric_table.casino import repo
from electric_table.casino.thb import records

GAME = repo.UTH


@dataclass(frozen=True)
class Reservation:
    """One wallet reservation of a seat (transfer id = ``bet_id``)."""

    bet_id: str
    player_id: str
    spot: str
    amount_cents: int

    def row(self, round_id: str) -> repo.BetRow:
        return repo.BetRow(
            self.bet_id, round_id, self.player_id, self.spot, self.amount_cents, "", False
        )


def expand(placements: Sequence[uth.Placement]) -> list[tuple[str, int]]:
    """The reservations of a betting action's placements: an Ante brings its Blind."""
    out: list[tuple[str, int]] = []
    for spot, cents in placements:
        out.append((spot, cents))
        if spot == "ante":
            out.append(("blind", cents))
    return out


def token(request_id: str) -> str:
    return hashlib.sha256(request_id.encode()).hexdigest()[:8]


@dataclass
class Batch:
    """What a batch of domain events means for the service."""

    msgs: list[Message] = field(default_factory=list)
    new_bets: list[repo.BetRow] = field(default_factory=list)
    ops: dict[str, str] = field(default_factory=dict)
    status: str | None = None
    settled_seats: int = 0
    #: Metrics: stakes settled or refunded, and cents returned to players, by this batch.
    staked: int = 0
    returned: int = 0


@dataclass
class UthBook:
    """The round's seats and reservations, folded from its events (live and on replay)."""

    round_id: str = ""
    table_id: str = ""
    players: list[str] = field(default_factory=list)
    actions: dict[int, int] = field(default_factory=dict)  # seat -> BetsPlaced so far
    stacks: dict[int, list[list[Reservation]]] = field(default_factory=dict)
    play: dict[int, Reservation] = field(default_factory=dict)

    def live(self, seat: int, spot: str | None = None) -> list[Reservation]:
        """The seat's reservations still standing (of ``spot``), in placement order."""
        out = [r for action in self.stacks.get(seat, []) for r in action]
        if seat in self.play:
            out.append(self.play[seat])
        return [r for r in out if spot is None or r.spot == spot]

    def new_ids(self, seat: int, placements: Sequence[uth.Placement], request_id: str) -> list[str]:
        n = self.actions.get(seat, 0) + 1
        tok = token(request_id)
        return [f"{self.round_id}:{seat}:{n}-{tok}:{spot}" for spot, _ in expand(placements)]

    def result_rows(self, seat: int, results: Iterable[BetResult]) -> list[cev.CasinoBetResult]:
        out = []
        for r in results:
            if r.stake_cents <= 0:
                continue
            first = self.live(seat, r.spot)
            out.append(
                cev.CasinoBetResult(
                    bet_id=first[0].bet_id if first else "",
                    spot=r.spot,
                    stake_cents=r.stake_cents,
                    outcome=r.outcome.value,
                    win_cents=r.win_cents,
                    returned_cents=r.returned_cents,
                )
            )
        return out

    # ------------------------------------------------------------------------- the fold

    def feed(self, e: Any, bet_ids: Sequence[str] = ()) -> list[Reservation]:
        """Apply ``e``; returns the reservations it created (``bet_ids`` of a BetsPlaced)."""
        if isinstance(e, uth.RoundOpened):
            self.round_id = e.round_id
        elif isinstance(e, uth.SeatTaken):
            self.players.append(e.player)
        elif isinstance(e, uth.BetsPlaced):
            spots = expand(e.placements)
            if len(bet_ids) != len(spots):
                raise CodecError(f"BetsPlaced of seat {e.seat}: {len(bet_ids)} ids for {spots}")
            player = self.players[e.seat]
            made = [Reservation(i, player, s, c) for i, (s, c) in zip(bet_ids, spots, strict=True)]
            self.actions[e.seat] = self.actions.get(e.seat, 0) + 1
            self.stacks.setdefault(e.seat, []).append(made)
            return made
        elif isinstance(e, uth.BetsUndone):
            self.stacks[e.seat].pop()
        elif isinstance(e, uth.Decided) and e.play_cents > 0:
            r = Reservation(f"{self.round_id}:{e.seat}:play", self.players[e.seat], "play", 0)
            r = dataclasses.replace(r, amount_cents=e.play_cents)
            self.play[e.seat] = r
            return [r]
        return []

    def translate(
        self, events: Sequence[Any], *, request_id: str = "", voided_by: str = ""
    ) -> Batch:
        """Feed ``events`` (new, in order) and map them to table events, reservations and the
        wallet calls they owe (UNDO: void at once; settlement: post / void per spot)."""
        b = Batch()
        rid, tid = self.round_id, self.table_id
        settled: list[cev.CasinoPlayerResult] = []
        totals = [0, 0, 0]
        for idx, e in enumerate(events):
            if isinstance(e, uth.BetsUndone):
                undone = self.stacks[e.seat][-1]
                b.ops.update({r.bet_id: repo.VOID for r in undone})
                b.msgs.append(
                    cev.CasinoBetsUndone(
                        round_id=rid,
                        table_id=tid,
                        player_id=self.players[e.seat],
                        seat=e.seat,
                        bet_ids=[r.bet_id for r in undone],
                        domain=_record(e),
                    )
                )
                self.feed(e)
                continue
            ids: list[str] = []
            if isinstance(e, uth.BetsPlaced):
                ids = self.new_ids(e.seat, e.placements, request_id)
            if isinstance(e, uth.RoundOpened):
                self.round_id = rid = e.round_id
            made = self.feed(e, ids)
            b.new_bets.extend(r.row(rid) for r in made)
            b.msgs.extend(self._protos(e, ids, voided_by))
            b.msgs.extend(self._bet_placed(r) for r in made)
            if isinstance(e, uth.SeatSettled):
                b.settled_seats += 1
                b.staked += e.staked_cents
                b.returned += e.returned_cents
                for r in e.results:
                    op = repo.POST if r.outcome in (Outcome.WIN, Outcome.LOSE) else repo.VOID
                    b.ops.update({x.bet_id: op for x in self.live(e.seat, r.spot)})
                settled.append(
                    cev.CasinoPlayerResult(
                        player_id=self.players[e.seat], results=self.result_rows(e.seat, e.results)
                    )
                )
                totals = [
                    totals[0] + e.staked_cents,
                    totals[1] + e.returned_cents,
                    totals[2] + e.house_net_cents,
                ]
                last = idx + 1 == len(events) or not isinstance(events[idx + 1], uth.SeatSettled)
                if last:
                    b.msgs.append(
                        cev.CasinoRoundSettled(
                            round_id=rid,
                            table_id=tid,
                            game=GAME,
                            players=settled,
                            staked_cents=totals[0],
                            returned_cents=totals[1],
                            house_net_cents=totals[2],
                        )
                    )
            elif isinstance(e, uth.RoundVoided):
                b.status = repo.VOIDED
                refunded = sum(r.returned_cents for _, res in e.refunds for r in res)
                b.staked += refunded
                b.returned += refunded
            elif isinstance(e, uth.RoundEnded) and b.status is None:
                b.status = repo.SETTLED
        return b

    def _bet_placed(self, r: Reservation) -> cev.CasinoBetPlaced:
        return cev.CasinoBetPlaced(
            round_id=self.round_id,
            table_id=self.table_id,
            player_id=r.player_id,
            bet_id=r.bet_id,
            spot=r.spot,
            amount_cents=r.amount_cents,
        )

    def _protos(self, e: Any, ids: list[str], voided_by: str) -> list[Message]:
        rid, tid = self.round_id, self.table_id
        if isinstance(e, uth.RoundOpened):
            hidden = dataclasses.replace(e, deck_seed_hex="")
            return [
                cev.CasinoRoundStarted(
                    round_id=rid,
                    table_id=tid,
                    game=GAME,
                    game_number=e.game_number,
                    deck_commitment=e.deck_commitment,
                    config_version=e.config_version,
                    domain=_record(hidden, redacted=True),
                )
            ]
        if isinstance(e, uth.SeatTaken):
            return [
                cev.CasinoUthSeatTaken(
                    round_id=rid, table_id=tid, player_id=e.player, seat=e.seat, domain=_record(e)
                )
            ]
        if isinstance(e, uth.BetsPlaced):
            return [
                cev.CasinoBetsPlaced(
                    round_id=rid,
                    table_id=tid,
                    player_id=self.players[e.seat],
                    seat=e.seat,
                    kind=e.kind,
                    bet_ids=ids,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.LightChanged):
            return [
                cev.CasinoLightChanged(round_id=rid, table_id=tid, light=e.light, domain=_record(e))
            ]
        if isinstance(e, uth.BettingClosed):
            return [
                cev.CasinoBettingClosed(
                    round_id=rid, table_id=tid, seats_in_play=len(e.stakes), domain=_record(e)
                )
            ]
        if isinstance(e, uth.CardsDealt):
            if e.street == "hole":
                cards = list(e.cards)
                return [cev.CasinoHoleCardsDealt(round_id=rid, cards=cards, domain=_record(e))]
            return [
                cev.CasinoBoardDealt(
                    round_id=rid, street=e.street, cards=list(e.cards), domain=_record(e)
                )
            ]
        if isinstance(e, uth.DecisionWindowOpened):
            return [
                cev.CasinoDecisionWindowOpened(
                    round_id=rid,
                    table_id=tid,
                    street=e.street,
                    deadline_ms=e.deadline,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.Decided | uth.AutoChecked | uth.AutoFolded):
            if isinstance(e, uth.Decided):
                decision, street, amount, auto = e.action, e.street, e.play_cents, False
            elif isinstance(e, uth.AutoChecked):
                decision, street, amount, auto = "check", e.street, 0, True
            else:
                decision, street, amount, auto = "fold", "river", 0, True
            return [
                cev.CasinoDecisionMade(
                    round_id=rid,
                    player_id=self.players[e.seat],
                    decision=decision,
                    street=street,
                    amount_cents=amount,
                    timed_out=auto,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.Showdown):
            winner = (
                "player"
                if e.player_rank > e.dealer_rank
                else "dealer"
                if e.player_rank < e.dealer_rank
                else "tie"
            )
            return [
                cev.CasinoShowdown(
                    round_id=rid,
                    dealer_cards=list(e.dealer_cards),
                    player_hand=e.player_hand,
                    dealer_hand=e.dealer_hand,
                    winner=winner,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.SeatSettled):
            return [
                cev.CasinoSeatSettled(
                    round_id=rid,
                    player_id=self.players[e.seat],
                    seat=e.seat,
                    results=self.result_rows(e.seat, e.results),
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.RoundVoided):
            return [
                cev.CasinoRoundVoided(
                    round_id=rid,
                    table_id=tid,
                    game=GAME,
                    reason=e.reason,
                    players=[
                        cev.CasinoPlayerResult(
                            player_id=self.players[seat], results=self.result_rows(seat, res)
                        )
                        for seat, res in e.refunds
                    ],
                    voided_by=voided_by,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.DeckRevealed):
            return [
                cev.CasinoDeckRevealed(
                    round_id=rid,
                    deck_seed_hex=e.deck_seed_hex,
                    deck_commitment=e.deck_commitment,
                    domain=_record(e),
                )
            ]
        if isinstance(e, uth.RoundEnded):
            return [cev.CasinoRoundEnded(round_id=rid, table_id=tid, domain=_record(e))]
        raise CodecError(f"unmapped UTH event {type(e).__name__}")  # pragma: no cover


def _record(e: Any, *, redacted: bool = False) -> tev.DomainRecord:
    return records.record(e, redacted=redacted)


def decode(message: Message, seed_hex: str) -> tuple[Any, list[str]] | None:
    """The UTH domain event a stored message carries, with the bet ids of a BetsPlaced
    (None if it carries none); a redacted RoundOpened gets its deck seed back."""
    e = records.decode(message, seed_hex)
    if e is None:
        return None
    if isinstance(e, uth.RoundOpened) and not e.deck_seed_hex:
        if not seed_hex:
            raise CodecError(f"deck seed of round {e.round_id} is missing")
        e = dataclasses.replace(e, deck_seed_hex=seed_hex)
    ids = list(message.bet_ids) if isinstance(message, cev.CasinoBetsPlaced) else []
    return e, ids

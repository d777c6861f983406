"""Views of live UTH rounds: one player's ``CasinoTableView`` (their own bets, decisions and
results, the shared cards, the light and the deadlines — never another player's bets or
results) and a UTH round as ``CasinoRoundView`` (GetRound: the caller's part; operators,
auditors and services see every seat)."""

from __future__ import annotations

import electric_domain.casino.uth.events as uth
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2
from electric_domain.casino.uth.round import ACTIONS, BETTING, UthRound

from electric_table.casino import repo
from electric_table.casino.uth.records import UthBook


def _status(rnd: UthRound | None, row: repo.RoundRow | None) -> str:
    if rnd is None or row is None:
        return ""
    if not rnd.finished:
        return repo.OPEN
    return repo.VOIDED if rnd.state.voided else repo.SETTLED


def betting_legal(rnd: UthRound, seat: int | None, now: int) -> list[str]:
    """The betting buttons open to ``seat`` (None: not seated in the round yet)."""
    s = rnd.state
    if s.phase != BETTING or rnd.light(now) == "red":
        return []
    u = rnd.config.uth
    if seat is None:
        return ["ante"]
    x = s.seats[seat]
    ante, trips = x.total("ante"), x.total("trips")
    out = []
    if ante < u.ante_max_cents:
        out.append("ante")
    if ante and trips < u.trips_max_cents:
        out.append("trips")
    if x.actions:
        out += ["undo", "clear"]
    if ante and not x.doubled:
        out.append("double")
    if not x.actions and s.previous.get(x.player):
        out.append("repeat")
    return out


def _decisions(rnd: UthRound, seat: int) -> list[casino_pb2.CasinoUthDecisionView]:
    out = []
    for e in rnd.history:
        if isinstance(e, uth.Decided) and e.seat == seat:
            out.append(
                casino_pb2.CasinoUthDecisionView(
                    street=e.street, action=e.action, play_cents=e.play_cents
                )
            )
        elif isinstance(e, uth.AutoChecked) and e.seat == seat:
            out.append(
                casino_pb2.CasinoUthDecisionView(street=e.street, action="check", timed_out=True)
            )
        elif isinstance(e, uth.AutoFolded) and e.seat == seat:
            out.append(
                casino_pb2.CasinoUthDecisionView(street="river", action="fold", timed_out=True)
            )
    return out


def _showdown(rnd: UthRound) -> uth.Showdown | None:
    for e in reversed(rnd.history):
        if isinstance(e, uth.Showdown):
            return e
    return None


def _void_reason(rnd: UthRound) -> str:
    for e in reversed(rnd.history):
        if isinstance(e, uth.RoundVoided):
            return e.reason
    return ""


def _bets(book: UthBook, seat: int) -> list[cev.CasinoBetPlaced]:
    return [
        cev.CasinoBetPlaced(
            round_id=book.round_id,
            table_id=book.table_id,
            player_id=r.player_id,
            bet_id=r.bet_id,
            spot=r.spot,
            amount_cents=r.amount_cents,
        )
        for r in book.live(seat)
    ]


def table_view(
    table_id: str,
    rnd: UthRound | None,
    book: UthBook | None,
    row: repo.RoundRow | None,
    version: int,
    *,
    player: str,
    now: int,
    seated: int,
) -> casino_pb2.CasinoTableView:
    """``player``'s view of the table's current (or last) round."""
    view = casino_pb2.CasinoTableView(
        table_id=table_id, game="uth", server_time_ms=now, seated=seated, seat=-1
    )
    if rnd is None or book is None or row is None:
        view.phase, view.light = "over", "red"
        return view
    s = rnd.state
    seat = next((i for i, x in enumerate(s.seats) if x.player == player), None)
    view.round_id, view.game_number = s.round_id, s.game_number
    view.phase, view.light = s.phase, rnd.light(now)
    view.yellow_at_ms, view.betting_closes_at_ms = s.yellow_at, s.close_at
    view.decision_deadline_ms = s.deadline if s.phase in ACTIONS and s.deadline else 0
    view.status, view.version = _status(rnd, row), version
    view.seats_in_play = sum(1 for x in s.seats if x.in_play)
    view.player_cards.extend(s.player_cards)
    view.board.extend(s.board)
    view.dealer_cards.extend(s.dealer_cards)
    view.void_reason = _void_reason(rnd)
    sd = _showdown(rnd)
    if sd is not None:
        view.player_hand, view.dealer_hand = sd.player_hand, sd.dealer_hand
        view.dealer_qualifies = sd.dealer_qualifies
    if s.phase == BETTING:
        view.legal.extend(betting_legal(rnd, seat, now))
    if seat is None:
        return view
    x = s.seats[seat]
    view.seat = seat
    view.bets.extend(_bets(book, seat))
    view.ante_cents, view.trips_cents = x.total("ante"), x.total("trips")
    view.play_cents = x.play_cents
    if s.phase != BETTING:
        view.legal.extend(rnd.legal(seat))
    view.decisions.extend(_decisions(rnd, seat))
    results = s.settled.get(seat)
    if results is not None:
        rows = book.result_rows(seat, results)  # type: ignore[arg-type]
        view.results.extend(rows)
        view.net_cents = sum(r.returned_cents - r.stake_cents for r in rows)
    return view


def round_view(
    rnd: UthRound,
    book: UthBook,
    row: repo.RoundRow,
    version: int,
    *,
    player: str | None,
) -> casino_pb2.CasinoRoundView:
    """A UTH round as ``CasinoRoundView``: ``player``'s bets and results (None: all seats)."""
    s = rnd.state
    seats = [i for i, x in enumerate(s.seats) if player is None or x.player == player]
    view = casino_pb2.CasinoRoundView(
        round_id=row.round_id,
        table_id=row.table_id,
        game=row.game,
        player_id=player or "",
        game_number=row.game_number,
        phase=s.phase,
        status=_status(rnd, row),
        player_cards=list(s.player_cards),
        board=list(s.board),
        dealer_cards=list(s.dealer_cards),
        acknowledged=row.acknowledged,
        void_reason=_void_reason(rnd),
        version=version,
    )
    for i in seats:
        view.bets.extend(_bets(book, i))
        if len(seats) == 1:
            view.legal.extend(rnd.legal(i))
        results = s.settled.get(i)
        if results is not None:
            view.results.extend(book.result_rows(i, results))  # type: ignore[arg-type]
    return view

"""The UTH part of ``electric-audit round ID``: the round decided again, and its seats.

* ``domain`` — the live UTH round is **played again** by the domain
  (:class:`electric_domain.casino.uth.round.UthRound`): opened from the revealed seed with the
  recorded windows and previous bets, then every recorded event that a command made is turned
  back into that command (``SeatTaken`` → ``TakeSeat``, ``BetsPlaced`` → ``PlaceBet`` /
  ``Double`` / ``Repeat``, ``BetsUndone`` → ``Undo``, ``Decided`` → ``Decide``,
  ``RoundVoided`` → ``Void``) and every event the clock made (lights, the close and the deal,
  windows, ``AutoChecked`` / ``AutoFolded``, showdown, settlement, the reveal) into a
  ``Tick`` at its time. The domain must accept each command *at its recorded time* — a
  decision outside its window, with a multiple that street does not offer, or after the
  window's deadline (the domain's catch-up closes the window first) is refused — and must
  produce exactly the recorded events, settlement included. The first difference is
  reported at the table event that carries it.
* ``seats`` — the seat → player map is the domain's (``SeatTaken``: a player seated when the
  round opened, or seated by their first bet); every table event that names a seat's player
  (``CasinoUthSeatTaken``, ``CasinoBetsPlaced`` / ``CasinoBetsUndone``, ``CasinoBetPlaced``
  by the seat in its bet id, ``CasinoDecisionMade``, ``CasinoSeatSettled``, the published
  ``CasinoRoundSettled`` / ``CasinoRoundVoided``) must name that player.

The windows (green, yellow, decision, in ms) are the table's: its environment may override
the casino configuration's (``ELECTRIC_TABLE_UTH_*_MS``). Unless given, they are read from the
round's own record — green and yellow from ``RoundOpened``, the decision window from the
first ``DecisionWindowOpened`` — and every later window must then keep that length.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import electric_domain.casino.uth.events as uth
from electric.table.v1 import casino_events_pb2 as cev
from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.uth.round import UthRound

from electric_audit.checks import CheckResult
from electric_audit.sources import Located

#: A table event with its message and decoded domain event (None when it carries none).
Row = tuple[Located, Any, Any]
#: (green, yellow, decision) window lengths in ms.
Windows = tuple[int, int, int]


def recorded_windows(events: Sequence[Any], config: CasinoConfig) -> Windows:
    """The windows the round was played with, from its record (module doc)."""
    opened = events[0]
    window = next((e for e in events if isinstance(e, uth.DecisionWindowOpened)), None)
    decision = window.deadline - window.at if window else config.uth.decision_ms
    return opened.yellow_at - opened.at, opened.close_at - opened.yellow_at, decision


def _command(e: Any) -> Any:
    """The command that made recorded event ``e``; None for an event of the clock."""
    if isinstance(e, uth.SeatTaken):
        return uth.TakeSeat(e.player, e.at)
    if isinstance(e, uth.BetsPlaced):
        if e.kind == "double":
            return uth.Double(e.seat, e.at)
        if e.kind == "repeat":
            return uth.Repeat(e.seat, e.at)
        spot, cents = e.placements[0] if e.placements else ("", 0)
        return uth.PlaceBet(e.seat, spot, cents, e.at)
    if isinstance(e, uth.BetsUndone):
        return uth.Undo(e.seat, e.at)
    if isinstance(e, uth.Decided):
        return uth.Decide(e.seat, e.action, e.at)
    if isinstance(e, uth.RoundVoided):
        return uth.Void(e.reason, e.at)
    return None


def _name(e: Any) -> str:
    fields = ", ".join(
        f"{f.name}={getattr(e, f.name)!r}" for f in dataclasses.fields(e) if f.name != "results"
    )
    return f"{type(e).__name__}({fields})"


def uth_domain(
    rows: Sequence[Row], seed: str, config: CasinoConfig, windows: Windows | None = None
) -> tuple[CheckResult, Windows | None]:
    """Play the round again (module doc); the result and the windows used."""
    result = CheckResult("domain")
    carried = [(loc, d) for loc, _, d in rows if d is not None]
    if not carried or not isinstance(carried[0][1], uth.RoundOpened) or not seed:
        return result, None  # still in play: the seed (hence the deal) is not revealed yet
    where = [loc.location() for loc, _ in carried]
    opened = dataclasses.replace(carried[0][1], deck_seed_hex=seed)
    recorded = [opened, *(d for _, d in carried[1:])]
    if opened.config_version != config.version:
        result.checked += 1
        result.fail(where[0], f"config version {opened.config_version}, we have {config.version}")
        return result, None
    found = recorded_windows(recorded, config)
    used = windows or found
    if min(used[0], used[2]) < 1 or used[1] < 0:
        result.checked += 1
        result.fail(where[0], f"windows {used} ms are not windows")
        return result, used
    timed = dataclasses.replace(
        config.uth, green_ms=used[0], yellow_ms=used[1], decision_ms=used[2]
    )
    replayed = UthRound.open(
        dataclasses.replace(config, uth=timed), round_id=opened.round_id,
        game_number=opened.game_number, deck_seed=bytes.fromhex(seed), at=opened.at,
        previous_bets=dict(opened.previous_bets),
    )  # fmt: skip
    history = replayed.history
    for k, e in enumerate(recorded):
        result.checked += 1
        if len(history) <= k:
            command = _command(e) or uth.Tick(e.at)
            before = len(history)
            try:
                replayed.handle(command)
            except ValueError as exc:  # Rejected, or a seat the domain never gave
                first = f"at {e.at} the domain first gives {_name(history[before])}, then " if (
                    len(history) > before
                ) else ""  # fmt: skip
                result.fail(where[k], f"{first}refuses {_name(e)}: {exc}")
                return result, used
            if len(history) <= k:
                result.fail(where[k], f"recorded {_name(e)}; the domain gives nothing then")
                return result, used
        if history[k] != e:
            result.fail(where[k], f"the domain gives {_name(history[k])}, recorded {_name(e)}")
            return result, used
    if len(history) > len(recorded):
        result.fail(where[-1], f"the domain goes on with {_name(history[len(recorded)])}, "
                    "which is not recorded")  # fmt: skip
    return result, used


def seat_players(rows: Sequence[Row]) -> dict[int, str]:
    """Seat → player, as the domain seated them (its ``SeatTaken`` events)."""
    return {d.seat: d.player for _, _, d in rows if isinstance(d, uth.SeatTaken)}


def _bet_seat(bet_id: str, round_id: str) -> int | None:
    """The seat in a UTH bet id ``<round>:<seat>:<n>-<tok>:<spot>`` / ``<round>:<seat>:play``."""
    head, _, rest = bet_id.partition(":")
    seat = rest.split(":", 1)[0]
    return int(seat) if head == round_id and seat.isdigit() else None


def uth_seats(rows: Sequence[Row], round_id: str) -> CheckResult:
    """Every table event naming a seat's player names the domain's (module doc)."""
    result = CheckResult("seats")
    players = seat_players(rows)
    for located, m, d in rows:
        claims: list[tuple[int | None, str]] = []
        if isinstance(m, cev.CasinoUthSeatTaken | cev.CasinoBetsPlaced | cev.CasinoBetsUndone):
            claims.append((m.seat, m.player_id))
            if d is not None and getattr(d, "seat", m.seat) != m.seat:
                claims.append((None, f"seat {m.seat}, its record says seat {d.seat}"))
        elif isinstance(m, cev.CasinoBetPlaced):
            claims.append((_bet_seat(m.bet_id, round_id), m.player_id))
        elif isinstance(m, cev.CasinoDecisionMade | cev.CasinoSeatSettled) and d is not None:
            claims.append((d.seat, m.player_id))
        elif isinstance(m, cev.CasinoRoundSettled | cev.CasinoRoundVoided):
            seats = [e.seat for _, _, e in rows if isinstance(e, uth.SeatSettled)]
            if isinstance(d, uth.RoundVoided):
                seats = [seat for seat, _ in d.refunds]
            named = [p.player_id for p in m.players]
            if named != [players.get(s, f"seat {s}") for s in seats]:
                claims.append((None, f"players {named}, the domain's seats {seats}"))
            else:
                claims += [(s, p) for s, p in zip(seats, named, strict=True)]
        if not claims:
            continue
        result.checked += 1
        for seat, player in claims:
            if seat is None:
                result.fail(located.location(), f"{type(m).__name__}: {player}")
                break
            if players.get(seat) != player:
                result.fail(located.location(), f"{type(m).__name__} names {player!r} for seat "
                            f"{seat}; the domain seated {players.get(seat)!r} there")  # fmt: skip
                break
    return result


def joined(rows: Sequence[Row]) -> list[str]:
    """``seat N player (seated at the open | joined with their first bet)`` for the story."""
    out = []
    domain = [d for _, _, d in rows if d is not None]
    opened_at = domain[0].at if domain and isinstance(domain[0], uth.RoundOpened) else None
    for e in domain:
        if not isinstance(e, uth.SeatTaken):
            continue
        how = "seated at the open"
        if e.at != opened_at:  # a betting action of that seat at the same moment seated it
            first = any(isinstance(x, uth.BetsPlaced) and (x.seat, x.at) == (e.seat, e.at)
                        for x in domain)  # fmt: skip
            how = "joined with their first bet" if first else "seated during betting"
        out.append(f"seat {e.seat} {e.player} ({how})")
    return out

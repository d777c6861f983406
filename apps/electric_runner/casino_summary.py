"""Casino figures of a running platform: per game rounds per minute, handle, house win and
observed RTP next to the exact RTP of the game math.

Folded from the table topic's casino events (``CasinoRoundStarted``, ``CasinoRoundSettled``,
``CasinoRoundVoided``). The exact figures are read from the math's stored data
(``electric_math/data/<game>.json``, ``figures.exact``), never copied here:

* main game: ``rtp_total`` = expected return per cent staked on every main spot (THB: Ante,
  Flop, Turn, River; UTH: Ante, Blind, Play) under the optimal strategy — compared with the
  observed return / handle of those spots;
* UTH Trips: ``trips_rtp`` — compared with the Trips spot on its own.

Bots mixing strategies (and a bot that never decides) play worse than optimal, so the
observed figure sits a little below the exact one on top of the random spread.
"""

from __future__ import annotations

import importlib.resources
import json
import time
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as cev

GAMES: tuple[str, ...] = ("thb", "uth")
#: Side bets with their own exact RTP (``figures.exact.<spot>_rtp``).
SIDE_SPOTS: frozenset[str] = frozenset({"trips"})

_STARTED = cev.CasinoRoundStarted.DESCRIPTOR.full_name
_SETTLED = cev.CasinoRoundSettled.DESCRIPTOR.full_name
_VOIDED = cev.CasinoRoundVoided.DESCRIPTOR.full_name


@lru_cache(maxsize=4)
def exact_figures(game: str) -> dict[str, Fraction]:
    """``figures.exact`` of the game's stored math, as fractions (empty if not available)."""
    try:
        path = importlib.resources.files("electric_math").joinpath(f"data/{game}.json")
        doc = json.loads(path.read_text("utf-8"))
    except (ModuleNotFoundError, FileNotFoundError, ValueError):
        return {}
    return {k: Fraction(v) for k, v in doc["figures"]["exact"].items()}


@dataclass
class GameFigures:
    """One game's running totals (cents)."""

    started: int = 0
    settled: int = 0
    voided: int = 0
    handle_cents: int = 0
    returned_cents: int = 0
    side_handle_cents: int = 0
    side_returned_cents: int = 0
    #: Monotonic times of the settlements seen (for the rate), bounded.
    settled_at: list[float] = field(default_factory=list)

    @property
    def house_win_cents(self) -> int:
        """What the house kept: handle − returned, side bets included."""
        staked = self.handle_cents + self.side_handle_cents
        return staked - self.returned_cents - self.side_returned_cents

    @property
    def rtp(self) -> Fraction | None:
        """Observed return per cent staked on the main spots."""
        return Fraction(self.returned_cents, self.handle_cents) if self.handle_cents else None

    @property
    def side_rtp(self) -> Fraction | None:
        if not self.side_handle_cents:
            return None
        return Fraction(self.side_returned_cents, self.side_handle_cents)

    def per_minute(self, started: float, now: float, window: float = 120.0) -> float:
        span = min(window, max(now - started, 1e-9))
        return sum(1 for t in self.settled_at if now - t <= span) * 60.0 / span


@dataclass
class CasinoFigures:
    """Every casino game's figures."""

    games: dict[str, GameFigures] = field(default_factory=lambda: {g: GameFigures() for g in GAMES})
    started_monotonic: float = field(default_factory=time.monotonic)

    def _game(self, name: str) -> GameFigures:
        return self.games.setdefault(name or "?", GameFigures())

    def apply(self, envelope: Envelope) -> bool:
        """Fold one event; False when it is not a casino round event."""
        kind = envelope.event_type
        if kind == _STARTED:
            started = cev.CasinoRoundStarted()
            envelope.payload.Unpack(started)
            self._game(started.game).started += 1
        elif kind == _SETTLED:
            settled = cev.CasinoRoundSettled()
            envelope.payload.Unpack(settled)
            g = self._game(settled.game)
            g.settled += 1
            g.settled_at.append(time.monotonic())
            del g.settled_at[:-20000]
            for player in settled.players:
                for r in player.results:
                    if r.spot in SIDE_SPOTS:
                        g.side_handle_cents += r.stake_cents
                        g.side_returned_cents += r.returned_cents
                    else:
                        g.handle_cents += r.stake_cents
                        g.returned_cents += r.returned_cents
        elif kind == _VOIDED:
            voided = cev.CasinoRoundVoided()
            envelope.payload.Unpack(voided)
            self._game(voided.game).voided += 1
        else:
            return False
        return True


def _pct(x: Fraction | None, places: int = 2) -> str:
    return "-" if x is None else f"{float(x) * 100:.{places}f}%"


def _usd(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{part:02d}"


def render_casino(figures: CasinoFigures, now: float | None = None) -> list[str]:
    """One line per game that has seen a round."""
    now = time.monotonic() if now is None else now
    lines = []
    for name, g in figures.games.items():
        if not (g.started or g.settled or g.voided):
            continue
        exact = exact_figures(name)
        line = (
            f"casino {name.upper():<5} rounds {g.settled}"
            f" ({g.per_minute(figures.started_monotonic, now):.0f}/min)"
            f"  handle {_usd(g.handle_cents + g.side_handle_cents)}"
            f"  house win {_usd(g.house_win_cents)}"
            f"  RTP {_pct(g.rtp)} (exact {_pct(exact.get('rtp_total'), 3)})"
        )
        if g.side_handle_cents:
            line += f"  trips RTP {_pct(g.side_rtp)} (exact {_pct(exact.get('trips_rtp'), 3)})"
        if g.voided:
            line += f"  voided {g.voided}"
        lines.append(line)
    return lines

"""The casino lobby's view (pure): each game with its limits and pay tables from the casino
configuration (``electric_domain.casino.common.config``), its open tables and the number of
players seated at each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from electric_domain.casino.common.config import CATEGORY_NAMES, CasinoConfig, Ratio
from electric_domain.lobby.casino import CasinoGame, CasinoTable


@dataclass(frozen=True)
class Limit:
    """Minimum and maximum of one bet spot, in cents."""

    spot: str
    min_cents: int
    max_cents: int


@dataclass(frozen=True)
class PayLine:
    """One line of a pay table: a hand category and its ratio (``win:stake``)."""

    category: str
    ratio: Ratio


@dataclass(frozen=True)
class TableLine:
    """An open table and how many players sit at it."""

    table_id: str
    seated: int
    #: A THB table's player (private); empty for a shared UTH table.
    owner_id: str


@dataclass(frozen=True)
class GameLine:
    """One game of the casino lobby."""

    game: CasinoGame
    config_version: int
    limits: tuple[Limit, ...]
    #: Pay tables by name (``blind``, ``trips``), best category first.
    pay_tables: tuple[tuple[str, tuple[PayLine, ...]], ...]
    tables: tuple[TableLine, ...]
    seated: int
    #: True when joining creates a private table per player (THB).
    private_tables: bool


def _pay_lines(pays: tuple[Ratio | None, ...]) -> tuple[PayLine, ...]:
    return tuple(
        PayLine(CATEGORY_NAMES[i], r) for i in reversed(range(len(pays))) if (r := pays[i])
    )


def _from(first: int, ratio: Ratio) -> tuple[Ratio | None, ...]:
    return tuple(ratio if i >= first else None for i in range(len(CATEGORY_NAMES)))


def casino_lobby(
    config: CasinoConfig,
    tables: Iterable[CasinoTable],
    seated: Mapping[str, int],
    *,
    viewer_id: str = "",
) -> list[GameLine]:
    """The lobby's games (THB, UTH). Private THB tables are listed for their own player only
    (``viewer_id``); the THB total seated counts every player."""
    by_game: dict[CasinoGame, list[CasinoTable]] = {g: [] for g in CasinoGame}
    for t in tables:
        by_game[t.game].append(t)
    thb, uth = config.thb, config.uth
    specs: dict[CasinoGame, tuple[tuple[Limit, ...], tuple[tuple[str, tuple[PayLine, ...]], ...]]]
    specs = {
        CasinoGame.THB: (
            (Limit("ante", thb.ante_min_cents, thb.ante_max_cents),),
            # A winning Ante pays 1:1 only with this category or better, else it pushes.
            (("ante_on_win", _pay_lines(_from(thb.ante_pays_from, Ratio(1, 1)))),),
        ),
        CasinoGame.UTH: (
            (
                Limit("ante", uth.ante_min_cents, uth.ante_max_cents),
                Limit("trips", uth.trips_min_cents, uth.trips_max_cents),
            ),
            (("blind", _pay_lines(uth.blind_pays)), ("trips", _pay_lines(uth.trips_pays))),
        ),
    }
    out: list[GameLine] = []
    for game in CasinoGame:
        limits, pays = specs[game]
        own = sorted(by_game[game], key=lambda t: _number(t.table_id))
        lines = tuple(
            TableLine(t.table_id, seated.get(t.table_id, 0), t.owner_id)
            for t in own
            if not t.owner_id or t.owner_id == viewer_id
        )
        out.append(
            GameLine(
                game=game,
                config_version=config.version,
                limits=limits,
                pay_tables=pays,
                tables=lines,
                seated=sum(seated.get(t.table_id, 0) for t in own),
                private_tables=game is CasinoGame.THB,
            )
        )
    return out


def _number(table_id: str) -> int:
    tail = table_id.rpartition("-")[2]
    return int(tail) if tail.isdigit() else 0

"""Pure rules of casino wins: which bets of a settled round are paid, how much, and under
which wallet idempotency key (no I/O).

The table service owns rounds and results (RoundSettled, one owner per fact); payout pays
what it published. A bet is paid when its result is WIN: stake + win, from the casino
bankroll. A PUSH or REFUND is not paid by payout (the table voids its pending stake transfer), nor a
LOSE (the table posts the stake to the bankroll). Every bet kind is credited on its own, so
Trips (a side bet) is settled independently of the main bets.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

#: The wallet's longest transfer id.
MAX_TRANSFER_ID = 128


class BetResult(Enum):
    """Result of one bet as the table published it."""

    WIN = "win"
    LOSE = "lose"
    PUSH = "push"
    #: The stake is returned (the table voids its pending transfer); nothing is paid.
    REFUND = "refund"


@dataclass(frozen=True)
class SettledBet:
    """One bet of a settled round (RoundSettled, per player, per bet)."""

    player_id: str
    #: The bet's spot: ``ante``, ``blind``, ``trips``, ``play``, ...
    kind: str
    stake_cents: int
    result: BetResult
    #: The win excluding the stake (0 unless ``result`` is WIN).
    win_cents: int
    #: The bet's wallet stake transfer (the table's idempotency key = bet id); may be empty.
    stake_transfer_id: str = ""


@dataclass(frozen=True)
class SettledRound:
    """A RoundSettled in payout's terms."""

    round_id: str
    table_id: str
    game: str
    bets: tuple[SettledBet, ...]


@dataclass(frozen=True)
class WinCredit:
    """One credit owed for a winning bet."""

    round_id: str
    table_id: str
    game: str
    player_id: str
    bet_kind: str
    stake_cents: int
    win_cents: int
    stake_transfer_id: str
    key: str

    @property
    def amount_cents(self) -> int:
        """What is credited: stake + win."""
        return self.stake_cents + self.win_cents


class InvalidSettlement(ValueError):
    """A RoundSettled payout cannot pay as published (e.g. a negative amount)."""


def casino_win_key(round_id: str, player_id: str, bet_kind: str) -> str:
    """Wallet idempotency key of a casino win: ``cwin-<round>-<player>-<kind>`` (the player
    id is hashed when the key would exceed the wallet's 128 characters)."""
    key = f"cwin-{round_id}-{player_id}-{bet_kind}"
    if len(key) <= MAX_TRANSFER_ID:
        return key
    digest = hashlib.sha256(player_id.encode()).hexdigest()[:40]
    return f"cwin-{round_id}-{digest}-{bet_kind}"


def win_credits(settled: SettledRound) -> list[WinCredit]:
    """The credits a settled round owes: one per winning bet (player + bet kind), in the
    published order. Raises :class:`InvalidSettlement` for a round that cannot be paid as
    published (missing ids, negative amounts, a bet kind twice for one player)."""
    if not settled.round_id or not settled.table_id:
        raise InvalidSettlement("RoundSettled without round_id or table_id")
    seen: set[tuple[str, str]] = set()
    out: list[WinCredit] = []
    for bet in settled.bets:
        _check(bet, seen)
        if bet.result is not BetResult.WIN:
            continue
        out.append(
            WinCredit(
                round_id=settled.round_id,
                table_id=settled.table_id,
                game=settled.game,
                player_id=bet.player_id,
                bet_kind=bet.kind,
                stake_cents=bet.stake_cents,
                win_cents=bet.win_cents,
                stake_transfer_id=bet.stake_transfer_id,
                key=casino_win_key(settled.round_id, bet.player_id, bet.kind),
            )
        )
    return out


def _check(bet: SettledBet, seen: set[tuple[str, str]]) -> None:
    if not bet.player_id or not bet.kind:
        raise InvalidSettlement("a settled bet without player_id or kind")
    if (bet.player_id, bet.kind) in seen:
        raise InvalidSettlement(f"bet {bet.kind!r} of {bet.player_id!r} settled twice")
    seen.add((bet.player_id, bet.kind))
    if bet.stake_cents < 0 or bet.win_cents < 0:
        raise InvalidSettlement(f"bet {bet.kind!r} of {bet.player_id!r}: bad amounts")
    if bet.result is not BetResult.WIN and bet.win_cents:
        raise InvalidSettlement(f"bet {bet.kind!r} of {bet.player_id!r}: win on a non-win")


def total_cents(credits: Iterable[WinCredit]) -> int:
    """Stake + win of all ``credits``."""
    return sum(c.amount_cents for c in credits)

"""Money for casino rounds: integer cents, payout rounding, and settlement records.

**Rounding rule (``floor_cent``).** A win is ``stake × win / stake_ratio`` cents; when that is
not a whole number of cents (only a 3:2 payout on an odd number of cents) it is rounded
*down* to the cent: a 3:2 Blind of 25 cents wins 37 cents, not 37.5. The half cent stays with
the house. The exact math reports the rate at which this happens
(``p_blind_half_unit_win``): with an odd-cent Blind of ``b`` cents the house edge grows by
``p_blind_half_unit_win × 0.5 / b`` Antes per round; with even Antes nothing is rounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from electric_domain.casino.common.config import Ratio


class Outcome(StrEnum):
    """How one bet ended."""

    WIN = "win"
    LOSE = "lose"
    PUSH = "push"  # the stake is returned
    REFUND = "refund"  # void round: the stake is returned


def win_amount(stake_cents: int, ratio: Ratio) -> int:
    """The win (excluding the returned stake) of ``stake_cents`` at ``ratio``, floor to cent."""
    if stake_cents < 0:
        raise ValueError("a stake cannot be negative")
    return stake_cents * ratio.win // ratio.stake


@dataclass(frozen=True, slots=True)
class BetResult:
    """One bet's settlement. ``returned_cents`` goes back to the player: the stake plus the
    win for a win, the stake for a push or refund, nothing for a loss."""

    spot: str
    stake_cents: int
    outcome: Outcome
    win_cents: int = 0

    @property
    def returned_cents(self) -> int:
        if self.outcome is Outcome.LOSE:
            return 0
        return self.stake_cents + self.win_cents

    @property
    def house_net_cents(self) -> int:
        """What the house gains on this bet (negative when it pays a win)."""
        return self.stake_cents - self.returned_cents


def settle_bet(
    spot: str, stake_cents: int, outcome: Outcome, ratio: Ratio | None = None
) -> BetResult:
    """A result; a WIN needs its ``ratio``. A zero stake is always a push of nothing."""
    if stake_cents == 0:
        return BetResult(spot, 0, Outcome.PUSH)
    if outcome is Outcome.WIN:
        if ratio is None:
            raise ValueError("a win needs a ratio")
        return BetResult(spot, stake_cents, outcome, win_amount(stake_cents, ratio))
    return BetResult(spot, stake_cents, outcome)


EVEN = Ratio(1, 1)


def totals(results: tuple[BetResult, ...]) -> tuple[int, int, int]:
    """``(staked, returned, house_net)``; always ``staked == returned + house_net``."""
    staked = sum(r.stake_cents for r in results)
    returned = sum(r.returned_cents for r in results)
    return staked, returned, staked - returned

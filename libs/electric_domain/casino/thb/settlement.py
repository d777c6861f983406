"""THB settlement (seed 001 "Payouts"): best five of seven, no dealer qualifier.

* Fold: the Ante loses (no other bet was made).
* Player better: Flop, Turn and River bets pay 1:1; the Ante pays 1:1 only when the player's
  hand is a straight or better (configurable: ``ante_pays_from``), otherwise it pushes.
* Tie: every bet pushes. Dealer better: every bet loses.
"""

from __future__ import annotations

from electric_domain.casino.common.config import ThbConfig
from electric_domain.casino.common.deal import category_index
from electric_domain.casino.common.money import EVEN, BetResult, Outcome, settle_bet


def settle(
    cfg: ThbConfig,
    *,
    ante: int,
    flop: int,
    turn: int,
    river: int,
    folded: bool,
    player_rank: int = 0,
    dealer_rank: int = 0,
) -> tuple[BetResult, ...]:
    """Results for the Ante, Flop, Turn and River spots (zero stakes push nothing)."""
    if folded:
        return (settle_bet("ante", ante, Outcome.LOSE),)
    if player_rank > dealer_rank:
        ante_pays = category_index(player_rank) >= cfg.ante_pays_from
        ante_out = Outcome.WIN if ante_pays else Outcome.PUSH
        rest = Outcome.WIN
    elif player_rank == dealer_rank:
        ante_out = rest = Outcome.PUSH
    else:
        ante_out = rest = Outcome.LOSE
    return (
        settle_bet("ante", ante, ante_out, EVEN),
        settle_bet("flop", flop, rest, EVEN),
        settle_bet("turn", turn, rest, EVEN),
        settle_bet("river", river, rest, EVEN),
    )

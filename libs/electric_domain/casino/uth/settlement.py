"""UTH settlement (docs/design.md §7, the English reading of seed 004).

* Fold (player's choice at the river, or AUTOFOLDED): Ante and Blind lose.
* Otherwise, against the dealer's hand, qualified or not:
  player better — Play pays 1:1, Blind pays its table (Royal 500:1, Straight Flush 50:1,
  Quads 10:1, Full House 3:1, Flush 3:2, Straight 1:1, anything less pushes), Ante pays 1:1
  if the dealer qualifies (pair or better) and pushes if not;
  dealer better — Play and Blind lose, Ante loses if the dealer qualifies, pushes if not;
  tie — Ante, Play and Blind push.
* Trips pays its table on the player's final hand whatever happened, even after a fold
  (Royal 50:1 … Trips 3:1), and loses otherwise.
"""

from __future__ import annotations

from electric_domain.casino.common.config import UthConfig
from electric_domain.casino.common.deal import category_index
from electric_domain.casino.common.money import EVEN, BetResult, Outcome, settle_bet


def settle(
    cfg: UthConfig,
    *,
    ante: int,
    trips: int,
    play: int,
    folded: bool,
    player_rank: int,
    dealer_rank: int,
) -> tuple[BetResult, ...]:
    """Results for Ante, Blind (= Ante), Play and Trips."""
    cat = category_index(player_rank)
    trips_ratio = cfg.trips_pays[cat]
    trips_result = (
        settle_bet("trips", trips, Outcome.WIN, trips_ratio)
        if trips_ratio is not None
        else settle_bet("trips", trips, Outcome.LOSE)
    )
    blind = ante
    if folded:
        return (
            settle_bet("ante", ante, Outcome.LOSE),
            settle_bet("blind", blind, Outcome.LOSE),
            settle_bet("play", 0, Outcome.PUSH),
            trips_result,
        )
    qualifies = category_index(dealer_rank) >= cfg.dealer_qualifier
    if player_rank > dealer_rank:
        blind_ratio = cfg.blind_pays[cat]
        ante_r = settle_bet("ante", ante, Outcome.WIN if qualifies else Outcome.PUSH, EVEN)
        blind_r = (
            settle_bet("blind", blind, Outcome.WIN, blind_ratio)
            if blind_ratio is not None
            else settle_bet("blind", blind, Outcome.PUSH)
        )
        play_r = settle_bet("play", play, Outcome.WIN, EVEN)
    elif player_rank < dealer_rank:
        ante_r = settle_bet("ante", ante, Outcome.LOSE if qualifies else Outcome.PUSH)
        blind_r = settle_bet("blind", blind, Outcome.LOSE)
        play_r = settle_bet("play", play, Outcome.LOSE)
    else:
        ante_r = settle_bet("ante", ante, Outcome.PUSH)
        blind_r = settle_bet("blind", blind, Outcome.PUSH)
        play_r = settle_bet("play", play, Outcome.PUSH)
    return ante_r, blind_r, play_r, trips_result

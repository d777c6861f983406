"""Automatic consequences of a state: returned uncalled bets, closed rounds, exposed all-in
hands, pots formed by contribution level and awarded, the end of the hand.
"""

from __future__ import annotations

from electric_domain.holdem.decide import _round_closed
from electric_domain.holdem.events import (
    Event,
    HandEnded,
    HandShown,
    PotAwarded,
    UncalledBetReturned,
)
from electric_domain.holdem.fold import (
    _PH_BETTING,
    _PH_DEAL_BOARD,
    _PH_SHOWDOWN,
    _clockwise,
    _hand_rank,
    _showdown_order,
)
from electric_domain.holdem.state import (
    CommandRejected,
    HandState,
)


def _layers(committed: tuple[int, ...], contenders: list[int]) -> list[tuple[int, tuple[int, ...]]]:
    """Pots by contribution level; consecutive levels with the same contenders merged."""
    pots: list[tuple[int, tuple[int, ...]]] = []
    prev = 0
    for level in sorted(set(committed)):
        if level <= 0:
            continue
        amount = 0
        for c in committed:
            if c > prev:
                amount += (c if c < level else level) - prev
        eligible = tuple(i for i in contenders if committed[i] >= level)
        if pots and (pots[-1][1] == eligible or not eligible):
            pots[-1] = (pots[-1][0] + amount, pots[-1][1])
        else:
            pots.append((amount, eligible))
        prev = level
    return pots


def _pot_winners(
    eligible: tuple[int, ...], ranks: tuple[int, ...], order: list[int]
) -> tuple[int, ...]:
    if len(eligible) == 1:
        return eligible
    missing = [i for i in eligible if ranks[i] < 0]
    if missing:
        raise CommandRejected(f"the outcome depends on unknown hole cards of player(s) {missing}")
    best = max(ranks[i] for i in eligible)
    return tuple(i for i in order if i in eligible and ranks[i] == best)


def _award_events(s: HandState) -> list[Event]:
    n = s.n
    committed = s.committed
    folded, mucked = s.folded, s.mucked
    live = [i for i in range(n) if not folded[i] and not mucked[i]]
    order = list(_clockwise(n, (s.config.button + 1) % n))
    out: list[Event] = []
    if len(live) == 1:
        total = sum(committed)
        if total:
            out.append(PotAwarded(0, total, (live[0],), (live[0],), (total,)))
        return out
    ranks = s.shown_rank
    # A hand that wins no pot is out of contention (like a muck); the pots are then formed
    # among the contenders, so pots with the same contenders are split once.
    winning: set[int] = set()
    for _, eligible in _layers(committed, live):
        winning.update(_pot_winners(eligible, ranks, order))
    contenders = [i for i in live if i in winning]
    for index, (amount, eligible) in enumerate(_layers(committed, contenders)):
        winners = _pot_winners(eligible, ranks, order)
        q, r = divmod(amount, len(winners))
        shares = tuple(q + r if k == 0 else q for k in range(len(winners)))
        out.append(PotAwarded(index, amount, eligible, winners, shares))
    return out


def _auto_events(s: HandState) -> Event | list[Event] | None:
    """The next automatic consequence of ``s``, if any."""
    phase = s.phase
    if phase is _PH_BETTING:
        if s.to_act and s.folded.count(False) > 1:
            return None
        bets = s.bets
        top = max(bets)
        holders = [i for i in range(s.n) if bets[i] == top]
        if top > 0 and len(holders) == 1:
            p = holders[0]
            second = max(bets[i] for i in range(s.n) if i != p)
            return [UncalledBetReturned(p, top - second), _round_closed(s.street)]
        return _round_closed(s.street)
    if phase is _PH_DEAL_BOARD or phase is _PH_SHOWDOWN:
        if s.runout and not all(s.shown[i] for i in range(s.n) if not s.folded[i]):
            order = [i for i in _showdown_order(s) if not s.shown[i]]
            return [HandShown(i, s.hole[i], _hand_rank(s, i)) for i in order]
        if phase is _PH_SHOWDOWN and not s.showdown_queue:
            awards = _award_events(s)
            final = list(s.stacks)
            for e in awards:
                assert isinstance(e, PotAwarded)
                for w, share in zip(e.winners, e.shares, strict=True):
                    final[w] += share
            return [*awards, HandEnded(tuple(final))]
    return None

"""PHH (Poker Hand History, phh.readthedocs.io) import/export for no-limit hold'em.

Pure text in, text out: :mod:`.parse` (text → fields), :mod:`.replay` (fields → our engine,
outcomes), :mod:`.write` (events → text). Reading files is the audit tool's job
(``electric_audit.phh_files``).

Reading: ``.phh`` (one hand) and ``.phhs`` (``[N]`` sections, each a hand). Each hand is a
TOML document; a fast line parser handles the usual one-line ``key = value`` form and falls
back to :mod:`tomllib` (with decimals parsed as :class:`~decimal.Decimal`) for anything else.

Amounts: decimal amounts are replayed exactly in integer minor units — every amount of a hand
is scaled by ``10**k`` where ``k`` is the largest number of decimal places used in that hand;
results are scaled back (never floats).

Players: ``p1`` is the first player left of the button and ``pN`` is the button, so player
``pK`` is our index ``K-1`` with ``button = N-1``. ``blinds_or_straddles`` lists the small and
big blind for ``p1``, ``p2``; heads-up they are posted in reverse (the button ``p2`` posts the
small blind, ``p1`` the big blind) as the standard says. Straddles are not supported.

Actions: ``d dh pK CARDS`` (hole cards, ``??`` unknown), ``d db CARDS`` (board), ``pK f``
(fold; also with nothing to call, as our tables and pokerkit allow), ``pK cc`` (check or
call), ``pK cbr X`` (bet or raise TO ``X``), ``pK sm [CARDS]``
(show, or muck when no cards). A hand whose actions stop at the showdown is finished by the
house rule (show what can win, muck what cannot); hands whose outcome depends on ``????``
cards fail with an error.
"""

from electric_domain.phh.parse import PhhError, PhhHand, iter_hands, parse_hand_text
from electric_domain.phh.replay import ReplayResult, hand_config, replay_fields, replay_text
from electric_domain.phh.write import order_names, to_phh

__all__ = [
    "PhhError",
    "PhhHand",
    "ReplayResult",
    "hand_config",
    "iter_hands",
    "order_names",
    "parse_hand_text",
    "replay_fields",
    "replay_text",
    "to_phh",
]

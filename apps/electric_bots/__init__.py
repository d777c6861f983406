"""electric_bots: bot players as real gRPC clients of the public APIs.

:mod:`electric_bots.views` maps a player's own table view to the pure strategies of
:mod:`electric_domain.tournament.bots` and back; :mod:`electric_bots.player` is one bot
(:mod:`electric_bots.table_play`: its watch and play at one table, resumed where it ended);
:mod:`electric_bots.runner` runs many on one event loop (``python -m electric_bots``);
:mod:`electric_bots.tui` is the text client (``python -m electric_bots.tui``) that draws
tournaments from WatchTable and WatchMyTables alone. Casino bots: :mod:`electric_bots.casino`
(THB, shared plumbing), :mod:`electric_bots.casino_uth` (live UTH) and
:mod:`electric_bots.casino_runner` (both games on one event loop, used by ``make run``).
"""

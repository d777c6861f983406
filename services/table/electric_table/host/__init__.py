"""The table host: what every live table needs, whatever its game (issue 25 item 1).

- `tables`: the live tables of a game held by this instance (`LiveTables`), the one driver
  loop (`drive`) and the rebalance protocol (`Suspensions`);
- `ownership`: partition ownership by the consumer group (`PartitionOwnership`), the fence
  epochs it takes, and the followers (one per game) it tells;
- `routing` and `forwarding`: the one router (`Router`) over a game's `Directory`, and the
  interceptor that forwards a call to its table's owner;
- `clock`: the time the drivers feed.

A game plugs in: its folder (`tournament/`, `casino/thb/`, `casino/uth/`) gives its tables'
load and replay, one driver step, its ownership follower, its directory and its routes. The
host imports no game (an import contract); adding a game does not touch it
(tests/unit/table/test_table_a_fourth_game.py).
"""

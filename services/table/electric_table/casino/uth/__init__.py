"""Live Ultimate Texas Hold'em, a game plugged into the table host: `tables` (the live
tables, a `host.tables.LiveTables`), `driver` (one step of a table's clock), `batch` and
`live` (bets and decisions of many players in one write), `ownership` (its partition
follower), `routing` (its directory and routes), `records` (the one mapping of its events),
`recovery`, `settings`, `views` and `api` (the UTH calls of CasinoTableService)."""

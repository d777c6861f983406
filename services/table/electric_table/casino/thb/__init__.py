"""Texas Hold'em Bonus, a house-banked game of the casino tables: `handlers` (a round's
load, decide and append, with its bets held and settled through the wallet) and `records`
(THB's domain events ↔ stored casino events, shared with UTH for the record envelope).
Rounds are single-player: they need no owner, no driver and no routing."""

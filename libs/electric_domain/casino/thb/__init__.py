"""Texas Hold'em Bonus (seed 001): round aggregate, settlement, nicknames."""

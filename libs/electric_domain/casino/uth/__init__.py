"""Live Ultimate Texas Hold'em (seed 004, docs/design.md §7): round, settlement, strategy."""

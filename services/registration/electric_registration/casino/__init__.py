"""Registration's casino lobby: casino tables, seats and game sessions
(``docs/casino-services.md``, registration section)."""

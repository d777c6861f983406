"""Payout's casino side: credit the winning bets of settled casino rounds exactly once
(``docs/casino-services.md``, payout section)."""

"""The payout service."""

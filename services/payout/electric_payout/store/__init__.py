"""Own tables of the payout service (SQLAlchemy Core), migrations and queries."""

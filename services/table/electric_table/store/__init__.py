"""Own tables of the table service (SQLAlchemy Core), migrations and queries."""

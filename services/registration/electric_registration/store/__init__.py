"""Registration's own tables (SQLAlchemy Core), migrations and queries."""

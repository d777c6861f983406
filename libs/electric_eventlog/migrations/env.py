"""Alembic environment shared by the event log and by services' own migrations.

It never opens connections itself: :func:`electric_eventlog.migrate.upgrade` passes the
connection (inside its transaction) and the version table through ``config.attributes``, so
each component keeps its own history (``alembic_version_eventlog``, ``alembic_version_wallet``
...) in the same database.
"""

from __future__ import annotations

from alembic import context

config = context.config
connection = config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=config.attributes.get("target_metadata"),
    version_table=config.attributes["version_table"],
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()

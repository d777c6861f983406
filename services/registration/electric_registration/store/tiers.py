"""The lobby catalogue: buy-in tiers (``registration_tiers``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from electric_domain.lobby import Tier
from sqlalchemy import Connection, insert, select, text, update

from electric_registration.store import tables as t

#: Key of the advisory lock that serialises the start-up seeding of several registration
#: instances (tiers, first open tables, casino tables) on one database.
SEED_LOCK_KEY = 0x5E3D_7E61_2A17_0005


def seed_lock(conn: Connection) -> None:
    """Wait for and take the seeding lock inside ``conn``'s transaction (PostgreSQL; SQLite's
    ``BEGIN IMMEDIATE`` already excludes other writers). Instances started together on a
    fresh database would otherwise both insert the same tiers or UTH tables and one would
    die on the primary key; under the lock the second finds them and inserts nothing.
    Released at the end of the transaction."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SEED_LOCK_KEY})


def sync(conn: Connection, wanted: Sequence[Mapping[str, object]]) -> None:
    """Make the active tiers exactly ``wanted`` (rows with ``tier_id`` and the columns);
    tiers no longer wanted are deactivated (their history stays)."""
    existing = {r.tier_id for r in conn.execute(select(t.tiers.c.tier_id))}
    ids = set()
    for row in wanted:
        values = dict(row)
        tier_id = str(values.pop("tier_id"))
        ids.add(tier_id)
        if tier_id in existing:
            conn.execute(update(t.tiers).where(t.tiers.c.tier_id == tier_id).values(**values))
        else:
            conn.execute(insert(t.tiers).values(tier_id=tier_id, **values))
    stale = existing - ids
    if stale:
        conn.execute(update(t.tiers).where(t.tiers.c.tier_id.in_(stale)).values(active=0))


def _tier(r: Any) -> Tier:
    return Tier(
        r.tier_id,
        r.name,
        int(r.buy_in_cents),
        int(r.rake_cents),
        int(r.seats),
        int(r.starting_stack),
    )


def active(conn: Connection, tier_id: str) -> Tier | None:
    """The active tier ``tier_id``, if any."""
    r = conn.execute(
        select(t.tiers).where(t.tiers.c.tier_id == tier_id, t.tiers.c.active == 1)
    ).first()
    return None if r is None else _tier(r)


def active_ids(conn: Connection) -> list[str]:
    """Ids of the active tiers, cheapest first."""
    return list(
        conn.execute(
            select(t.tiers.c.tier_id)
            .where(t.tiers.c.active == 1)
            .order_by(t.tiers.c.buy_in_cents, t.tiers.c.sort_order)
        ).scalars()
    )


def lock(conn: Connection, tier_id: str) -> None:
    """Serialise the seat changes of a tier (row lock on PostgreSQL; SQLite's BEGIN
    IMMEDIATE already serialises writers)."""
    conn.execute(select(t.tiers.c.tier_id).where(t.tiers.c.tier_id == tier_id).with_for_update())


def get(conn: Connection, tier_id: str) -> Tier | None:
    """The tier ``tier_id``, active or not."""
    r = conn.execute(select(t.tiers).where(t.tiers.c.tier_id == tier_id)).first()
    return None if r is None else _tier(r)

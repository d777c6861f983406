"""The Electric tournament tables (TableService), a game plugged into the table host.

The aggregate, its commands and events are the domain's (`electric_domain.tournament`);
here are its service side: `api` (the servicer: proto ↔ command), `handlers` (load, decide,
append), `consumers` (tables started from registration's events), `runtime` (the live table
and its manager, a `host.tables.LiveTables`), `driver` (one step of its clock), `ownership`
(its partition follower), `routing` (its directory and routes), `views` and `story` (what
players and watchers see), `mapping`, `records` and `codec` (the one mapping of its events to
stored records) and `metrics`.
"""

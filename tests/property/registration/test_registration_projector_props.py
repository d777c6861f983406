"""Registration's one projector (issue 25 item 3): for random command sequences through the
handlers — Register (one or two entries, filling tables, opening new ones), the same
Register again (de-duplicated), Unregister, CancelTable, the buy-ins of a filled table paid
then the tournament started, the table service reporting a table finished, and settings
changes — the rows written live (the projector's SQL sink, ``projector.project``) equal the
rows a rebuild writes from the events (its memory sink, ``projections.Fold``), column for
column; and the comparison with the log finds nothing.

The wallet is not called: the reservations Register makes first are the registrar's
(``registrar.py``), and the owed wallet work is marked done by hand (it is not a fact of
the log). SQLite, and PostgreSQL with the ``integration`` marker; one database per backend
for the whole test, each example ends with the tables rebuilt.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig, default_config
from electric_eventlog import EventStore, migrate, upgrade
from electric_registration import cancellation, handlers, profiles
from electric_registration.store import projections, seating
from electric_registration.store import tables as t
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select, update

PLAYERS = ("a", "b", "c", "d")


@dataclass(frozen=True)
class Cmd:
    """One command; ``pick`` chooses among the existing tables or entries."""

    kind: str
    player: str = "a"
    entries: int = 1
    pick: int = 0
    flag: bool = False


_player = st.sampled_from(PLAYERS)
_pick = st.integers(0, 50)
_register = st.builds(Cmd, kind=st.just("register"), player=_player, entries=st.integers(1, 2))
commands = st.one_of(
    _register,
    _register,
    _register,
    st.builds(Cmd, kind=st.just("again")),
    st.builds(Cmd, kind=st.just("unregister"), player=_player, pick=_pick),
    st.builds(Cmd, kind=st.just("cancel"), pick=_pick),
    st.builds(Cmd, kind=st.just("pay"), pick=_pick),
    st.builds(Cmd, kind=st.just("finish"), pick=_pick),
    st.builds(Cmd, kind=st.just("settings"), player=_player, flag=st.booleans(), pick=_pick),
)


@dataclass
class Registration:
    engine: Engine
    store: EventStore
    config: TournamentConfig
    tier_id: str


def _ids(engine: Engine, table: Any, key: str) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(select(table.c[key])).scalars())


def _choose(ids: list[str], pick: int) -> str | None:
    return ids[pick % len(ids)] if ids else None


def _register(r: Registration, player: str, request_id: str, entries: int) -> None:
    begun = handlers.begin_attempt(
        r.engine,
        player_id=player,
        request_id=request_id,
        tier_id=r.tier_id,
        entries=entries,
        stale_after=timedelta(minutes=5),
    )
    if isinstance(begun, handlers.Attempt):
        handlers.seat_entries(
            r.store,
            r.config,
            player_id=player,
            request_id=request_id,
            attempt=begun,
            correlation_id=request_id,
        )


def _run(r: Registration, prefix: str, cmd: Cmd, request_id: str) -> None:
    player = f"{prefix}{cmd.player}"
    table_id = _choose(_ids(r.engine, t.tables, "table_id"), cmd.pick)
    if cmd.kind == "register":
        _register(r, player, request_id, cmd.entries)
    elif cmd.kind == "unregister":
        entry_id = _choose(_ids(r.engine, t.entries, "entry_id"), cmd.pick)
        if entry_id is not None:
            handlers.unregister(
                r.store,
                entry_id=entry_id,
                table_id="",
                player_id="",
                may_act_for=None,
                request_id=request_id,
                correlation_id=request_id,
            )
    elif cmd.kind == "cancel" and table_id is not None:
        cancellation.cancel_table(
            r.store,
            r.config,
            table_id=table_id,
            reason=cancellation.OPERATOR,
            detail="",
            cancelled_by="ops",
            correlation_id=request_id,
        )
    elif cmd.kind == "pay" and table_id is not None:
        # The owed wallet work done (not a fact of the log), then the start it waited for.
        with r.engine.begin() as conn:
            conn.execute(
                update(t.wallet_ops)
                .where(t.wallet_ops.c.table_id == table_id)
                .values(status="done")
            )
        handlers.start_if_paid(r.store, table_id, correlation_id=request_id)
    elif cmd.kind == "finish" and table_id is not None:
        # The table service's TournamentFinished (consumers.py): not in registration's log.
        with r.engine.begin() as conn:
            status = conn.execute(
                select(t.tables.c.status).where(t.tables.c.table_id == table_id)
            ).scalar_one()
            if status == "running":
                seating.table_finished(conn, table_id, hands=3, at=datetime.now(UTC))
    elif cmd.kind == "settings":
        update_ = lobby.SettingsUpdate(
            display_name=f"Name{cmd.pick % 3}" if cmd.pick % 2 else None,
            four_color_deck=cmd.flag,
        )
        profiles.update_settings(r.engine, r.store, player, update_, correlation_id=request_id)


def _rows(engine: Engine) -> dict[str, dict[Any, dict[str, Any]]]:
    out: dict[str, dict[Any, dict[str, Any]]] = {}
    with engine.connect() as conn:
        for name, table in (
            ("tables", t.tables),
            ("entries", t.entries),
            ("settings", t.player_settings),
        ):
            key = table.primary_key.columns.values()[0].name
            out[name] = {r[key]: dict(r) for r in conn.execute(select(table)).mappings()}
    return out


_examples = itertools.count()


@pytest.fixture(scope="module")
def registration(module_engine: Engine) -> Iterator[Registration]:
    """One migrated registration database per backend for the whole test (module doc)."""
    engine = module_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=t.VERSIONS_DIR,
        version_table="alembic_version_registration",
        target_metadata=t.metadata,
    )
    config = default_config()
    handlers.sync_tiers(engine, config)
    tier_id = lobby.tier_id_for(config.buy_ins[0].buy_in_cents)
    yield Registration(engine, EventStore(engine, producer="registration"), config, tier_id)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands, min_size=1, max_size=25))
def test_live_rows_equal_the_rows_rebuilt_from_the_events(
    registration: Registration, sequence: list[Cmd]
) -> None:
    r = registration
    n = next(_examples)
    prefix = f"x{n}-"
    previous: tuple[Cmd, str] | None = None
    for i, cmd in enumerate(sequence):
        request_id = f"{prefix}req-{i}"
        if cmd.kind == "again":
            if previous is None:
                continue
            cmd, request_id = previous  # the same Register again: de-duplicated
        with contextlib.suppress(lobby.LobbyError):  # refused: nothing recorded
            _run(r, prefix, cmd, request_id)
        if cmd.kind == "register":
            previous = (cmd, request_id)
    assert projections.rebuild_and_compare(r.engine, r.store) == []
    live = _rows(r.engine)
    projections.rebuild_projections(r.engine, r.store)
    assert _rows(r.engine) == live

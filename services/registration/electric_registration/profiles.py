"""Player settings (``electric_domain.lobby.profile``): read, and change in one transaction
with the ``PlayerSettingsChanged`` event (stream ``registration-player-<player_id>``, topic
``electric.registration.events``; the table service keeps the latest per player and uses the
muck settings at showdown)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from electric_domain import lobby
from electric_eventlog import EventStore, utc_now
from sqlalchemy import Engine

from electric_registration import codec, streams
from electric_registration.store import settings as store_settings

player_stream = codec.player_stream
changed_event = codec.settings_changed


@dataclass(frozen=True)
class Settings:
    """A player's settings and when they last changed (None: never)."""

    settings: lobby.PlayerSettings
    updated_at: datetime | None


def get_settings(engine: Engine, player_id: str) -> Settings:
    """The player's settings (defaults when never changed)."""
    with engine.connect() as conn:
        settings, at = store_settings.get(conn, player_id)
    return Settings(settings, at)


def update_settings(
    engine: Engine,
    store: EventStore,
    player_id: str,
    update: lobby.SettingsUpdate,
    *,
    correlation_id: str,
) -> tuple[Settings, bool]:
    """Apply ``update``; on a change, record PlayerSettingsChanged (its projection
    stores the new settings in the same transaction). Returns the settings and
    whether they changed."""
    now = utc_now()
    with engine.begin() as conn:
        current, at = store_settings.get(conn, player_id, lock=True)
        new, changed = lobby.apply_update(current, update)
        if not changed:
            return Settings(current, at), False
        # The projector writes the settings row from the event (insert at version 1).
        streams.record(
            store,
            conn,
            codec.player_stream(player_id),
            current.version,
            [codec.settings_changed(new)],
            correlation_id=correlation_id,  # the causation: the bound request id
            at=now,
        )
    return Settings(new, now), True

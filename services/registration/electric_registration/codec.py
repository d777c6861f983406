"""Registration's one mapper: a registration fact becomes a stored record here and only here.

* the streams (``registration-table-<id>``, ``registration-player-<id>``,
  ``casino-table-<id>``) and the protobuf messages of ``electric.registration.v1``
  (``events.proto``, ``casino_events.proto``) built from the lobby's domain values: the
  handlers (:mod:`.handlers`, :mod:`.fill`, :mod:`.cancellation`, :mod:`.profiles`,
  :mod:`.casino.lobby`) decide, this module spells the decision as events;
* :func:`append`: the only call of the event store's append in registration. The store
  serialises each payload once (``electric_eventlog.registry.pack``, deterministic): those
  bytes are stored, hashed into the stream's chain and published to Kafka as they are;
* :func:`decode` / :func:`read_all`: the only read of a stored record back into an event
  (rebuilds, :mod:`.store.projections`). Every stored format is read here, so an older one
  would be upgraded in this one place. There is one format so far (``electric.registration
  .v1`` since the first release; proto3 defaults fill fields added since).

No SQL of its own (the event store runs it). The live rows are written by the projector
(:mod:`.store.projector`, called by :func:`.streams.record` right after :func:`append`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import casino_events_pb2 as casino_ev
from electric.registration.v1 import events_pb2 as ev
from electric_clients.convert import ms_duration, usd
from electric_domain import lobby
from electric_domain.lobby.casino import ReleaseReason, Session
from electric_domain.tournament import TournamentConfig
from electric_eventlog import NO_STREAM, EventStore
from electric_eventlog.model import Expected
from google.protobuf.message import Message
from sqlalchemy import Connection

#: Registration's own event types (the store also holds platform events such as
#: ServiceInstanceStarted, written by the platform under the same producer).
OURS = "electric.registration."
OPERATOR = ev.TABLE_CANCEL_REASON_OPERATOR
BUY_IN_FAILED = ev.TABLE_CANCEL_REASON_BUY_IN_FAILED
_REASON = {
    ReleaseReason.LEFT: casino_ev.CASINO_SEAT_RELEASE_REASON_LEFT,
    ReleaseReason.IDLE_EXPIRED: casino_ev.CASINO_SEAT_RELEASE_REASON_IDLE_EXPIRED,
}


# --------------------------------------------------------------------------- streams


def table_stream(table_id: str) -> str:
    """Event stream of a registration table."""
    return f"registration-table-{table_id}"


def player_stream(player_id: str) -> str:
    """Event stream of a player's settings."""
    return f"registration-player-{player_id}"


def casino_stream(table_id: str) -> str:
    """Event stream of a casino table."""
    return f"casino-table-{table_id}"


def expected(version: int) -> Expected:
    """The expected version of a stream whose row records ``version`` (0: a new stream)."""
    return version if version > 0 else NO_STREAM


# --------------------------------------------------------------------------- sit-and-go


def table_opened(
    table_id: str, table_name: str, tier: lobby.Tier, *, commitment: str, paytable_version: str
) -> ev.TableOpened:
    """A table of ``tier`` opened; only the seed's commitment is public."""
    return ev.TableOpened(
        table_id=table_id,
        table_name=table_name,
        tier_id=tier.tier_id,
        buy_in=usd(tier.buy_in_cents),
        rake=usd(tier.rake_cents),
        seats=tier.seats,
        multiplier_seed_commitment=commitment,
        paytable_version=paytable_version,
        starting_stack=tier.starting_stack,
    )


def player_registered(
    table_id: str, place: lobby.Placement, *, player_id: str, buy_in_cents: int, request_id: str
) -> ev.PlayerRegistered:
    """An entry took the seat the lobby's seating plan gave it."""
    return ev.PlayerRegistered(
        table_id=table_id,
        entry_id=place.entry_id,
        player_id=player_id,
        seat=place.seat,
        buy_in=usd(buy_in_cents),
        wallet_transfer_id=lobby.buyin_transfer_id(place.entry_id),
        request_id=request_id,
        players_registered=place.players_registered,
    )


def player_unregistered(
    table_id: str,
    *,
    entry_id: str,
    player_id: str,
    seat: int,
    transfer_id: str,
    request_id: str,
    players_registered: int,
) -> ev.PlayerUnregistered:
    """An entry gave up its seat while the table was registering."""
    return ev.PlayerUnregistered(
        table_id=table_id,
        entry_id=entry_id,
        player_id=player_id,
        seat=seat,
        wallet_transfer_id=transfer_id,
        request_id=request_id,
        players_registered=players_registered,
    )


def seat_assignment(
    seat: int, player_id: str, entry_id: str, display_name: str
) -> tournament_pb2.SeatAssignment:
    """A seat of a filled table, as TableFilled and TournamentStarted list it."""
    return tournament_pb2.SeatAssignment(
        seat=seat, player_id=player_id, entry_id=entry_id, display_name=display_name
    )


def levels_for(config: TournamentConfig, multiplier: int) -> list[tournament_pb2.BlindLevel]:
    """The blind levels a tournament with ``multiplier`` plays before Electric Mode."""
    count = config.levels_for(multiplier)
    return [
        tournament_pb2.BlindLevel(
            level=i + 1,
            small_blind=lv.small_blind,
            big_blind=lv.big_blind,
            ante=lv.ante,
            duration=ms_duration(config.level_duration_ms),
        )
        for i, lv in enumerate(config.blind_levels[:count])
    ]


def payouts_for(
    config: TournamentConfig, multiplier: int, buy_in_cents: int
) -> tuple[int, list[tournament_pb2.PrizeShare]]:
    """(prize pool, paid places) of a multiplier: pool = multiplier × gross buy-in; place
    amounts by the pay table's shares (``prizes.place_amounts``: floor, remainder to 1st);
    shares in basis points summing to 10000 (``lobby.share_bps``)."""
    pool = multiplier * buy_in_cents
    return pool, [
        tournament_pb2.PrizeShare(place=p.place, share_bps=p.share_bps, amount=usd(p.amount_cents))
        for p in lobby.prizes_for(config, multiplier, buy_in_cents)
    ]


def table_filled(
    table_id: str,
    seats: Sequence[tournament_pb2.SeatAssignment],
    *,
    multiplier: int,
    seed_hex: str,
    commitment: str,
    pool_cents: int,
    paytable_version: str,
) -> ev.TableFilled:
    """The last seat was taken: the seed and the drawn multiplier revealed."""
    return ev.TableFilled(
        table_id=table_id,
        seats=seats,
        multiplier=multiplier,
        multiplier_seed=seed_hex,
        multiplier_seed_commitment=commitment,
        prize_pool=usd(pool_cents),
        paytable_version=paytable_version,
    )


def tournament_started(
    filled: ev.TableFilled,
    config: TournamentConfig,
    tier: lobby.Tier,
    *,
    table_name: str,
    table_size: int,
    payouts: Sequence[tournament_pb2.PrizeShare],
    first_button_seat: int,
) -> ev.TournamentStarted:
    """The tournament's terms, prepared at the fill (appended once the buy-ins are posted:
    ``handlers.start_if_paid``)."""
    return ev.TournamentStarted(
        tournament_id=filled.table_id,
        table_id=filled.table_id,
        tier_id=tier.tier_id,
        seats=filled.seats,
        multiplier=filled.multiplier,
        levels=levels_for(config, filled.multiplier),
        starting_stack=tier.starting_stack,
        buy_in=usd(tier.buy_in_cents),
        rake=usd(tier.rake_cents),
        prize_pool=filled.prize_pool,
        payouts=payouts,
        action_timer=ms_duration(config.action_timer_ms),
        time_bank=ms_duration(config.time_bank_ms),
        paytable_version=config.version,
        table_name=table_name,
        multiplier_seed=filled.multiplier_seed,
        multiplier_seed_commitment=filled.multiplier_seed_commitment,
        first_button_seat=first_button_seat,
        level_duration=ms_duration(config.level_duration_ms),
        table_size=table_size,
    )


def prepared_start(raw: bytes) -> ev.TournamentStarted:
    """The TournamentStarted prepared at the fill, as the table's row keeps it."""
    return ev.TournamentStarted.FromString(raw)


def table_cancelled(
    table_id: str,
    *,
    reason: ev.TableCancelReason.ValueType,
    detail: str,
    previous_status: str,
    entries: Sequence[tuple[str, str, int, str]],
    cancelled_by: str,
) -> ev.TableCancelled:
    """The table was cancelled; ``entries``: (entry id, player id, seat, transfer id) of
    each active entry, whose buy-in is given back."""
    return ev.TableCancelled(
        table_id=table_id,
        reason=reason,
        detail=detail,
        previous_status=previous_status,
        entries=[
            ev.CancelledEntry(entry_id=e, player_id=p, seat=s, wallet_transfer_id=t)
            for e, p, s, t in entries
        ],
        cancelled_by=cancelled_by,
    )


def settings_changed(s: lobby.PlayerSettings) -> ev.PlayerSettingsChanged:
    """The event carrying the complete new state of ``s``."""
    return ev.PlayerSettingsChanged(
        player_id=s.player_id,
        display_name=s.shown_name,
        muck_winning_hands=s.muck_winning_hands,
        muck_losing_hands=s.muck_losing_hands,
        four_color_deck=s.four_color_deck,
        alert_sounds=s.alert_sounds,
        sound_fx=s.sound_fx,
        show_details=s.show_details,
        version=s.version,
    )


# --------------------------------------------------------------------------- casino


def casino_table_opened(table_id: str, game: str, owner_id: str = "") -> Message:
    """A casino table opened (shared UTH tables have no owner)."""
    return casino_ev.CasinoTableOpened(table_id=table_id, game=game, owner_id=owner_id)


def casino_seat_taken(s: Session) -> Message:
    """A player sat down: the session ``s`` began."""
    return casino_ev.CasinoSeatTaken(
        table_id=s.table_id,
        game=s.game.value,
        player_id=s.player_id,
        seat=s.seat,
        session_id=s.session_id,
    )


def casino_seat_released(s: Session, reason: ReleaseReason) -> Message:
    """The session ``s`` ended (left, or idle too long)."""
    return casino_ev.CasinoSeatReleased(
        table_id=s.table_id,
        player_id=s.player_id,
        session_id=s.session_id,
        reason=_REASON[reason],
        game=s.game.value,
        seat=s.seat,
    )


# --------------------------------------------------------------------------- the store


def append(
    store: EventStore,
    conn: Connection,
    stream_id: str,
    version: Expected,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
    causation_id: str = "",
) -> list[Envelope]:
    """Append ``events`` to ``stream_id`` in ``conn``'s transaction at ``version`` (a
    concurrent append raises ``ConcurrencyError``); the stored envelopes. Empty ids default
    to the bound causal context (inside a call: its correlation id and the request id as
    causation)."""
    return store.append(
        conn,
        stream_id,
        version,
        list(events),
        correlation_id=correlation_id,
        causation_id=causation_id,
        occurred_at=at,
    )


def decode(store: EventStore, envelope: Envelope) -> Message | None:
    """The event of a stored record (upgraded from any older form: module doc); None for a
    record that is not one of registration's own events."""
    if envelope.producer != store.producer or not envelope.event_type.startswith(OURS):
        return None
    return store.decode(envelope)


def read_all(store: EventStore, conn: Connection) -> Iterator[tuple[Envelope, Message]]:
    """Every registration event of the store with its envelope, in global order."""
    for envelope in store.iter_all(conn):
        event = decode(store, envelope)
        if event is not None:
            yield envelope, event

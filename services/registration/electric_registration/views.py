"""Registration's rows as protobuf messages (the servicer's output side): My Tables, the
lobby's tiers, player settings."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import UTC, datetime

from electric.common.v1 import tournament_pb2
from electric.registration.v1 import events_pb2, registration_pb2
from electric_clients.convert import ms_duration, timestamp, usd
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig

from electric_registration.store import repo

_STATUS = {
    "registering": registration_pb2.TABLE_STATUS_REGISTERING,
    "filled": registration_pb2.TABLE_STATUS_RUNNING,
    "running": registration_pb2.TABLE_STATUS_RUNNING,
    "finished": registration_pb2.TABLE_STATUS_FINISHED,
    "cancelled": registration_pb2.TABLE_STATUS_CANCELLED,
}
SPEED = {"hyper_turbo": registration_pb2.GAME_SPEED_HYPER_TURBO}
_ENTRY_STATUS = {
    "reserved": registration_pb2.ENTRY_STATUS_RESERVED,
    "confirmed": registration_pb2.ENTRY_STATUS_CONFIRMED,
    "unregistered": registration_pb2.ENTRY_STATUS_UNREGISTERED,
    "cancelled": registration_pb2.ENTRY_STATUS_CANCELLED,
}


def entry(e: repo.EntryRow) -> registration_pb2.Entry:
    return registration_pb2.Entry(
        entry_id=e.entry_id,
        player_id=e.player_id,
        table_id=e.table_id,
        tier_id=e.tier_id,
        seat=e.seat,
        buy_in=usd(e.buy_in_cents),
        status=_ENTRY_STATUS.get(e.status, registration_pb2.ENTRY_STATUS_UNSPECIFIED),
        wallet_transfer_id=e.wallet_transfer_id,
        registered_at=timestamp(e.registered_at),
    )


def status_text(row: repo.MyTableRow) -> str:
    """Short status for the Multi-Table Bar."""
    if row.status == "registering":
        return f"Waiting {row.players_registered}/{row.seats}"
    if row.status == "filled":
        return "Starting"
    p = row.progress
    if row.status == "running":
        if p is not None and p.eliminated:
            return f"Out {_ordinal(p.finishing_place)}" if p.finishing_place else "Out"
        if p is not None and row.turn_seat and row.turn_seat == p.seat:
            return f"Hand {row.current_hand_number} · Your turn"
        return f"Hand {row.current_hand_number}" if row.current_hand_number else "Starting"
    if row.status == "finished" and p is not None and p.finishing_place:
        return f"Finished {_ordinal(p.finishing_place)}"
    return row.status.capitalize()


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _shares(row: repo.MyTableRow, config: TournamentConfig) -> list[int]:
    """Basis points of each paid place (older rows did not record them: the pay table's)."""
    bps = [b for b, _ in row.payouts]
    if row.payouts and not any(bps) and row.paytable_version == config.version:
        with contextlib.suppress(KeyError):
            bps = [p.share_bps for p in lobby.prizes_for(config, row.multiplier, row.buy_in_cents)]
    return bps


def my_table(row: repo.MyTableRow, config: TournamentConfig) -> registration_pb2.MyTable:
    multipliers = [e.multiplier for e in config.pay_table.entries]
    drawn = row.multiplier > 0
    low = row.prize_pool_cents if drawn else min(multipliers) * row.buy_in_cents
    high = row.prize_pool_cents if drawn else max(multipliers) * row.buy_in_cents
    bps = _shares(row, config)
    table = registration_pb2.MyTable(
        table_id=row.table_id,
        table_name=row.table_name,
        tier_id=row.tier_id,
        buy_in=usd(row.buy_in_cents),
        players_registered=row.players_registered,
        seats=row.seats,
        game_speed=registration_pb2.GAME_SPEED_HYPER_TURBO,
        prize_pool=usd(row.prize_pool_cents),
        multiplier=row.multiplier,
        positions_paid=row.positions_paid,
        payouts=[
            tournament_pb2.PrizeShare(
                place=i + 1, share_bps=bps[i] if i < len(bps) else 0, amount=usd(cents)
            )
            for i, (_, cents) in enumerate(row.payouts)
        ],
        status=_STATUS.get(row.status, registration_pb2.TABLE_STATUS_UNSPECIFIED),
        my_entries=[entry(e) for e in row.entries],
        current_hand_number=row.current_hand_number,
        status_text=status_text(row),
        min_prize_pool=usd(low),
        max_prize_pool=usd(high),
        multiplier_seed_commitment=row.commitment,
        multiplier_seed=row.seed_hex,
        paytable_version=row.paytable_version,
        my_seat=row.entries[0].seat if row.entries else 0,
        turn_seat=row.turn_seat if row.status == "running" else 0,
        cancel_reason=row.cancel_reason if row.status == "cancelled" else "",
    )
    if row.tournament_started:
        started = events_pb2.TournamentStarted.FromString(row.tournament_started)
        table.seated.extend(started.seats)
    p = row.progress
    if p is not None:
        table.my_seat = p.seat
        table.my_stack = p.stack
        table.eliminated = p.eliminated
        table.finishing_place = p.finishing_place
        table.prize.CopyFrom(usd(p.prize_cents))
        if row.status == "running" and row.turn_seat == p.seat and not p.eliminated:
            table.my_turn = True
            if row.turn_deadline is not None:
                table.my_turn_deadline.CopyFrom(timestamp(_utc(row.turn_deadline)))
    return table


def running_table(r: repo.RunningTableRow) -> registration_pb2.RunningTable:
    table = registration_pb2.RunningTable(
        table_id=r.table_id,
        table_name=r.table_name,
        multiplier=r.multiplier,
        prize_pool=usd(r.prize_pool_cents),
        current_hand_number=r.current_hand_number,
    )
    if r.started_at is not None:
        table.started_at.CopyFrom(timestamp(_utc(r.started_at)))
    return table


def lobby_tier(
    r: repo.TierRow,
    config: TournamentConfig,
    running: Sequence[repo.RunningTableRow] = (),
) -> registration_pb2.LobbyTier:
    multipliers = [e.multiplier for e in config.pay_table.entries]
    total = config.pay_table.weight_total
    return registration_pb2.LobbyTier(
        tier_id=r.tier_id,
        name=r.name,
        buy_in=usd(r.buy_in_cents),
        rake=usd(r.rake_cents),
        seats=r.seats,
        tables_filling=r.tables_filling,
        players_waiting=r.players_waiting,
        open_tables=r.open_tables,
        game_speed=SPEED.get(r.game_speed, registration_pb2.GAME_SPEED_UNSPECIFIED),
        starting_stack=r.starting_stack,
        min_prize_pool=usd(min(multipliers) * r.buy_in_cents),
        max_prize_pool=usd(max(multipliers) * r.buy_in_cents),
        prize_pool_contribution=usd(r.buy_in_cents - r.rake_cents),
        rake_bps=r.rake_cents * 10_000 // r.buy_in_cents if r.buy_in_cents else 0,
        max_entries=lobby.MAX_ENTRIES,
        action_timer=ms_duration(config.action_timer_ms),
        time_bank=ms_duration(config.time_bank_ms),
        level_duration=ms_duration(config.level_duration_ms),
        paytable_version=config.version,
        running_tables=[running_table(t) for t in running],
        pay_table=[
            registration_pb2.PayTableRow(
                multiplier=line.multiplier,
                weight=line.weight,
                weight_total=total,
                probability=line.weight / total,
                prize_pool=usd(line.prize_pool_cents),
                prizes=[
                    tournament_pb2.PrizeShare(
                        place=p.place, share_bps=p.share_bps, amount=usd(p.amount_cents)
                    )
                    for p in line.prizes
                ],
                levels=[
                    tournament_pb2.BlindLevel(
                        level=i + 1,
                        small_blind=lv.small_blind,
                        big_blind=lv.big_blind,
                        ante=lv.ante,
                        duration=ms_duration(config.level_duration_ms),
                    )
                    for i, lv in enumerate(line.levels)
                ],
                time_until_electric_mode=ms_duration(line.clock_ms),
            )
            for line in lobby.pay_table_lines(config, r.buy_in_cents)
        ],
    )


def settings(
    s: lobby.PlayerSettings, updated_at: datetime | None
) -> registration_pb2.PlayerSettings:
    out = registration_pb2.PlayerSettings(
        player_id=s.player_id,
        display_name=s.shown_name,
        muck_winning_hands=s.muck_winning_hands,
        muck_losing_hands=s.muck_losing_hands,
        four_color_deck=s.four_color_deck,
        alert_sounds=s.alert_sounds,
        sound_fx=s.sound_fx,
        show_details=s.show_details,
        version=s.version,
        display_name_is_default=s.name_is_default,
    )
    if updated_at is not None:
        out.updated_at.CopyFrom(timestamp(_utc(updated_at)))
    return out

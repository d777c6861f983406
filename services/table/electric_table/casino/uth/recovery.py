"""The UTH auto-void rule for a round that cannot be replayed (a crash left its stream or
its withheld deck seed inconsistent): it cannot complete consistently, so it is voided
automatically from its rows — every reservation still standing is refunded once
(``CasinoRoundVoided``, ``voided_by = auto``, one ``refund`` result per reservation, no
domain record since the domain state is unknown), the round row becomes ``voided`` and its
players are owed the result (AckResult). The table then goes on with a new round.
"""

from __future__ import annotations

from electric.table.v1 import casino_events_pb2 as cev
from electric_eventlog import EventStore
from electric_eventlog.fencing import Fence
from sqlalchemy import Engine

from electric_table.casino import repo
from electric_table.casino.uth import records as uth_records
from electric_table.journal import append_round

#: Reason of a UTH round voided because it could not be replayed.
UNREPLAYABLE_REASON = "auto-void: the round could not be replayed consistently after a restart"


def void_unreplayable(
    engine: Engine, store: EventStore, round_id: str, fence: Fence | None = None
) -> list[str]:
    """Void the open round ``round_id`` from its rows (module doc); returns the bet ids whose
    reservations are now owed a void (empty if the round was not open). With ``fence`` (the
    table's, ``partitions`` ownership) only while still its owner (else ``FencedError``)."""
    with engine.begin() as conn:
        if fence is not None:
            fence.check(conn)
        row = repo.get_round(conn, round_id)
        if row is None or row.status != repo.OPEN:
            return []
        bets = repo.bets(conn, round_id)
        standing = [b for b in bets if b.owed_op in ("", repo.INTENT)]
        players: dict[str, list[cev.CasinoBetResult]] = {}
        for b in standing:
            players.setdefault(b.player_id, []).append(
                cev.CasinoBetResult(
                    bet_id=b.bet_id,
                    spot=b.spot,
                    stake_cents=b.amount_cents,
                    outcome="refund",
                    returned_cents=b.amount_cents,
                )
            )
        msg = cev.CasinoRoundVoided(
            round_id=round_id,
            table_id=row.table_id,
            game=uth_records.GAME,
            reason=UNREPLAYABLE_REASON,
            players=[cev.CasinoPlayerResult(player_id=p, results=r) for p, r in players.items()],
            voided_by="auto",
        )
        # The round row becomes voided and its players are owed the result: the journal's
        # projector writes both from the CasinoRoundVoided.
        append_round(store, conn, round_id, row.stream_version, [msg])
        repo.owe(conn, {b.bet_id: repo.VOID for b in bets})
    return [b.bet_id for b in standing]

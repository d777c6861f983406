"""Payout's casino event handlers, registered by payload type on the table topic's shared
``ConsumerWorker`` (``payout.table-events``): CasinoRoundSettled and CasinoRoundVoided of
``electric.table.v1`` (the table service's facts). Each is applied once (the worker's
applied-record commits with the effect); after a commit that owed wins, the crediter is woken.
"""

from __future__ import annotations

from collections.abc import Callable

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as table_casino
from electric_eventlog import ConsumerWorker
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection

from electric_payout.casino.rules import BetResult, SettledBet, SettledRound
from electric_payout.casino.wins import CasinoWins


def settled_round(msg: table_casino.CasinoRoundSettled) -> SettledRound:
    """A CasinoRoundSettled in payout's terms (bet kind = the bet's spot; an unknown
    outcome raises ValueError: poison, dead-lettered by the worker)."""
    return SettledRound(
        round_id=msg.round_id,
        table_id=msg.table_id,
        game=msg.game,
        bets=tuple(
            SettledBet(
                player_id=p.player_id,
                kind=r.spot,
                stake_cents=r.stake_cents,
                result=BetResult(r.outcome),
                win_cents=r.win_cents,
                stake_transfer_id=r.bet_id,
            )
            for p in msg.players
            for r in p.results
        ),
    )


class CasinoConsumers:
    """Registers the casino handlers on the table topic's worker."""

    def __init__(self, wins: CasinoWins, *, on_owed: Callable[[], None]) -> None:
        self._wins = wins
        self._on_owed = on_owed

    def register(self, worker: ConsumerWorker) -> None:
        """``worker.on(...)`` for both casino outcomes."""
        worker.on(table_casino.CasinoRoundSettled, self._settled)
        worker.on(table_casino.CasinoRoundVoided, self._voided)

    def _settled(
        self, conn: Connection, envelope: Envelope, msg: table_casino.CasinoRoundSettled
    ) -> AfterCommit | None:
        decision = self._wins.on_settled(
            conn,
            settled_round(msg),
            source_event_id=envelope.event_id,
            correlation_id=envelope.correlation_id,
        )
        return self._on_owed if decision.owed else None

    def _voided(
        self, conn: Connection, envelope: Envelope, msg: table_casino.CasinoRoundVoided
    ) -> AfterCommit | None:
        self._wins.on_voided(
            conn,
            round_id=msg.round_id,
            table_id=msg.table_id,
            game=msg.game,
            reason=msg.reason,
            source_event_id=envelope.event_id,
        )
        return None

"""Payout's casino decisions: a settled round → owed wins (CasinoWinOwed) → wallet credits
(CasinoWinCredited), exactly once.

The table service owns the results (RoundSettled / RoundVoided, one owner per fact). The
first of the two consumed for a round decides it, in the consumer's transaction
(``payout_casino_rounds``, primary key = round id): settled → one CasinoWinOwed (stream
``payout-casino-<round>``) per winning bet, and its ``payout_casino_wins`` row; voided →
nothing is owed (the table voids the pending stakes). A redelivered or late event changes
nothing.

Rows: the facts decided here (:mod:`electric_payout.facts`) go to the projector
(``store.projections.project``: the wins, the round of a round that owes, the credits) and
to the mapper (``codec.append``, the only append), in one transaction. A round that owes
nothing (voided, or settled without a winning bet) appends nothing: its round row is a
de-duplication record, written here through ``repo.add_round`` (docs/payout.md,
"Projections").

:class:`~electric_payout.casino.crediter.CasinoCrediter` then credits each owed win.

Causality (docs/logging.md): CasinoWinOwed keeps the correlation id of the CasinoRoundSettled
it follows (the request that settled the round) and is caused by it; the credit's wallet call
and CasinoWinCredited carry that correlation id and are caused by the CasinoWinOwed (the
crediter binds both, read back with :meth:`CasinoWins.owed_causes`). The round id stands in
only for an event without a correlation id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import EventStore, causality, utc_now
from sqlalchemy import Connection, Engine

from electric_payout import codec
from electric_payout import facts as f
from electric_payout.casino import repo
from electric_payout.casino.rules import SettledRound, WinCredit, win_credits
from electric_payout.codec import casino_stream
from electric_payout.store import projections


def _owed(c: WinCredit, source_event_id: str, at: datetime) -> f.CasinoWinOwed:
    """The CasinoWinOwed of one winning bet (its stake transfer: row context)."""
    return f.CasinoWinOwed(
        round_id=c.round_id,
        table_id=c.table_id,
        game=c.game,
        player_id=c.player_id,
        bet_kind=c.bet_kind,
        stake_cents=c.stake_cents,
        win_cents=c.win_cents,
        idempotency_key=c.key,
        source_event_id=source_event_id,
        occurred_at=at,
        stake_transfer_id=c.stake_transfer_id,
    )


@dataclass(frozen=True)
class RoundDecision:
    """What consuming a round's outcome did (acted on after the commit)."""

    round_id: str
    #: Wins taken on (0 for a void, a losing round, or an outcome already decided).
    owed: int
    #: True when this event decided the round (False: already decided before).
    decided: bool


class CasinoWins:
    """The settled/voided decision and the credit bookkeeping of casino wins."""

    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine = engine
        self.store = store

    def on_settled(
        self,
        conn: Connection,
        settled: SettledRound,
        *,
        source_event_id: str,
        correlation_id: str = "",
    ) -> RoundDecision:
        """Owe each winning bet of the round once (module doc)."""
        credits = win_credits(settled)  # raises InvalidSettlement before anything is written
        if repo.round_outcome(conn, settled.round_id) is not None:
            return RoundDecision(settled.round_id, 0, decided=False)
        now = utc_now()
        owed = [_owed(c, source_event_id, now) for c in credits]
        if not owed:
            # Nothing owed, nothing appended: the round row is the de-duplication record.
            repo.add_round(
                conn,
                round_id=settled.round_id,
                table_id=settled.table_id,
                game=settled.game,
                outcome="settled",
                reason="",
                source_event_id=source_event_id,
                at=now,
            )
            return RoundDecision(settled.round_id, 0, decided=True)
        # The round's row and its wins (the projector), then the events (the mapper).
        projections.project(conn, owed)
        codec.append(
            self.store,
            conn,
            owed,
            correlation_id=correlation_id or causality.correlation_id() or settled.round_id,
            causation_id=source_event_id,
        )
        return RoundDecision(settled.round_id, len(owed), decided=True)

    def on_voided(
        self,
        conn: Connection,
        *,
        round_id: str,
        table_id: str,
        game: str,
        reason: str,
        source_event_id: str,
    ) -> RoundDecision:
        """A voided round pays nothing; recording it makes a late RoundSettled pay nothing
        either (the table never publishes both; this keeps payout safe if it did)."""
        if not round_id:
            raise ValueError("RoundVoided without round_id")
        if repo.round_outcome(conn, round_id) is not None:
            return RoundDecision(round_id, 0, decided=False)
        repo.add_round(
            conn,
            round_id=round_id,
            table_id=table_id,
            game=game,
            outcome="voided",
            reason=reason,
            source_event_id=source_event_id,
            at=utc_now(),
        )
        return RoundDecision(round_id, 0, decided=True)

    # ------------------------------------------------------------------ crediting

    def owed(self, round_id: str | None = None) -> list[repo.WinRow]:
        """Wins owed and not yet credited."""
        with self.engine.connect() as conn:
            return repo.owed_wins(conn, round_id)

    def owed_causes(self, round_ids: Iterable[str]) -> dict[str, Envelope]:
        """The CasinoWinOwed envelope of each win (by transfer key) of ``round_ids``: the
        event that owes the credit (its id and correlation id travel with the wallet call)."""
        out: dict[str, Envelope] = {}
        with self.engine.connect() as conn:
            for round_id in set(round_ids):
                for envelope, fact in codec.read_stream(self.store, conn, casino_stream(round_id)):
                    if isinstance(fact, f.CasinoWinOwed):
                        out[fact.idempotency_key] = envelope
        return out

    def mark_credited(self, w: repo.WinRow, transfer_id: str) -> bool:
        """owed → credited with CasinoWinCredited, once. True when this call did it."""
        credited = f.CasinoWinCredited(
            round_id=w.round_id,
            table_id=w.table_id,
            game=w.game,
            player_id=w.player_id,
            bet_kind=w.bet_kind,
            amount_cents=w.amount_cents,
            wallet_transfer_id=transfer_id,
            idempotency_key=w.transfer_key,
            occurred_at=utc_now(),
        )
        with self.engine.begin() as conn:
            if not projections.project(conn, [credited]):
                return False  # credited already (the row says so): nothing to append
            codec.append(
                self.store,
                conn,
                [credited],
                # The crediter binds the CasinoWinOwed's ids (module doc); the round id and
                # the transfer key only stand in for a credit run outside it.
                correlation_id=causality.correlation_id() or w.round_id,
                causation_id=causality.causation_id() or w.transfer_key,
            )
            return True

    def note_failure(self, w: repo.WinRow, error: str) -> None:
        """Count a failed credit attempt."""
        with self.engine.begin() as conn:
            repo.note_failure(conn, w, error)

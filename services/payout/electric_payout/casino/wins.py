"""Payout's casino decisions: a settled round → owed wins (CasinoWinOwed) → wallet credits
(CasinoWinCredited), exactly once.

The table service owns the results (RoundSettled / RoundVoided, one owner per fact). The
first of the two consumed for a round decides it, in the consumer's transaction
(``payout_casino_rounds``, primary key = round id): settled → one ``payout_casino_wins`` row
and one CasinoWinOwed (stream ``payout-casino-<round>``) per winning bet; voided → nothing
is owed (the table voids the pending stakes). A redelivered or late event changes nothing.

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

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import casino_events_pb2 as ce
from electric_clients.convert import usd
from electric_eventlog import ANY, NO_STREAM, EventStore, causality, utc_now
from sqlalchemy import Connection, Engine

from electric_payout.casino import repo
from electric_payout.casino.rules import SettledRound, win_credits


def casino_stream(round_id: str) -> str:
    """Event stream of a casino round's payout."""
    return f"payout-casino-{round_id}"


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
        events = []
        for c in credits:
            repo.add_win(conn, c, source_event_id=source_event_id, at=now)
            events.append(
                ce.CasinoWinOwed(
                    round_id=c.round_id,
                    table_id=c.table_id,
                    game=c.game,
                    player_id=c.player_id,
                    bet_kind=c.bet_kind,
                    stake=usd(c.stake_cents),
                    win=usd(c.win_cents),
                    idempotency_key=c.key,
                    source_event_id=source_event_id,
                )
            )
        if events:
            self.store.append(
                conn,
                casino_stream(settled.round_id),
                NO_STREAM,
                list(events),
                correlation_id=correlation_id or causality.correlation_id() or settled.round_id,
                causation_id=source_event_id,
                occurred_at=now,
            )
        return RoundDecision(settled.round_id, len(events), decided=True)

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
        owed_type = ce.CasinoWinOwed.DESCRIPTOR.full_name
        out: dict[str, Envelope] = {}
        with self.engine.connect() as conn:
            for round_id in set(round_ids):
                for envelope in self.store.read_stream(conn, casino_stream(round_id)):
                    if envelope.event_type != owed_type:
                        continue
                    owed = ce.CasinoWinOwed()
                    envelope.payload.Unpack(owed)
                    out[owed.idempotency_key] = envelope
        return out

    def mark_credited(self, w: repo.WinRow, transfer_id: str) -> bool:
        """owed → credited with CasinoWinCredited, once. True when this call did it."""
        now = utc_now()
        with self.engine.begin() as conn:
            if not repo.mark_credited(conn, w, transfer_id, now):
                return False
            self.store.append(
                conn,
                casino_stream(w.round_id),
                ANY,
                [
                    ce.CasinoWinCredited(
                        round_id=w.round_id,
                        table_id=w.table_id,
                        game=w.game,
                        player_id=w.player_id,
                        bet_kind=w.bet_kind,
                        amount=usd(w.amount_cents),
                        wallet_transfer_id=transfer_id,
                        idempotency_key=w.transfer_key,
                    )
                ],
                # The crediter binds the CasinoWinOwed's ids (module doc); the round id and
                # the transfer key only stand in for a credit run outside it.
                correlation_id=causality.correlation_id() or w.round_id,
                causation_id=causality.causation_id() or w.transfer_key,
                occurred_at=now,
            )
            return True

    def note_failure(self, w: repo.WinRow, error: str) -> None:
        """Count a failed credit attempt."""
        with self.engine.begin() as conn:
            repo.note_failure(conn, w, error)

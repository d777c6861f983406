"""``electric-audit round ID``: the whole story of one THB or UTH casino round, checked.

A round is the table service's stream ``casino-<round_id>`` (docs/casino-services.md); each
of its events carries the domain event it was derived from (``DomainRecord``), decoded here
with the same dataclass codec (``thb``, ``uth``, ``casino_money`` modules). The checks:

* ``chains`` — the SHA-256 chain of the round's stream, of payout's ``payout-casino-<id>``
  stream and of the wallet streams of its bets and win credits;
* ``deck`` — SHA-256 of the revealed seed is the commitment published when the round
  started, and every card recorded (the player's, the board, the dealer's) is where the
  shared deal (:class:`electric_domain.casino.common.deal.Deal`) puts it;
* ``domain`` — the round is played again by the domain and must produce exactly the
  recorded events (cards, bets, decisions, showdown, settlement). THB
  (:class:`electric_domain.casino.thb.round.ThbRound`): from the revealed seed with the
  recorded decisions. UTH (:mod:`electric_audit.rounds_uth`): from the revealed seed and the
  round's windows, every recorded command re-decided at its recorded time (a decision out of
  its window, of a multiple the street does not offer or after the clock is refused) and
  every event of the clock re-made by a ``Tick``;
* ``seats`` (UTH) — every table event naming a seat's player names the player the domain
  seated there (at the open, or by their first bet);
* ``settlement`` — the published ``CasinoRoundSettled`` / ``CasinoRoundVoided`` (what payout
  acts on) says exactly what the domain's results say;
* ``bets`` — every bet placed was reserved first in the wallet (a pending transfer of its
  id and amount from the player to ``house:casino_bankroll``), and once the round is over
  each reservation is posted (a lost or won bet) or voided (push, refund, undone) exactly
  once;
* ``payouts`` — every winning bet has one CasinoWinOwed and one CasinoWinCredited of stake +
  win, and one posted wallet transfer moving that from the bankroll to the player; no other
  bet is credited.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import electric_domain.casino.common.money as casino_money
import electric_domain.casino.thb.events as thb
import electric_domain.casino.uth.events as uth
from electric.payout.v1 import casino_events_pb2 as pce
from electric.table.v1 import casino_events_pb2 as cev
from electric.wallet.v1 import events_pb2 as wev
from electric_clients import accounts
from electric_domain.casino.common.config import CasinoConfig, load_config
from electric_domain.casino.common.deal import Deal
from electric_domain.casino.thb.round import ThbRound
from electric_domain.deck import verify_deck
from electric_eventlog.dataclass_codec import CodecError, DataclassCodec

from electric_audit.checks import CheckResult, check_chains
from electric_audit.narrative import Narrative, money
from electric_audit.rounds_uth import Windows, joined, seat_players, uth_domain, uth_seats
from electric_audit.sources import Located, Source, restrict, unique_events

#: The table service's casino record codec (``electric_table.casino.thb.records.CODEC``).
CODEC = DataclassCodec({"thb": thb, "uth": uth, "casino_money": casino_money})


@dataclass
class RoundStory(Narrative):
    """What ``round ID`` found: the narrative and the checks."""

    round_id: str


@dataclass
class _Round:
    """The round's events: table (with decoded domain events), payout, wallet."""

    table: list[tuple[Located, Any, Any]] = field(default_factory=list)
    payout: list[tuple[Located, Any]] = field(default_factory=list)
    wallet: dict[str, list[tuple[Located, Any]]] = field(default_factory=dict)
    streams: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    def messages(self, cls: type[Any]) -> list[tuple[Located, Any]]:
        return [(loc, m) for loc, m, _ in self.table if isinstance(m, cls)]

    def domain(self) -> list[Any]:
        return [d for _, _, d in self.table if d is not None]


_TABLE_TYPES = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (
        cev.CasinoRoundStarted,
        cev.CasinoBetPlaced,
        cev.CasinoHoleCardsDealt,
        cev.CasinoDecisionMade,
        cev.CasinoBoardDealt,
        cev.CasinoShowdown,
        cev.CasinoRoundSettled,
        cev.CasinoRoundVoided,
        cev.CasinoDeckRevealed,
        cev.CasinoResultAcknowledged,
        cev.CasinoUthSeatTaken,
        cev.CasinoBetsPlaced,
        cev.CasinoBetsUndone,
        cev.CasinoLightChanged,
        cev.CasinoBettingClosed,
        cev.CasinoDecisionWindowOpened,
        cev.CasinoSeatSettled,
        cev.CasinoRoundEnded,
    )
}
_PAYOUT_TYPES = {
    cls.DESCRIPTOR.full_name: cls for cls in (pce.CasinoWinOwed, pce.CasinoWinCredited)
}
_WALLET_TYPES = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (wev.TransferPending, wev.TransferPosted, wev.TransferVoided)
}


def _parse(located: Located, types: dict[str, type[Any]]) -> Any:
    cls = types.get(located.envelope.event_type)
    if cls is None:
        return None
    message = cls()
    message.ParseFromString(located.envelope.payload.value)
    return message


def _unique(sources: Sequence[Source], streams: set[str]) -> dict[str, list[Located]]:
    found: dict[str, list[Located]] = defaultdict(list)
    for located in unique_events(sources, streams):
        found[located.envelope.stream_id].append(located)
    for events in found.values():
        events.sort(key=lambda x: x.envelope.stream_version)
    return found


def _collect(sources: Sequence[Source], rid: str) -> _Round:
    table_stream, payout_stream = f"casino-{rid}", f"payout-casino-{rid}"
    found = _unique(sources, {table_stream, payout_stream})
    r = _Round()
    for located in found.get(table_stream, []):
        message = _parse(located, _TABLE_TYPES)
        if message is None:
            continue
        decoded = None
        if "domain" in message.DESCRIPTOR.fields_by_name and message.HasField("domain"):
            try:
                decoded = CODEC.decode(message.domain.canonical_json)
            except CodecError as exc:
                r.problems.append(f"{located.location()}: record does not decode: {exc}")
        r.table.append((located, message, decoded))
    for located in found.get(payout_stream, []):
        message = _parse(located, _PAYOUT_TYPES)
        if message is not None:
            r.payout.append((located, message))
    transfers = {m.bet_id for _, m in r.messages(cev.CasinoBetPlaced)}
    transfers |= {m.wallet_transfer_id for _, m in r.payout if isinstance(m, pce.CasinoWinCredited)}
    wallet_streams = {f"wallet-transfer-{t}" for t in transfers if t}
    for stream, events in _unique(sources, wallet_streams).items():
        parsed = [(x, _parse(x, _WALLET_TYPES)) for x in events]
        r.wallet[stream.removeprefix("wallet-transfer-")] = [(x, m) for x, m in parsed if m]
    r.streams = {s for s in (table_stream, payout_stream) if found.get(s)} | set(
        f"wallet-transfer-{t}" for t in r.wallet
    )
    return r


def round_story(
    sources: Sequence[Source],
    rid: str,
    config: CasinoConfig | None = None,
    windows: Windows | None = None,
) -> RoundStory:
    """The story of casino round ``rid`` over ``sources`` (``windows``: a UTH table's green,
    yellow and decision windows in ms, default the round's own, see :mod:`.rounds_uth`)."""
    story = RoundStory(rid)
    r = _collect(sources, rid)
    if not r.table:
        return story
    config = config or load_config()
    chains = check_chains(restrict(sources, r.streams))
    wallet_read = any(loc.envelope.producer == "wallet" for s in sources for loc in s.events)
    payout_read = any(loc.envelope.producer == "payout" for s in sources for loc in s.events)
    _narrate(story, r)
    domain = r.domain()
    seed = next(
        (e.deck_seed_hex for e in domain if isinstance(e, thb.DeckRevealed | uth.DeckRevealed)), ""
    )
    story.results = [chains, _deck(r, seed)]
    if any(isinstance(e, thb.RoundStarted) for e in domain):
        story.results.append(_thb_domain(r, seed, config))
    else:
        checked, used = uth_domain(r.table, seed, config, windows)
        told = [("seat", seat) for seat in joined(r.table)]
        if used is not None:
            given = "as given" if windows else "from the round's record"
            told.append(("windows", f"green {used[0]} ms, yellow {used[1]} ms, decisions "
                         f"{used[2]} ms ({given})"))  # fmt: skip
        story.facts[1:1] = told  # after "started": who sat where, the clock
        story.results += [checked, uth_seats(r.table, rid)]
    story.results.append(_settlement(r))
    story.results.append(_bets(r, wallet_read))
    story.results.append(_payouts(r, wallet_read, payout_read))
    return story


def _narrate(story: RoundStory, r: _Round) -> None:
    for located, m, _ in r.table:
        at = located.envelope.occurred_at.ToDatetime().isoformat(timespec="milliseconds")
        if isinstance(m, cev.CasinoRoundStarted):
            who = f" player {m.player_id}" if m.player_id else ""
            story.say("started", f"{at} {m.game} table {m.table_id} game {m.game_number}"
                      f"{who}, deck commitment {m.deck_commitment}")  # fmt: skip
        elif isinstance(m, cev.CasinoBetPlaced):
            story.say("bet", f"{m.player_id} {m.spot} {money(m.amount_cents)} ({m.bet_id})")
        elif isinstance(m, cev.CasinoDecisionMade):
            timed = " (timed out)" if m.timed_out else ""
            story.say("decision", f"{m.player_id} {m.street}: {m.decision}{timed}")
        elif isinstance(m, cev.CasinoShowdown | cev.CasinoRoundSettled | cev.CasinoRoundVoided):
            topic = {cev.CasinoShowdown: "showdown", cev.CasinoRoundSettled: "settled"}
            story.say(topic.get(type(m), "voided"), _brief(m))
        elif isinstance(m, cev.CasinoDeckRevealed):
            story.say("revealed", f"deck seed {m.deck_seed_hex}")
    for _, p in r.payout:
        if isinstance(p, pce.CasinoWinCredited):
            story.say("credited", f"{p.player_id} {p.bet_kind} {money(p.amount.cents)} "
                      f"by wallet transfer {p.wallet_transfer_id}")  # fmt: skip


def _brief(m: Any) -> str:
    if isinstance(m, cev.CasinoShowdown):
        return f"player {m.player_hand} vs dealer {m.dealer_hand}: {m.winner}"
    parts = [
        f"{p.player_id} {r.spot} {r.outcome} {money(r.returned_cents)}"
        for p in m.players
        for r in p.results
    ]
    head = f"voided ({m.reason})" if isinstance(m, cev.CasinoRoundVoided) else "settled"
    return f"{head}: " + ", ".join(parts)


def _where(r: _Round, cls: type[Any]) -> str:
    found = r.messages(cls)
    return found[0][0].location() if found else (r.table[0][0].location() if r.table else "")


def _deck(r: _Round, seed: str) -> CheckResult:
    result = CheckResult("deck")
    domain = r.domain()
    started = next((e for e in domain if isinstance(e, thb.RoundStarted | uth.RoundOpened)), None)
    if started is None or not seed:
        return result  # a round still in play: the seed is not revealed yet
    result.checked += 1
    where = _where(r, cev.CasinoDeckRevealed)
    verdict = verify_deck(bytes.fromhex(seed), started.deck_commitment)
    if not verdict.ok:
        result.fail(where, verdict.reason)
        return result
    deal = Deal.from_seed(bytes.fromhex(seed))
    for e in domain:
        cards: tuple[int, ...] | None = None
        expected: tuple[int, ...] = ()
        if isinstance(e, thb.HoleCardsDealt):
            cards, expected = e.player_cards, deal.player
        elif isinstance(e, thb.BoardDealt):
            cards = e.cards
            expected = {"flop": deal.flop, "turn": (deal.turn,), "river": (deal.river,)}[e.street]
        elif isinstance(e, uth.CardsDealt):
            cards = e.cards
            expected = {"hole": deal.player, "flop": deal.flop}.get(
                e.street, (deal.turn, deal.river)
            )
        elif isinstance(e, thb.Showdown | uth.Showdown):
            cards, expected = e.dealer_cards, deal.dealer
        if cards is not None and tuple(cards) != tuple(expected):
            result.fail(
                where, f"{type(e).__name__} {list(cards)} is not the deal's {list(expected)}"
            )
    return result


def _thb_domain(r: _Round, seed: str, config: CasinoConfig) -> CheckResult:
    result = CheckResult("domain")
    domain = r.domain()
    if r.problems:
        result.checked += 1
        result.fail(r.problems[0].split(": ", 1)[0], r.problems[0].split(": ", 1)[1])
        return result
    start = domain[0] if domain else None
    if not isinstance(start, thb.RoundStarted) or not seed:
        return result
    result.checked += 1
    where = _where(r, cev.CasinoRoundStarted)
    if start.config_version != config.version:
        result.fail(where, f"config version {start.config_version}, we have {config.version}")
        return result
    recorded = [dataclasses.replace(start, deck_seed_hex=seed), *domain[1:]]
    replayed = ThbRound.start(
        config, round_id=start.round_id, game_number=start.game_number,
        ante_cents=start.ante_cents, deck_seed=bytes.fromhex(seed), at=start.at,
    )  # fmt: skip
    for e in recorded:
        command = _thb_command(e)
        if command is not None:
            try:
                replayed.handle(command)
            except ValueError as exc:
                result.fail(where, f"the domain refuses {type(e).__name__}: {exc}")
                return result
    for k, (mine, theirs) in enumerate(zip(replayed.history, recorded, strict=False)):
        if mine != theirs:
            result.fail(where, f"event {k + 1}: the domain gives {mine}, recorded {theirs}")
            return result
    if len(replayed.history) != len(recorded):
        result.fail(where, f"the domain gives {len(replayed.history)} events, "
                    f"recorded {len(recorded)}")  # fmt: skip
    return result


def _thb_command(e: Any) -> Any:
    if isinstance(e, thb.Folded):
        return thb.Fold(e.at)
    if isinstance(e, thb.FlopCalled):
        return thb.CallFlop(e.at)
    if isinstance(e, thb.StreetChecked):
        return thb.Check(e.at)
    if isinstance(e, thb.StreetBet):
        return thb.Bet(e.at)
    if isinstance(e, thb.RoundVoided):
        return thb.Void(e.reason, e.at)
    return None


def _settlement(r: _Round) -> CheckResult:
    """The published results (payout's input) against the domain's."""
    result = CheckResult("settlement")
    domain_results: dict[tuple[str, str], int] = {}
    started = r.messages(cev.CasinoRoundStarted)
    player = started[0][1].player_id if started else ""
    seats = seat_players(r.table)  # the domain's seats (`seats` checks the projections)
    for e in r.domain():
        if isinstance(e, thb.Settled | thb.RoundVoided):
            for b in e.results:
                domain_results[(player, b.spot)] = b.returned_cents if b.stake_cents else -1
        elif isinstance(e, uth.SeatSettled):
            for b in e.results:
                domain_results[(seats.get(e.seat, str(e.seat)), b.spot)] = b.returned_cents
        elif isinstance(e, uth.RoundVoided):
            for seat, results in e.refunds:
                for b in results:
                    domain_results[(seats.get(seat, str(seat)), b.spot)] = b.returned_cents
    domain_results = {k: v for k, v in domain_results.items() if v >= 0}
    for located, m in r.messages(cev.CasinoRoundSettled) + r.messages(cev.CasinoRoundVoided):
        result.checked += 1
        published = {(p.player_id, b.spot): b.returned_cents for p in m.players for b in p.results}
        published = {k: v for k, v in published.items() if k in domain_results or v}
        wanted = {k: v for k, v in domain_results.items() if k in published or v}
        if published != wanted:
            result.fail(located.location(), f"published {published}, the domain {wanted}")
    return result


def _results(r: _Round) -> dict[tuple[str, str], Any]:
    """(player, spot) → published CasinoBetResult."""
    out: dict[tuple[str, str], Any] = {}
    for _, m in r.messages(cev.CasinoRoundSettled) + r.messages(cev.CasinoRoundVoided):
        for p in m.players:
            for b in p.results:
                out[(p.player_id, b.spot)] = b
    return out


def _bets(r: _Round, wallet_read: bool) -> CheckResult:
    result = CheckResult("bets")
    if not wallet_read:
        return result
    over = bool(r.messages(cev.CasinoRoundSettled) or r.messages(cev.CasinoRoundVoided))
    undone = {b for _, m in r.messages(cev.CasinoBetsUndone) for b in m.bet_ids}
    outcomes = {k: b.outcome for k, b in _results(r).items()}
    for located, bet in r.messages(cev.CasinoBetPlaced):
        result.checked += 1
        history = r.wallet.get(bet.bet_id, [])
        pending = [m for _, m in history if isinstance(m, wev.TransferPending)]
        if len(pending) != 1 or sum(leg.amount for leg in pending[0].legs) != bet.amount_cents:
            result.fail(located.location(), f"bet {bet.bet_id}: {len(pending)} reservations "
                        f"of {money(bet.amount_cents)}, not one")  # fmt: skip
            continue
        legs = pending[0].legs
        if any(
            not leg.debit_account_id.startswith(accounts.player_account(bet.player_id, ""))
            or leg.credit_account_id != accounts.BANKROLL
            for leg in legs
        ):
            result.fail(located.location(), f"bet {bet.bet_id}: reserved between wrong accounts")
            continue
        if not over:
            continue
        posted = [m for _, m in history if isinstance(m, wev.TransferPosted)]
        voided = [m for _, m in history if isinstance(m, wev.TransferVoided)]
        outcome = outcomes.get((bet.player_id, bet.spot))
        want_post = bet.bet_id not in undone and outcome in ("win", "lose")
        if want_post and (len(posted), len(voided)) != (1, 0):
            result.fail(located.location(), f"bet {bet.bet_id} ({outcome}): posted "
                        f"{len(posted)}, voided {len(voided)} times, owed one post")  # fmt: skip
        elif not want_post and (len(posted), len(voided)) != (0, 1):
            result.fail(located.location(), f"bet {bet.bet_id} ({outcome or 'undone'}): posted "
                        f"{len(posted)}, voided {len(voided)} times, owed one void")  # fmt: skip
    return result


def _payouts(r: _Round, wallet_read: bool, payout_read: bool) -> CheckResult:
    result = CheckResult("payouts")
    if not payout_read:
        return result
    owed: dict[tuple[str, str], list[Any]] = defaultdict(list)
    credited: dict[tuple[str, str], list[tuple[Located, Any]]] = defaultdict(list)
    for located, p in r.payout:
        key = (p.player_id, p.bet_kind)
        if isinstance(p, pce.CasinoWinOwed):
            owed[key].append(p)
        else:
            credited[key].append((located, p))
    where = _where(r, cev.CasinoRoundSettled)
    results = _results(r)
    for key, b in results.items():
        if b.outcome != "win":
            if owed.get(key) or credited.get(key):
                result.checked += 1
                result.fail(where, f"{key[0]} {key[1]} ({b.outcome}) was credited")
            continue
        result.checked += 1
        o, c = owed.get(key, []), credited.get(key, [])
        if len(o) != 1 or (o[0].stake.cents, o[0].win.cents) != (b.stake_cents, b.win_cents):
            result.fail(where, f"{key[0]} {key[1]}: {len(o)} CasinoWinOwed of the result, not 1")
        elif len(c) != 1 or c[0][1].amount.cents != b.returned_cents:
            result.fail(where, f"{key[0]} {key[1]}: credited {len(c)} times, not once "
                        f"{money(b.returned_cents)}")  # fmt: skip
        elif wallet_read:
            located, credit = c[0]
            posted = [
                m for _, m in r.wallet.get(credit.wallet_transfer_id, [])
                if isinstance(m, wev.TransferPosted)
            ]  # fmt: skip
            target = accounts.player_account(key[0], "")
            if len(posted) != 1 or sum(leg.amount for leg in posted[0].legs) != b.returned_cents:
                result.fail(located.location(), f"{len(posted)} wallet postings, not 1")
            elif any(
                leg.debit_account_id != accounts.BANKROLL
                or not leg.credit_account_id.startswith(target)
                for leg in posted[0].legs
            ):
                result.fail(located.location(), "win not moved from the bankroll to the player")
    return result

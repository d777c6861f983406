"""``electric-audit tournament ID``: the whole story of one tournament, each step checked.

The tournament's events are picked out of every source (the ``registration-table-<id>``,
``table-<id>`` and ``payout-<id>`` streams, and the wallet's ``wallet-transfer-<id>``
streams of its buy-in, rake, prize-reserve and prize transfers), then:

* ``chains`` — the SHA-256 chain of each of those streams (whole streams);
* ``entries`` — the entries registered and not withdrawn are exactly the seats of
  TournamentStarted and of the table's TableStarted, at the buy-in and rake TableOpened
  published;
* ``buy-ins`` — each entry's wallet work as the lobby's settlement owes it
  (:func:`electric_domain.lobby.buy_in_settlement`): the reserved buy-in posted once from the
  player's account to the escrow, then the rake to ``house:rake`` and the net to
  ``house:prize_reserve``, each posted exactly once for exactly that amount;
* ``multiplier`` — the committed multiplier seed revealed by TableFilled hashes to the
  commitment TableOpened published and re-draws the multiplier (as ``verify``); the prize
  pool is multiplier × buy-in and the published paid places are the pay table's, in
  TableFilled, TournamentStarted and TableStarted alike;
* ``decks`` — every hand's deck commitment and revealed seed against the cards dealt;
* ``hands`` — every hand replayed through our engine from its PHH export (stacks and pots
  as recorded, :func:`electric_audit.hands.replay_hand`), and each hand starts with the
  stacks the previous one ended with;
* ``prizes`` — places and prizes against the pay table (as ``verify``);
* ``payouts`` — every paid place has one PrizeAwarded and one PrizeCredited of its prize,
  and one posted wallet transfer moving it from the prize reserve to the winner.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from electric.payout.v1 import events_pb2 as pev
from electric.registration.v1 import events_pb2 as rev
from electric.table.v1 import events_pb2 as tev
from electric.wallet.v1 import events_pb2 as wev
from electric_clients import accounts
from electric_domain import lobby
from electric_domain.tournament import default_config

from electric_audit.checks import CheckResult, check_chains, check_decks
from electric_audit.checks_money import check_multipliers, check_prize_table
from electric_audit.hands import all_hands, replay_hand
from electric_audit.narrative import Narrative, money
from electric_audit.sources import Located, Source, restrict, unique_events

_HOUSE = {
    lobby.Account.ESCROW: accounts.ESCROW,
    lobby.Account.RAKE: accounts.RAKE,
    lobby.Account.PRIZE_RESERVE: accounts.PRIZE_RESERVE,
}


def _decode(located: Located, cls: type[Any]) -> Any:
    message = cls()
    message.ParseFromString(located.envelope.payload.value)
    return message


@dataclass
class Story(Narrative):
    """What ``tournament ID`` found: the narrative and the checks."""

    tournament_id: str


@dataclass
class _Events:
    """The tournament's events, each once, by type, in source order."""

    by_type: dict[str, list[Located]] = field(default_factory=lambda: defaultdict(list))
    streams: set[str] = field(default_factory=set)

    def of(self, cls: type[Any]) -> list[tuple[Located, Any]]:
        return [(x, _decode(x, cls)) for x in self.by_type.get(cls.DESCRIPTOR.full_name, [])]

    def add(self, located: Located) -> None:
        self.by_type[located.envelope.event_type].append(located)
        self.streams.add(located.envelope.stream_id)


def _collect(sources: Sequence[Source], tid: str) -> tuple[_Events, list[Source]]:
    """The tournament's events and the sources restricted to its (whole) streams."""
    own = {f"registration-table-{tid}", f"table-{tid}", f"payout-{tid}"}
    transfers: set[str] = set()
    seen: set[str] = set()
    found = _Events()
    for located in unique_events(sources, own, seen):
        found.add(located)
    for _, registered in found.of(rev.PlayerRegistered):
        transfers |= {
            registered.wallet_transfer_id,
            f"rake-{registered.entry_id}",
            f"net-{registered.entry_id}",
        }
    for _, credited in found.of(pev.PrizeCredited):
        transfers.add(credited.wallet_transfer_id)
    wallet_streams = {f"wallet-transfer-{t}" for t in transfers if t}
    for located in unique_events(sources, wallet_streams, seen):
        found.add(located)
    return found, restrict(sources, found.streams)


def tournament_story(sources: Sequence[Source], tid: str) -> Story:
    """The story of tournament ``tid`` (its table id) over ``sources``."""
    story = Story(tid)
    found, restricted = _collect(sources, tid)
    if not found.streams:
        return story
    wallet_read = any(loc.envelope.producer == "wallet" for s in sources for loc in s.events)
    story.results.append(_renamed(check_chains(restricted), "chains"))
    story.results.append(_entries(story, found))
    story.results.append(_buy_ins(story, found, wallet_read))
    story.results.append(_multiplier(story, found, restricted))
    story.results.append(check_decks(restricted))
    story.results.append(_hands(story, restricted))
    story.results.append(check_prize_table(restricted))
    story.results.append(_payouts(story, found, wallet_read))
    return story


def _renamed(result: CheckResult, name: str) -> CheckResult:
    result.name = name
    return result


def _entries(story: Story, found: _Events) -> CheckResult:
    result = CheckResult("entries")
    opened = found.of(rev.TableOpened)
    for _, o in opened:
        story.say(
            "opened",
            f"{o.table_name or o.table_id}: buy-in {money(o.buy_in.cents)} "
            f"(rake {money(o.rake.cents)}), {o.seats} seats, pay table {o.paytable_version}, "
            f"multiplier commitment {o.multiplier_seed_commitment}",
        )
    entries: dict[str, tuple[Located, Any]] = {}
    for located, r in found.of(rev.PlayerRegistered):
        entries[r.entry_id] = (located, r)
        story.say(
            "entry",
            f"seat {r.seat} {r.player_id} entry {r.entry_id} buy-in {money(r.buy_in.cents)} "
            f"(wallet transfer {r.wallet_transfer_id})",
        )
    for _, u in found.of(rev.PlayerUnregistered):
        entries.pop(u.entry_id, None)
        story.say("withdrawn", f"seat {u.seat} {u.player_id} entry {u.entry_id}")
    expected = {(r.entry_id, r.player_id, r.seat) for _, r in entries.values()}
    for located, started in found.of(rev.TournamentStarted):
        result.checked += 1
        seats = {(s.entry_id, s.player_id, s.seat) for s in started.seats}
        if seats != expected:
            result.fail(located.location(), f"seats {sorted(seats)} != entries {sorted(expected)}")
        for _, o in opened:
            if (o.buy_in.cents, o.rake.cents) != (started.buy_in.cents, started.rake.cents):
                result.fail(located.location(), "buy-in or rake differs from TableOpened")
    for located, table in found.of(tev.TableStarted):
        result.checked += 1
        seats = {(s.entry_id, s.player_id, s.seat) for s in table.seats}
        if seats != expected:
            result.fail(located.location(), f"table seats {sorted(seats)} != entries")
    for located, _ in entries.values():
        result.checked += 1
        if not found.of(rev.TournamentStarted):
            result.fail(located.location(), "the entry's tournament never started")
            break
    return result


def _posted(found: _Events) -> dict[str, list[tuple[Located, Any]]]:
    posted: dict[str, list[tuple[Located, Any]]] = defaultdict(list)
    for located, p in found.of(wev.TransferPosted):
        posted[p.spec.transfer_id].append((located, p))
    return posted


def _buy_ins(story: Story, found: _Events, wallet_read: bool) -> CheckResult:
    result = CheckResult("buy-ins")
    started = found.of(rev.TournamentStarted)
    if not wallet_read or not started:
        return result
    located_start, start = started[0]
    owners = {s.entry_id: s.player_id for s in start.seats}
    registered = {r.entry_id: r for _, r in found.of(rev.PlayerRegistered)}
    entries = [(s.entry_id, registered[s.entry_id].wallet_transfer_id) for s in start.seats]
    ops = lobby.buy_in_settlement(
        entries, buy_in_cents=start.buy_in.cents, rake_cents=start.rake.cents
    )
    posted = _posted(found)
    total: Counter[str] = Counter()
    for op in ops:
        result.checked += 1
        transfers = posted.get(op.transfer_id, [])
        if len(transfers) != 1:
            result.fail(
                located_start.location(),
                f"{op.code} transfer {op.transfer_id} posted {len(transfers)} times, not once",
            )
            continue
        located, p = transfers[0]
        if op.kind is lobby.OpKind.POST:
            amount, source, target = (
                start.buy_in.cents,
                f"player:{owners[op.entry_id]}:",
                (accounts.ESCROW),
            )
        else:
            amount, source, target = op.amount_cents, _HOUSE[op.source], _HOUSE[op.target]
        legs = list(p.legs)
        moved = sum(leg.amount for leg in legs)
        wrong = [
            leg
            for leg in legs
            if not leg.debit_account_id.startswith(source) or leg.credit_account_id != target
        ]
        if moved != amount or wrong or not legs:
            result.fail(
                located.location(),
                f"{op.code} {op.transfer_id} moved {moved} ({len(wrong)} legs between the wrong "
                f"accounts), owed {amount} from {source}… to {target}",
            )
            continue
        total[op.code] += moved
    story.say(
        "buy-ins",
        f"{len(entries)} × {money(start.buy_in.cents)} posted to the escrow "
        f"({money(total['buy_in'])}); rake {money(total['rake'])}, "
        f"to the prize reserve {money(total['prize_reserve'])}",
    )
    return result


def _multiplier(story: Story, found: _Events, restricted: Sequence[Source]) -> CheckResult:
    result = _renamed(check_multipliers(restricted), "multiplier")
    config = default_config()
    filled = found.of(rev.TableFilled)
    for _, f in filled:
        story.say(
            "filled",
            f"multiplier x{f.multiplier} (seed {f.multiplier_seed} → commitment "
            f"{f.multiplier_seed_commitment}), prize pool {money(f.prize_pool.cents)}",
        )
    multipliers = {f.multiplier for _, f in filled}
    for located, start in found.of(rev.TournamentStarted):
        result.checked += 1
        pool, payouts = _pool(config, start.multiplier, start.buy_in.cents)
        published = [(p.place, p.share_bps) for p in start.payouts]
        if filled and start.multiplier not in multipliers:
            result.fail(located.location(), f"multiplier x{start.multiplier} != TableFilled")
        elif start.prize_pool.cents != pool:
            result.fail(
                located.location(), f"prize pool {start.prize_pool.cents} != multiplier × buy-in"
            )
        elif published != payouts:
            result.fail(located.location(), f"paid places {published} != pay table {payouts}")
        places = ", ".join(f"{p.place}: {p.share_bps / 100:g}%" for p in start.payouts)
        story.say(
            "started",
            f"multiplier x{start.multiplier}, prize pool "
            f"{money(start.prize_pool.cents)}, paid places {places}",
        )
        for t_located, table in found.of(tev.TableStarted):
            result.checked += 1
            if (table.multiplier, table.prize_pool.cents) != (start.multiplier, pool):
                result.fail(t_located.location(), "multiplier or prize pool differs")
    return result


def _pool(config: Any, multiplier: int, buy_in: int) -> tuple[int, list[tuple[int, int]]]:
    lines = lobby.prizes_for(config, multiplier, buy_in)
    return multiplier * buy_in, [(p.place, p.share_bps) for p in lines]


def _hands(story: Story, restricted: Sequence[Source]) -> CheckResult:
    result = CheckResult("hands")
    previous: dict[int, int] | None = None
    for hand in all_hands(restricted):
        if hand.ended is None:
            story.say("hand", f"hand {hand.number}: still in play")
            continue
        result.checked += 1
        verdict = replay_hand(hand)
        if not verdict.ok:
            result.fail(hand.location, verdict.reason)
        start = {s.seat: s.stack for s in hand.started.stacks if s.stack > 0}
        if previous is not None and start != {k: v for k, v in previous.items() if v > 0}:
            result.fail(hand.location, f"starts with {start}, the last hand ended {previous}")
        previous = {s.seat: s.stack for s in hand.ended.stacks}
        pots = [e for e in hand.events if type(e).__name__ == "PotAwarded"]
        names = hand.player_ids()
        won = ", ".join(
            f"{names[w]} {share}"
            for pot in pots
            for w, share in zip(pot.winners, pot.shares, strict=True)
        )
        level = hand.started.level
        story.say(
            "hand",
            f"hand {hand.number} at {hand.started_at.isoformat()}: button seat "
            f"{hand.started.button_seat}, blinds {level.small_blind}/{level.big_blind}"
            f"{f' ante {level.ante}' if level.ante else ''}, pot "
            f"{sum(p.amount for p in pots)} to {won}; deck {hand.started.deck_commitment[:16]}…",
        )
    return result


def _payouts(story: Story, found: _Events, wallet_read: bool) -> CheckResult:
    result = CheckResult("payouts")
    awarded = defaultdict(list)
    for located, a in found.of(pev.PrizeAwarded):
        awarded[(a.player_id, a.place)].append((located, a))
    credited = defaultdict(list)
    for located, c in found.of(pev.PrizeCredited):
        credited[(c.player_id, c.place)].append((located, c))
    posted = _posted(found)
    for located, finished in found.of(tev.TournamentFinished):
        for place in finished.places:
            prize = place.prize.cents if place.HasField("prize") else 0
            story.say(
                "place",
                f"{place.place}: seat {place.seat} {place.player_id} prize {money(prize)}"
                f"{f' (tied with {place.tied_count - 1})' if place.tied_count > 1 else ''}",
            )
            if prize <= 0:
                continue
            result.checked += 1
            key = (place.player_id, place.place)
            awards, credits = awarded.get(key, []), credited.get(key, [])
            if len(awards) != 1 or awards[0][1].amount.cents != prize:
                result.fail(located.location(), f"place {place.place}: {len(awards)} awards")
                continue
            if len(credits) != 1 or credits[0][1].amount.cents != prize:
                result.fail(awards[0][0].location(), f"credited {len(credits)} times, not once")
                continue
            credit_at, credit = credits[0]
            story.say(
                "credited",
                f"{place.player_id} {money(prize)} by wallet transfer {credit.wallet_transfer_id}",
            )
            if not wallet_read:
                continue
            transfers = posted.get(credit.wallet_transfer_id, [])
            target = accounts.player_account(place.player_id, "")
            if len(transfers) != 1:
                result.fail(credit_at.location(), f"{len(transfers)} wallet postings, not 1")
                continue
            legs = list(transfers[0][1].legs)
            if sum(leg.amount for leg in legs) != prize or any(
                not leg.credit_account_id.startswith(target)
                or leg.debit_account_id != accounts.PRIZE_RESERVE
                for leg in legs
            ):
                result.fail(
                    transfers[0][0].location(),
                    f"does not move {prize} from {accounts.PRIZE_RESERVE} to {target}…",
                )
    return result

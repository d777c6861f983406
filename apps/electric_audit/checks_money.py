"""``electric-audit verify``: the fairness and money checks across services.

* ``multipliers`` — each TableFilled's revealed multiplier seed hashes to the commitment
  TableOpened published for that table, and re-draws the announced multiplier from the pay
  table (:func:`electric_domain.tournament.fairness.verify_multiplier`). Needs the
  registration store or topic.
* ``prizes`` — each TournamentFinished's places and prizes against the pay table, ties and
  the prize pool (:func:`electric_domain.payout.audit.check_prizes`, the same arithmetic
  payout re-checks before paying). Needs the table and registration sources.
* ``credited-once`` — every PrizeAwarded has exactly one PrizeCredited of the same amount
  and, when the wallet is read, exactly one TransferPosted with that transfer id and amount.
* ``ledger`` — every posted wallet transfer is double-entry (each leg moves a positive amount
  between two different accounts), so the ledger over all accounts sums to zero.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TypeVar

from electric.payout.v1 import events_pb2 as pev
from electric.registration.v1 import events_pb2 as rev
from electric.table.v1 import events_pb2 as tev
from electric.wallet.v1 import events_pb2 as wev
from electric_domain.payout.audit import Terms, check_prizes
from electric_domain.payout.awards import PlaceResult
from electric_domain.tournament import default_config
from electric_domain.tournament.fairness import verify_multiplier
from google.protobuf.message import Message

from electric_audit.checks import CheckResult
from electric_audit.sources import Located, Source

M = TypeVar("M", bound=Message)


def _of_type(sources: Sequence[Source], cls: type[M]) -> list[tuple[Located, M]]:
    """Decoded events of one type, each event once (first source wins)."""
    name = cls.DESCRIPTOR.full_name
    seen: set[str] = set()
    found: list[tuple[Located, M]] = []
    for source in sources:
        for located in source.events:
            e = located.envelope
            if e.event_type != name or e.event_id in seen:
                continue
            seen.add(e.event_id)
            message = cls()
            message.ParseFromString(e.payload.value)
            found.append((located, message))
    return found


def check_multipliers(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("multipliers")
    config = default_config()
    opened = {m.table_id: m for _, m in _of_type(sources, rev.TableOpened)}
    for located, filled in _of_type(sources, rev.TableFilled):
        result.checked += 1
        published = opened.get(filled.table_id)
        if published is not None and (
            published.multiplier_seed_commitment != filled.multiplier_seed_commitment
        ):
            result.fail(located.location(), "commitment differs from the one TableOpened published")
            continue
        if filled.paytable_version and filled.paytable_version != config.version:
            result.fail(located.location(), f"unknown pay table {filled.paytable_version!r}")
            continue
        if not verify_multiplier(
            filled.multiplier_seed_commitment,
            filled.multiplier_seed,
            filled.multiplier,
            config.pay_table,
        ):
            result.fail(
                located.location(),
                f"seed does not match the commitment or does not draw x{filled.multiplier}",
            )
    return result


def check_prize_table(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("prizes")
    config = default_config()
    started = {m.tournament_id: m for _, m in _of_type(sources, rev.TournamentStarted)}
    buttons: dict[str, dict[int, int]] = defaultdict(dict)
    for _, hand in _of_type(sources, tev.HandStarted):
        buttons[hand.table_id][hand.hand_number] = hand.button_seat
    for located, finished in _of_type(sources, tev.TournamentFinished):
        start = started.get(finished.tournament_id)
        if start is None:
            continue  # the registration source was not given: nothing to compare with
        result.checked += 1
        places = [
            PlaceResult(
                place=p.place,
                seat=p.seat,
                player_id=p.player_id,
                entry_id=p.entry_id,
                tied_count=p.tied_count,
                eliminated_in_hand=p.eliminated_in_hand,
                prize_cents=p.prize.cents if p.HasField("prize") else None,
            )
            for p in finished.places
        ]
        size = start.table_size or max([len(start.seats), *(p.seat for p in places)], default=0)
        terms = Terms(
            pool_cents=start.prize_pool.cents,
            multiplier=start.multiplier,
            paytable_version=start.paytable_version,
            table_size=size,
            published_shares=tuple(
                p.share_bps for p in sorted(start.payouts, key=lambda p: p.place)
            ),
        )
        found = check_prizes(
            config,
            terms,
            places,
            buttons[finished.table_id],
            result_pool_cents=finished.prize_pool.cents,
            result_multiplier=finished.multiplier,
        )
        if found:
            first = found[0]
            result.fail(
                located.location(),
                f"{first.check.value}: seat {first.seat} {first.player_id} published "
                f"{first.published_cents}, expected {first.expected_cents} ({first.detail})",
            )
    return result


def check_credited_once(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("credited-once")
    credited: dict[tuple[str, str, int], list[tuple[Located, pev.PrizeCredited]]]
    credited = defaultdict(list)
    for located, credit in _of_type(sources, pev.PrizeCredited):
        credited[(credit.tournament_id, credit.player_id, credit.place)].append((located, credit))
    wallet_read = any(
        loc.envelope.producer == "wallet" for source in sources for loc in source.events
    )
    transfers: Counter[str] = Counter()
    amounts: dict[str, int] = {}
    for _, posted in _of_type(sources, wev.TransferPosted):
        transfers[posted.spec.transfer_id] += 1
        amounts[posted.spec.transfer_id] = sum(leg.amount for leg in posted.legs)
    for located, awarded in _of_type(sources, pev.PrizeAwarded):
        if awarded.amount.cents <= 0:
            continue
        result.checked += 1
        credits = credited.get((awarded.tournament_id, awarded.player_id, awarded.place), [])
        if len(credits) != 1:
            result.fail(located.location(), f"prize credited {len(credits)} times, not once")
            continue
        credit_at, credit = credits[0]
        if credit.amount.cents != awarded.amount.cents:
            result.fail(
                credit_at.location(),
                f"credited {credit.amount.cents}, awarded {awarded.amount.cents}",
            )
        elif wallet_read and transfers[credit.wallet_transfer_id] != 1:
            result.fail(
                credit_at.location(),
                f"wallet transfer {credit.wallet_transfer_id!r} posted "
                f"{transfers[credit.wallet_transfer_id]} times, not once",
            )
        elif wallet_read and amounts[credit.wallet_transfer_id] != credit.amount.cents:
            result.fail(
                credit_at.location(),
                f"wallet transfer {credit.wallet_transfer_id!r} moved "
                f"{amounts[credit.wallet_transfer_id]}, credited {credit.amount.cents}",
            )
    return result


def check_ledger(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("ledger")
    balance: Counter[str] = Counter()
    for located, posted in _of_type(sources, wev.TransferPosted):
        result.checked += 1
        for leg in posted.legs:
            if leg.amount <= 0 or leg.debit_account_id == leg.credit_account_id:
                result.fail(
                    located.location(),
                    f"leg {leg.debit_account_id} -> {leg.credit_account_id} of {leg.amount} "
                    "is not a double entry",
                )
                break
            balance[leg.debit_account_id] -= leg.amount
            balance[leg.credit_account_id] += leg.amount
    total = sum(balance.values())
    if total != 0:  # pragma: no cover - impossible once every leg is a double entry
        result.fail("wallet ledger", f"balances sum to {total}, not 0")
    return result


def run_money_checks(sources: Sequence[Source]) -> list[CheckResult]:
    return [
        check_multipliers(sources),
        check_prize_table(sources),
        check_credited_once(sources),
        check_ledger(sources),
    ]

"""The cross-service checks of electric-audit verify on hand-built sources: a store and its
topic (same events / one differs / one missing), multiplier draws, prizes credited once and
the wallet ledger. Each failure names its source, stream, version and position/offset."""

from __future__ import annotations

from electric.common.v1.money_pb2 import Money
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as pev
from electric.registration.v1 import events_pb2 as rev
from electric.wallet.v1 import events_pb2 as wev
from electric.wallet.v1 import ledger_pb2
from electric_audit.checks import check_store_topic
from electric_audit.checks_money import check_credited_once, check_ledger, check_multipliers
from electric_audit.sources import Located, Source, located_from_messages
from electric_domain.tournament import default_config, draw_multiplier
from electric_eventlog import envelope_message, pack
from electric_eventlog.bus import ReceivedMessage
from google.protobuf.message import Message


def envelope(stream: str, version: int, position: int, payload: Message, producer: str) -> Envelope:
    e = Envelope(
        event_id=f"{stream}-{version}",
        stream_id=stream,
        stream_version=version,
        global_position=position,
        event_type=payload.DESCRIPTOR.full_name,
        producer=producer,
    )
    e.payload.CopyFrom(pack(payload))
    return e


def store(name: str, envelopes: list[Envelope]) -> Source:
    source = Source(name, "store")
    for e in envelopes:
        label = f"store:{name}"
        source.events.append(Located(e, label, f"position {e.global_position}", e.global_position))
    return source


def topic(name: str, envelopes: list[Envelope]) -> Source:
    messages = []
    for offset, e in enumerate(envelopes):
        out = envelope_message(name, e)
        messages.append(ReceivedMessage(name, 0, offset, out.key, out.value, out.headers))
    return located_from_messages(name, messages)


def money(cents: int) -> Money:
    return Money(cents=cents, currency="USD")


def test_store_and_topic_agree_differ_or_miss() -> None:
    events = [
        envelope("wallet-a", v, v, wev.TransferVoided(transfer_id=f"t{v}"), "wallet")
        for v in (1, 2, 3)
    ]
    topic_name = "electric.wallet.events"
    ok = check_store_topic([store("wallet.db", events), topic(topic_name, events)])
    assert ok.ok and ok.checked == 3
    changed = [events[0], envelope("wallet-a", 2, 2, wev.TransferVoided(transfer_id="x"), "wallet")]
    bad = check_store_topic([store("wallet.db", events), topic(topic_name, changed)])
    assert bad.failed == 2
    assert bad.first_failure == (
        "store:wallet.db stream wallet-a version 2 position 2: differs from the same event on "
        "topic:electric.wallet.events stream wallet-a version 2 partition 0 offset 1"
    )
    missing = check_store_topic([store("wallet.db", events[:2]), topic(topic_name, events)])
    assert missing.first_failure == (
        "topic:electric.wallet.events stream wallet-a version 3 partition 0 offset 2: "
        "on the topic but in no store given"
    )


def _filled(seed: bytes, multiplier: int) -> rev.TableFilled:
    draw = draw_multiplier(seed, default_config().pay_table)
    return rev.TableFilled(
        table_id="tb",
        multiplier=multiplier,
        multiplier_seed=draw.seed_hex,
        multiplier_seed_commitment=draw.commitment,
        paytable_version=default_config().version,
    )


def test_multiplier_draws() -> None:
    seed = bytes(range(32))
    right = draw_multiplier(seed, default_config().pay_table).multiplier
    opened = rev.TableOpened(
        table_id="tb",
        multiplier_seed_commitment=draw_multiplier(seed, default_config().pay_table).commitment,
    )
    good = [
        envelope("reg-tb", 1, 1, opened, "registration"),
        envelope("reg-tb", 2, 2, _filled(seed, right), "registration"),
    ]
    assert check_multipliers([store("registration.db", good)]).ok
    wrong = [good[0], envelope("reg-tb", 2, 2, _filled(seed, right + 1), "registration")]
    result = check_multipliers([store("registration.db", wrong)])
    assert result.failed == 1
    assert str(result.first_failure).startswith(
        "store:registration.db stream reg-tb version 2 position 2: seed does not match"
    )


def _posted(
    transfer_id: str, amount: int, debit: str = "house:prize_reserve"
) -> wev.TransferPosted:
    leg = ledger_pb2.Leg(debit_account_id=debit, credit_account_id="player:p:cash", amount=amount)
    return wev.TransferPosted(spec=ledger_pb2.TransferSpec(transfer_id=transfer_id), legs=[leg])


def test_each_prize_is_credited_once_and_the_ledger_balances() -> None:
    awarded = pev.PrizeAwarded(tournament_id="T", place=1, player_id="p", amount=money(300))
    credited = pev.PrizeCredited(
        tournament_id="T", place=1, player_id="p", amount=money(300), wallet_transfer_id="w1"
    )
    payout = store(
        "payout.db",
        [
            envelope("payout-T", 1, 1, awarded, "payout"),
            envelope("payout-T", 2, 2, credited, "payout"),
        ],
    )
    wallet = store("wallet.db", [envelope("wallet-w1", 1, 1, _posted("w1", 300), "wallet")])
    assert check_credited_once([payout, wallet]).ok and check_ledger([wallet]).ok
    twice = store(
        "wallet.db",
        [
            envelope("wallet-w1", 1, 1, _posted("w1", 300), "wallet"),
            envelope("wallet-w2", 1, 2, _posted("w1", 300), "wallet"),
        ],
    )
    result = check_credited_once([payout, twice])
    assert result.first_failure == (
        "store:payout.db stream payout-T version 2 position 2: "
        "wallet transfer 'w1' posted 2 times, not once"
    )
    self_leg = store(
        "wallet.db", [envelope("wallet-w3", 1, 7, _posted("w3", 5, "player:p:cash"), "wallet")]
    )
    ledger = check_ledger([self_leg])
    assert str(ledger.first_failure).startswith(
        "store:wallet.db stream wallet-w3 version 1 position 7"
    )

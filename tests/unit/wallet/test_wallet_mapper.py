"""The wallet's one mapper (``codec.py``, issue 25 item 2): one encoding of each event for
the store, the hash chain and the Kafka record, and every stored record read back through
``codec.decode`` — which skips other producers' records and upgrades the older form of a
spec stored without a ``code``."""

from __future__ import annotations

from pathlib import Path

from electric.wallet.v1 import events_pb2, ledger_pb2
from electric_eventlog import InProcessBus, OutboxRelay, decode_envelope, verify
from electric_wallet import codec
from electric_wallet import domain as d
from google.protobuf import wrappers_pb2

from tests.support.wallet_kit import open_wallet


async def test_one_encoding_for_store_chain_and_kafka(tmp_path: Path) -> None:
    wallet = open_wallet(f"sqlite:///{tmp_path}/w.db")
    try:
        wallet.deposit("dep-1", "al", 1_000)
        escrow = d.AccountSide("house:tournament_escrow")
        al = d.PlayerFunds("al")
        wallet.create_transfer(d.TransferRequest("buy-1", al, escrow, 300, pending=True))
        wallet.post_transfer("buy-1", 200)
        wallet.create_transfer(d.TransferRequest("buy-2", al, escrow, 100, pending=True))
        wallet.void_transfer("buy-2", "unregistered")
        bus = InProcessBus()
        assert await OutboxRelay(wallet.engine, bus, topic="electric.wallet.events").drain() > 0
        published = {}
        async for message in bus.read_topic("electric.wallet.events"):
            envelope = decode_envelope(message)
            published[envelope.global_position] = envelope
        with wallet.engine.connect() as conn:
            stored = list(wallet.events.iter_all(conn))
            assert verify(conn).ok  # the chain is computed over the stored payload bytes
            decoded = list(codec.read_all(wallet.events, conn))
    finally:
        wallet.engine.dispose()
    assert len(decoded) == len(stored) == len(published)
    kinds = {type(event).__name__ for event in decoded}
    assert kinds == {"AccountOpened", "TransferPending", "TransferPosted", "TransferVoided"}
    for envelope, event in zip(stored, decoded, strict=True):
        # Kafka carries the very bytes the store holds, and they are the mapper's encoding.
        assert published[envelope.global_position].payload.value == envelope.payload.value
        again = codec.event_to_pb(event).SerializeToString(deterministic=True)
        assert again == envelope.payload.value
        assert envelope.stream_id == codec.stream_of(event)


def test_decode_skips_other_records_and_upgrades_a_spec_without_code(tmp_path: Path) -> None:
    wallet = open_wallet(f"sqlite:///{tmp_path}/w.db")
    try:
        legs = [ledger_pb2.Leg(debit_account_id="operator:cash_in", credit_account_id="x")]
        old = events_pb2.TransferPosted(
            spec=ledger_pb2.TransferSpec(
                transfer_id="old-1", debit_account_id="operator:cash_in", credit_account_id="x"
            ),
            legs=legs,
        )
        with wallet.engine.begin() as conn:
            wallet.events.append(conn, "wallet-transfer-old-1", 0, [old])
            wallet.events.append(conn, "not-the-wallet", 0, [wrappers_pb2.StringValue(value="x")])
        with wallet.engine.connect() as conn:
            stored = list(wallet.events.iter_all(conn))
            events = list(codec.read_all(wallet.events, conn))
    finally:
        wallet.engine.dispose()
    assert len(events) == len(stored) - 1  # the StringValue is not a wallet event
    posted = events[-1]
    assert isinstance(posted, d.TransferPosted)
    assert posted.request.transfer_id == "old-1"
    assert posted.request.code == "transfer"

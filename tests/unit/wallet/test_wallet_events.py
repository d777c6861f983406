"""The wallet's events reach the `electric.wallet.events` topic through the outbox relay,
as enveloped, hash-chained AccountOpened / TransferPending / TransferPosted / TransferVoided."""

from __future__ import annotations

from typing import Any

from electric.wallet.v1 import events_pb2
from electric_eventlog import InProcessBus, OutboxRelay, decode_envelope, verify_envelopes
from electric_wallet import domain as d

from tests.support.wallet_kit import open_wallet


async def test_events_on_the_wallet_topic(tmp_path: Any) -> None:
    wallet = open_wallet(f"sqlite:///{tmp_path}/w.db")
    try:
        wallet.deposit("dep-1", "al", 1_000)
        buy = d.TransferRequest(
            "buy-1",
            d.PlayerFunds("al"),
            d.AccountSide("house:tournament_escrow"),
            300,
            pending=True,
            code="buy_in",
        )
        wallet.create_transfer(buy)
        wallet.create_transfer(buy)  # a retry adds no event
        wallet.post_transfer("buy-1", 200)
        wallet.create_transfer(
            d.TransferRequest(
                "buy-2",
                d.PlayerFunds("al"),
                d.AccountSide("house:tournament_escrow"),
                100,
                pending=True,
            )
        )
        wallet.void_transfer("buy-2", "unregistered")
        bus = InProcessBus()
        relay = OutboxRelay(wallet.engine, bus, topic="electric.wallet.events")
        assert await relay.drain() > 0
        envelopes = [decode_envelope(m) async for m in bus.read_topic("electric.wallet.events")]
    finally:
        wallet.engine.dispose()
    assert verify_envelopes(envelopes).ok
    assert all(e.producer == "wallet" for e in envelopes)
    types = [e.event_type.rsplit(".", 1)[1] for e in envelopes]
    assert types.count("AccountOpened") == len(d.SYSTEM_ACCOUNTS) + 3
    tail = [
        (e.stream_id, e.stream_version, t)
        for e, t in zip(envelopes, types, strict=True)
        if t != "AccountOpened"
    ]
    assert tail == [
        ("wallet-transfer-dep-1", 1, "TransferPosted"),
        ("wallet-transfer-buy-1", 1, "TransferPending"),
        ("wallet-transfer-buy-1", 2, "TransferPosted"),
        ("wallet-transfer-buy-2", 1, "TransferPending"),
        ("wallet-transfer-buy-2", 2, "TransferVoided"),
    ]
    posted = events_pb2.TransferPosted()
    envelopes[-3].payload.Unpack(posted)
    assert posted.was_pending and sum(leg.amount for leg in posted.legs) == 200
    assert [leg.amount for leg in posted.released_legs] == [100]
    opened = events_pb2.AccountOpened()
    assert any(e.payload.Unpack(opened) and opened.player_id == "al" for e in envelopes)

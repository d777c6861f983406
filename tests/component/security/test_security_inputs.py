"""The probe's findings against the real services: a crafted page token on ListWinnings and
ListTransactions is INVALID_ARGUMENT without internals (it was UNKNOWN with SQLite's
OverflowError), a token from another list is refused, and a 1 MB input comes back as a small
error (it came back as about 2 MB)."""

from __future__ import annotations

import base64
from pathlib import Path

import grpc
import pytest
from electric.common.v1 import pagination_pb2
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc

from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(120)

#: The probe's crafted token: the old format ("o<offset>") with an offset beyond int64.
CRAFTED = base64.urlsafe_b64encode(b"o" + b"9" * 40).decode()
BOUND = 2_000  # bytes of details + trailers an error may take, whatever the input


async def _refusal(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call  # type: ignore[misc]
    return info.value


def _size(err: grpc.aio.AioRpcError) -> int:
    trailers = sum(len(k) + len(v) for k, v in (err.trailing_metadata() or ()))
    return len(err.details() or "") + trailers


async def test_crafted_and_foreign_page_tokens_are_invalid_argument(tmp_path: Path) -> None:
    async with embedded_platform(tmp_path) as platform:
        wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))
        payout = payout_pb2_grpc.PayoutServiceStub(platform.channel("payout"))
        reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
        ops = platform.md("ops", "operator")
        for n in range(3):
            await wallet.Deposit(
                wallet_pb2.DepositRequest(transfer_id=f"d{n}", player_id="alice", amount=10),
                metadata=ops,
            )
        first = await wallet.ListTransactions(
            wallet_pb2.ListTransactionsRequest(
                player_id="alice", page=pagination_pb2.PageRequest(page_size=1)
            ),
            metadata=platform.md("alice"),
        )
        real = first.page.next_page_token
        assert real
        page = pagination_pb2.PageRequest(page_size=1, page_token=real)
        second = await wallet.ListTransactions(
            wallet_pb2.ListTransactionsRequest(player_id="alice", page=page),
            metadata=platform.md("alice"),
        )
        assert [e.entry_id for e in second.entries] != [e.entry_id for e in first.entries]
        calls = {
            "ListTransactions": lambda token: wallet.ListTransactions(
                wallet_pb2.ListTransactionsRequest(
                    player_id="alice", page=pagination_pb2.PageRequest(page_token=token)
                ),
                metadata=platform.md("alice"),
            ),
            "ListWinnings": lambda token: payout.ListWinnings(
                payout_pb2.ListWinningsRequest(page=pagination_pb2.PageRequest(page_token=token)),
                metadata=platform.md("alice"),
            ),
            "ListMyTables": lambda token: reg.ListMyTables(
                registration_pb2.ListMyTablesRequest(
                    page=pagination_pb2.PageRequest(page_token=token)
                ),
                metadata=platform.md("alice"),
            ),
        }
        for name, call in calls.items():
            # The crafted token, garbage, a huge token, and a real token of another list
            # (alice's statement token is not valid for her winnings or her tables).
            for token in (
                CRAFTED,
                "garbage!",
                "A" * 1_000_000,
                real if name != "ListTransactions" else real[:-1],
            ):
                err = await _refusal(call(token))
                assert err.code() is grpc.StatusCode.INVALID_ARGUMENT, (name, token[:20])
                text = err.details() or ""
                assert "Overflow" not in text and "SQLite" not in text and "Traceback" not in text
                assert _size(err) < BOUND
        # Bob cannot page through alice's statement with her token either.
        err = await _refusal(
            wallet.ListTransactions(
                wallet_pb2.ListTransactionsRequest(player_id="bob", page=page), metadata=ops
            )
        )
        assert err.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_a_megabyte_of_input_gives_a_small_error(tmp_path: Path) -> None:
    huge = "x" * 1_000_000
    async with embedded_platform(tmp_path) as platform:
        wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))
        reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
        ops = platform.md("ops", "operator")
        refusals = [
            await _refusal(
                wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=huge), metadata=ops)
            ),
            await _refusal(
                wallet.Deposit(
                    wallet_pb2.DepositRequest(transfer_id=huge, player_id=huge, amount=1),
                    metadata=ops,
                )
            ),
            await _refusal(
                reg.Register(
                    registration_pb2.RegisterRequest(
                        request_id="r", player_id="alice", tier_id=huge, entries=1
                    ),
                    metadata=ops,
                )
            ),
            await _refusal(
                reg.CancelTable(registration_pb2.CancelTableRequest(table_id=huge), metadata=ops)
            ),
        ]
        for err in refusals:
            assert err.code() not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
            assert _size(err) < BOUND, (err.code(), _size(err))

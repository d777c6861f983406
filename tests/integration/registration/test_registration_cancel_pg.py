"""Issue 11 on real PostgreSQL: the stuck-table cancel (an operator voids a pending buy-in,
the table fills, registration cancels it once and every balance is restored), player
settings with their event, and the My Tables filter (row locks, migration 0003)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from electric.registration.v1 import events_pb2, registration_pb2
from electric.wallet.v1 import wallet_pb2

from tests.support.reg_harness import OPS, Stack, eventually, fresh_databases, md, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def pg_urls(postgres_url: str) -> Iterator[dict[str, str]]:
    with fresh_databases(postgres_url, "regc_", ("wallet", "registration", "payout")) as urls:
        yield urls


@pytest.fixture
async def stack(tmp_path: Path, pg_urls: dict[str, str]) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, pg_urls, payout=False) as s:
        yield s


async def test_stuck_table_is_cancelled_once_and_balances_restored_pg(stack: Stack) -> None:
    players = ("q1", "q2", "q3")
    for p in players:
        await stack.deposit(p, 500)
    before = {p: (await stack.balance(p)).balance for p in players}
    entries = [(await stack.register(p)).entries[0] for p in players[:2]]
    await stack.wallet.VoidTransfer(
        wallet_pb2.VoidTransferRequest(transfer_id=entries[1].wallet_transfer_id), metadata=OPS
    )
    table_id = (await stack.register("q3")).entries[0].table_id
    assert table_id == entries[0].table_id

    async def settled() -> bool:
        now = {p: await stack.balance(p) for p in players}
        tables = await stack.my_tables("q1", include_finished=True)
        return (
            all(now[p].balance == before[p] and now[p].reserved == 0 for p in players)
            and tables[0].status == registration_pb2.TABLE_STATUS_CANCELLED
        )

    await eventually(settled, timeout=20)
    cancelled = [
        e for e in stack.registration_events(table_id) if isinstance(e, events_pb2.TableCancelled)
    ]
    assert len(cancelled) == 1
    assert cancelled[0].reason == events_pb2.TABLE_CANCEL_REASON_BUY_IN_FAILED
    escrow = await stack.account("house:tournament_escrow")
    assert (escrow.posted, escrow.reserved) == (0, 0)


async def test_player_settings_on_postgres(stack: Stack) -> None:
    up = await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(display_name="PG Player", sound_fx=False),
        metadata=md("pgp"),
    )
    assert up.changed and up.settings.version == 1
    up2 = await stack.reg.UpdatePlayerSettings(
        registration_pb2.UpdatePlayerSettingsRequest(muck_winning_hands=True, expected_version=1),
        metadata=md("pgp"),
    )
    assert up2.settings.version == 2 and up2.settings.display_name == "PG Player"
    got = await stack.reg.GetPlayerSettings(
        registration_pb2.GetPlayerSettingsRequest(player_id="pgp"), metadata=OPS
    )
    assert got.settings == up2.settings

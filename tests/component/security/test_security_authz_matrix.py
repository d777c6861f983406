"""The authorisation matrix of docs/security.md, cell by cell, against the real services.

The table in ``docs/security.md`` (between the ``authz-matrix`` markers) is the source: this
test parses it, checks that it lists every RPC of every service (from the descriptors) and
nothing else, then makes each cell's call on the four services running in this event loop
(``tests.support.platform_kit``: real gRPC servers, auth, SQLite, in-process bus) and
compares the status. A mismatch prints the observed row in the table's own format, so a
reviewed change of behaviour is a copy into the doc.

Each cell gets its own state: the player it is about ("owner") is fresh per cell, with a
wallet, an entry or a pending transfer as the RPC needs; table commands address a running
table where the owner (``alice``) is seated. Columns:

- ``own``: the owner's player token; ``other``: another player's token (``bob``, not seated);
- ``service``: the registration service's token (its own key); ``operator``, ``auditor``;
- ``none``: no token; ``expired``: the owner's token, expired; ``forged``: an operator token
  signed by a stranger's key under the issuer's kid; ``svc-minted``: a player token for the
  owner signed with a service's key (a service cannot mint player tokens).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric.wallet.v1 import ledger_pb2, wallet_pb2, wallet_pb2_grpc
from electric_platform import SigningKey, issue_token
from google.protobuf.message import Message

from tests.support import auth
from tests.support.platform_kit import Platform, embedded_platform

pytestmark = pytest.mark.timeout(300)

DOC = Path(__file__).resolve().parents[3] / "docs" / "security.md"
BEGIN, END = "<!-- authz-matrix:begin -->", "<!-- authz-matrix:end -->"
COLUMNS = (
    "own",
    "other",
    "service",
    "operator",
    "auditor",
    "none",
    "expired",
    "forged",
    "svc-minted",
)
SERVICES = {
    "RegistrationService": registration_pb2.DESCRIPTOR.services_by_name["RegistrationService"],
    "TableService": table_pb2.DESCRIPTOR.services_by_name["TableService"],
    "WalletService": wallet_pb2.DESCRIPTOR.services_by_name["WalletService"],
    "PayoutService": payout_pb2.DESCRIPTOR.services_by_name["PayoutService"],
}
ESCROW = "house:tournament_escrow"
SEATED = ("alice", "carol", "dave")
STREAM_FIRST_MESSAGE_SECONDS = 10.0


@dataclass(frozen=True)
class Row:
    service: str
    rpc: str
    cells: dict[str, str]


def read_matrix(text: str) -> list[Row]:
    """The rows of the matrix table in ``text``."""
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    lines = [ln.strip() for ln in body.splitlines() if ln.strip().startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "RPC" and tuple(header[2:]) == COLUMNS, header
    rows = []
    for line in lines[2:]:
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        service, _, rpc = cells[0].partition(".")
        rows.append(Row(service, rpc, dict(zip(COLUMNS, cells[2:], strict=True))))
    return rows


def test_the_matrix_lists_every_rpc_of_every_service() -> None:
    rows = read_matrix(DOC.read_text(encoding="utf-8"))
    listed = [(r.service, r.rpc) for r in rows]
    assert len(listed) == len(set(listed)), "an RPC is listed twice"
    every = [(s, m.name) for s, d in SERVICES.items() for m in d.methods]
    assert sorted(listed) == sorted(every)
    known = {c.name for c in grpc.StatusCode} | {"—"}
    for row in rows:
        assert set(row.cells.values()) <= known, row
        for column in ("none", "expired", "forged", "svc-minted"):
            assert row.cells[column] == "UNAUTHENTICATED", (row.rpc, column)


# --------------------------------------------------------------------------- the calls

_ids = itertools.count(1)


def fresh(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


class World:
    """The platform plus what the cells need: stubs, a running table, helpers."""

    def __init__(self, platform: Platform) -> None:
        self.p = platform
        self.reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
        self.table = table_pb2_grpc.TableServiceStub(platform.channel("table"))
        self.wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))
        self.payout = payout_pb2_grpc.PayoutServiceStub(platform.channel("payout"))
        self.ops = auth.bearer("matrix-ops", "operator")
        self.tiers: list[str] = []
        self.table_id = ""

    async def deposit(self, player: str, cents: int = 50_000) -> str:
        transfer_id = fresh(f"dep-{player}")
        await self.wallet.Deposit(
            wallet_pb2.DepositRequest(transfer_id=transfer_id, player_id=player, amount=cents),
            metadata=self.ops,
        )
        return transfer_id

    async def register(self, player: str, tier: str) -> registration_pb2.Entry:
        r = await self.reg.Register(
            registration_pb2.RegisterRequest(
                request_id=fresh("reg"), player_id=player, tier_id=tier, entries=1
            ),
            metadata=self.ops,
        )
        return r.entries[0]

    async def withdraw_entries(self, player: str) -> None:
        """Clean-up: withdraw the player's waiting entries (so no table fills by accident)."""
        mine = await self.reg.ListMyTables(
            registration_pb2.ListMyTablesRequest(player_id=player), metadata=self.ops
        )
        for table in mine.tables:
            try:
                await self.reg.Unregister(
                    registration_pb2.UnregisterRequest(
                        player_id=player, table_id=table.table_id, request_id=fresh("unreg")
                    ),
                    metadata=self.ops,
                )
            except grpc.aio.AioRpcError as err:
                if err.code() is not grpc.StatusCode.FAILED_PRECONDITION:
                    raise

    async def start_table(self) -> None:
        lobby = await self.reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=self.ops)
        self.tiers = [t.tier_id for t in lobby.tiers]
        for player in SEATED:
            await self.deposit(player)
            entry = await self.register(player, self.tiers[0])
        self.table_id = entry.table_id
        deadline = time.monotonic() + 30
        while True:
            try:
                await self.table.GetTable(
                    table_pb2.GetTableRequest(table_id=self.table_id), metadata=self.ops
                )
                return
            except grpc.aio.AioRpcError as err:
                if err.code() is not grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)


def credentials(column: str, owner: str) -> tuple[tuple[str, str], ...]:
    """The metadata a column calls with, for a cell about ``owner``."""

    def signed(claims: dict[str, Any], key: SigningKey) -> tuple[tuple[str, str], ...]:
        token = jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})
        return (("authorization", f"Bearer {token}"),)

    now = int(time.time())
    claims = {"iat": now, "exp": now + 300, "iss": "electric", "aud": "electric"}
    match column:
        case "own":
            return auth.bearer(owner, "player")
        case "other":
            return auth.bearer("bob", "player")
        case "service":
            return auth.bearer("registration", "service")
        case "operator":
            return auth.bearer("matrix-op", "operator")
        case "auditor":
            return auth.bearer("matrix-aud", "auditor")
        case "none":
            return ()
        case "expired":
            old = issue_token(owner, "player", auth.ISSUER_KEY, 60, now=time.time() - 600)
            return (("authorization", f"Bearer {old}"),)
        case "forged":
            stranger = SigningKey.generate(auth.ISSUER_KEY.kid)
            return signed({**claims, "sub": "mallory", "role": "operator"}, stranger)
        case "svc-minted":
            key = auth.KEYS.services["registration"]
            return signed({**claims, "sub": owner, "role": "player"}, key)
    raise AssertionError(column)


Prepare = Callable[[World, str], Awaitable[tuple[Message, str]]]


def _stale_table_request(kind: type[Message]) -> Prepare:
    async def prepare(w: World, column: str) -> tuple[Message, str]:
        fields: dict[str, Any] = {"table_id": w.table_id, "request_id": fresh("tbl")}
        names = {f.name for f in kind.DESCRIPTOR.fields}
        if "hand_number" in names:
            fields["hand_number"] = 999_999  # stale: refused after the authorisation checks
        if "action" in names:
            fields["action"] = table_pb2.ACTION_TYPE_FOLD
        if "pre_action" in names:
            fields["pre_action"] = table_pb2.PRE_ACTION_TYPE_FOLD
        return kind(**fields), "alice"

    return prepare


def _table_request(kind: type[Message]) -> Prepare:
    async def prepare(w: World, column: str) -> tuple[Message, str]:
        return kind(table_id=w.table_id, request_id=fresh("tbl")), "alice"

    return prepare


async def _with_wallet(w: World, column: str) -> str:
    owner = fresh(f"w-{column}")
    await w.deposit(owner)
    return owner


async def _pending_transfer(w: World, owner: str) -> str:
    transfer_id = fresh("pend")
    await w.wallet.CreateTransfer(
        wallet_pb2.CreateTransferRequest(
            spec=ledger_pb2.TransferSpec(
                transfer_id=transfer_id,
                debit_player_id=owner,
                credit_account_id=ESCROW,
                amount=100,
                pending=True,
                code="buy_in",
            )
        ),
        metadata=w.ops,
    )
    return transfer_id


def _prepare_for(service: str, rpc: str) -> Prepare:
    """How a cell of ``service.rpc`` builds its request (and whom it is about)."""

    async def prepare(w: World, column: str) -> tuple[Message, str]:
        r, t, wl, p = registration_pb2, table_pb2, wallet_pb2, payout_pb2
        match (service, rpc):
            # -- registration
            case ("RegistrationService", "ListLobby"):
                return r.ListLobbyRequest(), fresh("anyone")
            case ("RegistrationService", "Register"):
                owner = await _with_wallet(w, column)
                return r.RegisterRequest(
                    request_id=fresh("reg"), player_id=owner, tier_id=w.tiers[1], entries=1
                ), owner
            case ("RegistrationService", "Unregister"):
                owner = await _with_wallet(w, column)
                entry = await w.register(owner, w.tiers[1])
                return r.UnregisterRequest(
                    entry_id=entry.entry_id, request_id=fresh("unreg")
                ), owner
            case ("RegistrationService", "ListMyTables"):
                owner = fresh("mt")
                return r.ListMyTablesRequest(player_id=owner), owner
            case ("RegistrationService", "WatchMyTables"):
                owner = fresh("wmt")
                return r.WatchMyTablesRequest(player_id=owner), owner
            case ("RegistrationService", "GetPlayerSettings"):
                owner = fresh("gs")
                return r.GetPlayerSettingsRequest(player_id=owner), owner
            case ("RegistrationService", "UpdatePlayerSettings"):
                owner = fresh("us")
                return r.UpdatePlayerSettingsRequest(player_id=owner, four_color_deck=True), owner
            case ("RegistrationService", "CancelTable"):
                return r.CancelTableRequest(table_id=fresh("no-such-table")), fresh("ct")
            # -- table (the owner is seated at the running table)
            case ("TableService", "GetTable"):
                return t.GetTableRequest(table_id=w.table_id), "alice"
            case ("TableService", "WatchTable"):
                return t.WatchTableRequest(table_id=w.table_id), "alice"
            case ("TableService", "Act"):
                return await _stale_table_request(t.ActRequest)(w, column)
            case ("TableService", "SetPreAction"):
                return await _stale_table_request(t.SetPreActionRequest)(w, column)
            case ("TableService", "ClearPreAction"):
                return await _stale_table_request(t.ClearPreActionRequest)(w, column)
            case ("TableService", "SitOut"):
                return await _table_request(t.SitOutRequest)(w, column)
            case ("TableService", "SitIn"):
                return await _table_request(t.SitInRequest)(w, column)
            # -- wallet
            case ("WalletService", "GetBalance"):
                owner = await _with_wallet(w, column)
                return wl.GetBalanceRequest(player_id=owner), owner
            case ("WalletService", "GetAccount"):
                owner = await _with_wallet(w, column)
                return wl.GetAccountRequest(account_id=f"player:{owner}:cash"), owner
            case ("WalletService", "ListTransactions"):
                owner = await _with_wallet(w, column)
                return wl.ListTransactionsRequest(player_id=owner), owner
            case ("WalletService", "OpenPlayerAccounts"):
                owner = fresh("open")
                return wl.OpenPlayerAccountsRequest(player_id=owner), owner
            case ("WalletService", "CreateTransfer"):
                owner = await _with_wallet(w, column)
                spec = ledger_pb2.TransferSpec(
                    transfer_id=fresh("ct"),
                    debit_player_id=owner,
                    credit_account_id=ESCROW,
                    amount=100,
                    pending=True,
                    code="buy_in",
                )
                return wl.CreateTransferRequest(spec=spec), owner
            case ("WalletService", "PostTransfer"):
                owner = await _with_wallet(w, column)
                return wl.PostTransferRequest(transfer_id=await _pending_transfer(w, owner)), owner
            case ("WalletService", "VoidTransfer"):
                owner = await _with_wallet(w, column)
                tid = await _pending_transfer(w, owner)
                return wl.VoidTransferRequest(transfer_id=tid, reason="matrix"), owner
            case ("WalletService", "GetTransfer"):
                owner = fresh("gt")
                return wl.GetTransferRequest(transfer_id=await w.deposit(owner)), owner
            case ("WalletService", "Deposit"):
                owner = fresh("dep")
                return wl.DepositRequest(transfer_id=fresh("d"), player_id=owner, amount=500), owner
            case ("WalletService", "Withdraw"):
                owner = await _with_wallet(w, column)
                return wl.WithdrawRequest(
                    transfer_id=fresh("wd"), player_id=owner, amount=100
                ), owner
            case ("WalletService", "Adjust"):
                owner = await _with_wallet(w, column)
                return wl.AdjustRequest(
                    transfer_id=fresh("adj"),
                    player_id=owner,
                    account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
                    amount=100,
                    reason="matrix",
                ), owner
            # -- payout
            case ("PayoutService", "GetPayouts"):
                return p.GetPayoutsRequest(tournament_id=fresh("no-such-tournament")), "gp"
            case ("PayoutService", "ListWinnings"):
                owner = fresh("lw")
                return p.ListWinningsRequest(player_id=owner), owner
        raise AssertionError(f"no request for {service}.{rpc}: add one")

    return prepare


async def call(w: World, service: str, rpc: str, request: Message, md: Any) -> str:
    """The status name of one call; a stream counts as OK once its first message arrives."""
    stub = {
        "RegistrationService": w.reg,
        "TableService": w.table,
        "WalletService": w.wallet,
        "PayoutService": w.payout,
    }[service]
    method = SERVICES[service].methods_by_name[rpc]
    try:
        if method.server_streaming:
            stream = getattr(stub, rpc)(request, metadata=md)
            try:
                await asyncio.wait_for(stream.read(), STREAM_FIRST_MESSAGE_SECONDS)
            finally:
                stream.cancel()
        else:
            await getattr(stub, rpc)(request, metadata=md, timeout=20)
    except grpc.aio.AioRpcError as err:
        return str(err.code().name)
    return "OK"


def _row_text(row: Row, observed: dict[str, str]) -> str:
    cells = " | ".join(observed.get(c, row.cells[c]) for c in COLUMNS)
    return f"| `{row.service}.{row.rpc}` | … | {cells} |"


async def test_every_cell_of_the_matrix_against_the_real_services(tmp_path: Path) -> None:
    rows = read_matrix(DOC.read_text(encoding="utf-8"))
    # Table commands first, while the fresh tournament's first hand is on.
    rows.sort(key=lambda r: r.service != "TableService")
    mismatches: list[str] = []
    async with embedded_platform(tmp_path) as platform:
        w = World(platform)
        await w.start_table()
        for row in rows:
            prepare = _prepare_for(row.service, row.rpc)
            observed: dict[str, str] = {}
            for column in COLUMNS:
                expected = row.cells[column]
                if expected == "—":
                    continue
                request, owner = await prepare(w, column)
                got = await call(w, row.service, row.rpc, request, credentials(column, owner))
                observed[column] = got
                if row.service == "RegistrationService" and row.rpc in ("Register", "Unregister"):
                    await w.withdraw_entries(owner)
            if any(observed[c] != row.cells[c] for c in observed):
                mismatches.append(_row_text(row, observed))
    assert not mismatches, "observed rows differ from docs/security.md:\n" + "\n".join(mismatches)


def test_the_table_parser_reads_what_the_doc_shows() -> None:
    CELLS = ["PERMISSION_DENIED"] * 3 + ["OK", "—"] + ["UNAUTHENTICATED"] * 4
    sample = f"""intro
{BEGIN}
| RPC | request | {" | ".join(COLUMNS)} |
|---|---|{"---|" * len(COLUMNS)}
| `WalletService.Deposit` | x | {" | ".join(CELLS)} |
{END}
outro | not | a | row |"""
    (row,) = read_matrix(sample)
    assert (row.service, row.rpc) == ("WalletService", "Deposit")
    assert row.cells["operator"] == "OK" and row.cells["auditor"] == "—"
    assert re.fullmatch(r"\| `WalletService\.Deposit` \| … \| .+ \|", _row_text(row, {}))

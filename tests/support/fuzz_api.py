"""The API fuzz harness: every RPC of every service, random and extreme requests, every kind
of token, against the real services in one process (:mod:`tests.support.platform_kit`).

Checks, per call:

* the status is never UNKNOWN or INTERNAL (:data:`FORBIDDEN_CODES`);
* the response (message bytes, status message, trailing metadata including the
  ``grpc-status-details-bin`` details) stays under :data:`SIZE_BOUND` bytes;
* a rejected call changes no state: :class:`StateProbe` fingerprints every service's
  database (the event log's positions, the wallet's accounts, transfers and entries, every
  service's own rows). The fingerprint is taken before each call of a mutating RPC and
  compared with the baseline taken after the last accepted one; any difference while every
  call in between was rejected is a finding. After an accepted call the platform is left to
  settle (no database write for a while) and the baseline is taken again.

Used by ``tests/component/fuzz/test_fuzz_api.py`` (a seeded CI sample) and by
``make fuzz N=50000 SEED=1`` (:mod:`tests.support.fuzz_main`).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc
import jwt
from electric.common.v1 import pagination_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_platform.keys import SigningKey
from google.protobuf.message import Message

from tests.support import auth
from tests.support.fuzz_report import SIZE_BOUND, Finding, FuzzReport, describe
from tests.support.fuzz_values import Known, RequestGenerator, Rpc, discover_rpcs
from tests.support.platform_kit import Platform

#: Statuses no request may ever produce.
FORBIDDEN_CODES = frozenset({grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL})
#: RPCs that may change state when accepted (the others are reads and streams).
READ_PREFIXES = ("Get", "List", "Watch")
#: Seconds a stream is read before the client cancels it (streams do not end by themselves).
STREAM_WINDOW = 0.15
FUZZ_PLAYER = "fuzz-a"
#: Share of calls made with a valid token (of a random role).
VALID_SHARE = 0.65
OPERATOR = "fuzz-operator"
AUDITOR = "fuzz-auditor"
SERVICE = "registration"
#: Idempotency records: a refused command is remembered under its request id, so a retry
#: gets the same answer. Writes there are counted (``FuzzReport.request_log``), not findings:
#: they are the answer's memory, not game or money state (docs/api-fuzz.md).
REQUEST_LOG_TABLES = frozenset({"table.table_requests", "registration.registration_requests"})
#: Retry bookkeeping of owed work (a pending wallet operation's attempt counter and last
#: error change on every retry, with or without calls): left out of the fingerprint; the
#: operation's status, amount and accounts are compared.
_BOOKKEEPING = frozenset({"attempts", "last_error"})
#: The event log's append-only tables: fingerprinted by size, not content.
_APPEND_ONLY = {
    "eventlog_events": "count(*), max(global_position)",
    "eventlog_outbox": "count(*), max(global_position)",
    "eventlog_applied": "count(*)",
    "eventlog_dead_letters": "count(*)",
}


def mutating(rpc: Rpc) -> bool:
    """True for RPCs that may change state when accepted."""
    return not rpc.method.name.startswith(READ_PREFIXES)


# ------------------------------------------------------------------------------ tokens


@dataclass(frozen=True)
class Credential:
    """One way of calling: a label and the metadata it sends."""

    label: str
    metadata: tuple[tuple[str, str], ...]
    #: True when the token is valid (the call may be accepted).
    valid: bool


def credentials(platform: Platform, seated_player: str) -> list[Credential]:
    """Valid tokens of every role, and missing, malformed, expired and forged ones."""
    now = int(time.time())
    issuer = platform.issuer_key
    rogue = SigningKey.generate(issuer.kid)  # same kid, another key: a forged signature
    service_key = auth.KEYS.services["table"]  # a service's own key minting a player token

    def bearer(token: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {token}"),)

    def signed(claims: dict[str, object], key: SigningKey = issuer) -> str:
        return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})

    base: dict[str, object] = {
        "sub": FUZZ_PLAYER,
        "role": "operator",
        "iat": now,
        "exp": now + 600,
        "iss": "electric",
        "aud": "electric",
    }
    header, payload, _ = platform.token(OPERATOR, "operator").split(".")
    valid = [
        Credential("player", bearer(platform.token(FUZZ_PLAYER, "player")), True),
        Credential("seated-player", bearer(platform.token(seated_player, "player")), True),
        Credential("operator", bearer(platform.token(OPERATOR, "operator")), True),
        Credential("auditor", bearer(platform.token(AUDITOR, "auditor")), True),
        Credential("service", bearer(platform.token(SERVICE, "service")), True),
    ]
    invalid = [
        Credential("missing", (), False),
        Credential("empty-bearer", (("authorization", "Bearer "),), False),
        Credential("basic", (("authorization", "Basic Zm9vOmJhcg=="),), False),
        Credential("garbage", bearer("x" * 40), False),
        Credential("huge", bearer("a" * 7000), False),
        Credential(
            "expired", bearer(signed({**base, "iat": now - 7200, "exp": now - 3600})), False
        ),
        Credential("forged-key", bearer(signed(base, rogue)), False),
        Credential(
            "service-key-mints-player",
            bearer(signed({**base, "role": "player"}, service_key)),
            False,
        ),
        Credential(
            "hs256",
            bearer(jwt.encode(base, "x" * 32, algorithm="HS256", headers={"kid": issuer.kid})),
            False,
        ),
        Credential("alg-none", bearer(jwt.encode(base, "", algorithm="none")), False),
        Credential("tampered", bearer(f"{header}.{payload}.AAAA"), False),
        Credential("wrong-role", bearer(signed({**base, "role": "admin"})), False),
        Credential("no-sub", bearer(signed({**base, "sub": ""})), False),
        Credential("no-exp", bearer(signed({k: v for k, v in base.items() if k != "exp"})), False),
        Credential("wrong-iss", bearer(signed({**base, "iss": "someone"})), False),
        Credential("wrong-aud", bearer(signed({**base, "aud": "someone"})), False),
        Credential("ten-years", bearer(signed({**base, "exp": now + 10 * 365 * 86400})), False),
    ]
    return valid + invalid


# ------------------------------------------------------------------------------ state


class StateProbe:
    """A fingerprint of every service's SQLite database (see the module docstring)."""

    def __init__(self, db_urls: dict[str, str]) -> None:
        self._conns: dict[str, sqlite3.Connection] = {}
        for service, url in db_urls.items():
            path = url.split(":///", 1)[1]
            self._conns[service] = sqlite3.connect(path, isolation_level=None, timeout=30)
        #: Tables seen changing while no call ran (background work, e.g. a retried wallet
        #: operation's attempt counter): compared by size (rows added or removed) only.
        self.volatile: set[str] = set()

    def versions(self) -> tuple[int, ...]:
        """SQLite's ``data_version`` per database: changes when another connection commits."""
        return tuple(c.execute("PRAGMA data_version").fetchone()[0] for c in self._conns.values())

    def fingerprint(self) -> dict[str, str]:
        """``service.table`` -> digest of its content (append-only logs and tables that
        change on their own, :attr:`volatile`: of their size)."""
        out: dict[str, str] = {}
        for service, conn in self._conns.items():
            names = [
                n
                for (n,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            for name in names:
                columns = _APPEND_ONLY.get(name)
                if f"{service}.{name}" in self.volatile:
                    columns = "count(*), max(rowid)"
                if not columns:
                    kept = [
                        f'"{c}"'
                        for (_, c, *_) in conn.execute(f'PRAGMA table_info("{name}")')
                        if c not in _BOOKKEEPING
                    ]
                    columns = ", ".join(kept) or "*"
                    rows = sorted(repr(r) for r in conn.execute(f'SELECT {columns} FROM "{name}"'))
                else:
                    rows = conn.execute(f'SELECT {columns} FROM "{name}"').fetchall()
                out[f"{service}.{name}"] = hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
        return out

    async def settle(self, quiet: float = 0.12, limit: float = 5.0) -> bool:
        """Wait until no database changed for ``quiet`` seconds (at most ``limit``); False
        when the databases never went quiet."""
        deadline = time.monotonic() + limit
        last = self.versions()
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.03)
            now = self.versions()
            if now != last:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= quiet:
                return True
        return False

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()


# ------------------------------------------------------------------------------ seeding


async def seed_platform(platform: Platform, seed: int) -> tuple[Known, str]:
    """Give the platform real content: one tournament played to the end by bots, a funded
    fuzz player with a waiting entry. Returns the known ids and a seated player's id."""
    runner = platform.bot_runner(seed=seed, player_prefix="fuzzbot", mix=(("random", 1),))
    stats = await asyncio.wait_for(runner.run(), timeout=120)
    assert stats.tables_finished and not stats.errors, stats
    seated = runner.assignments[0].player_id
    ops = platform.md(OPERATOR, "operator")
    wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))
    reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
    await wallet.Deposit(
        wallet_pb2.DepositRequest(transfer_id="fuzz-seed", player_id=FUZZ_PLAYER, amount=500_000),
        metadata=ops,
    )
    lobby = await reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=ops)
    tiers = [tier.tier_id for tier in lobby.tiers]
    await reg.Register(
        registration_pb2.RegisterRequest(request_id="fuzz-seed", tier_id=tiers[0], entries=1),
        metadata=platform.md(FUZZ_PLAYER),
    )
    known = Known(tier_ids=tiers, table_ids=sorted(stats.tables_finished))
    players = [a.player_id for a in runner.assignments] + [FUZZ_PLAYER]
    # Only two funded identities may ever register (a table needs three): see fuzz_values.
    known.player_ids = [seated, FUZZ_PLAYER]
    for player in players:
        mine = await reg.ListMyTables(
            registration_pb2.ListMyTablesRequest(include_finished=True),
            metadata=platform.md(player),
        )
        for table in mine.tables:
            known.table_ids.append(table.table_id)
            known.entry_ids.extend(e.entry_id for e in table.my_entries)
        for suffix in ("cash", "bonus", "pending_bonus"):
            known.account_ids.append(f"player:{player}:{suffix}")
        page = await wallet.ListTransactions(
            wallet_pb2.ListTransactionsRequest(
                player_id=player, page=pagination_pb2.PageRequest(page_size=1)
            ),
            metadata=ops,
        )
        known.page_tokens.append(page.page.next_page_token)
        full = await wallet.ListTransactions(
            wallet_pb2.ListTransactionsRequest(player_id=player), metadata=ops
        )
        known.transfer_ids.extend(e.transfer_id for e in full.entries if e.transfer_id)
    known.account_ids += [
        "house:rake",
        "house:prize_reserve",
        "house:tournament_escrow",
        "operator:cash_in",
    ]
    known.table_ids = sorted(set(known.table_ids))
    known.page_tokens = [p for p in set(known.page_tokens) if p]
    await _settle_platform(platform)
    return known, seated


async def _settle_platform(platform: Platform) -> None:
    probe = StateProbe(platform.db_urls)
    try:
        await probe.settle(quiet=0.3, limit=10)
    finally:
        probe.close()


# ------------------------------------------------------------------------------ the run


@dataclass
class Outcome:
    code: grpc.StatusCode
    size: int
    detail: str


def _identity(data: bytes) -> bytes:
    return data


def _metadata_size(metadata: object) -> int:
    total = 0
    for key, value in metadata or ():  # type: ignore[attr-defined]
        total += len(key) + len(value if isinstance(value, bytes) else str(value).encode())
    return total


class Transport(Protocol):
    """How the harness reaches the services: one call, its outcome (status, answer size)."""

    async def call(self, rpc: Rpc, request: Message, cred: Credential) -> Outcome: ...


class NativeTransport:
    """Native gRPC straight to each service (generic callables, no stubs)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    async def call(self, rpc: Rpc, request: Message, cred: Credential) -> Outcome:
        channel = self.platform.channel(rpc.service)
        serialize = type(request).SerializeToString
        if not rpc.streaming:
            unary = channel.unary_unary(rpc.path, serialize, _identity)
            call = unary(request, metadata=cred.metadata, timeout=10)
            try:
                body: bytes = await call
                size = len(body) + _metadata_size(await call.trailing_metadata())
                return Outcome(grpc.StatusCode.OK, size, "")
            except grpc.aio.AioRpcError as err:
                return _failed(err)
        stream = channel.unary_stream(rpc.path, serialize, _identity)(
            request, metadata=cred.metadata, timeout=10
        )
        largest = 0
        try:
            for _ in range(3):
                item = await asyncio.wait_for(stream.read(), timeout=STREAM_WINDOW)
                if not isinstance(item, bytes):
                    break  # grpc.aio.EOF
                largest = max(largest, len(item))
            else:
                stream.cancel()
                return Outcome(grpc.StatusCode.OK, largest, "")
            code = await stream.code()
            size = max(largest, _metadata_size(await stream.trailing_metadata()))
            return Outcome(code, size + len((await stream.details()) or ""), "")
        except TimeoutError:
            stream.cancel()
            return Outcome(grpc.StatusCode.OK, largest, "stream open")
        except grpc.aio.AioRpcError as err:
            out = _failed(err)
            return Outcome(out.code, max(out.size, largest), out.detail)


class FuzzRunner:
    """Sends generated requests to the platform and checks every answer."""

    def __init__(
        self,
        platform: Platform,
        known: Known,
        seated_player: str,
        *,
        seed: int,
        rpcs: list[Rpc] | None = None,
        check_state: bool = True,
        transport: Transport | None = None,
    ) -> None:
        self.platform = platform
        #: Native gRPC unless given (e.g. the browser edge: :mod:`tests.support.fuzz_edge`).
        self.transport: Transport = transport or NativeTransport(platform)
        self.rng = random.Random(seed)
        self.rpcs = rpcs or discover_rpcs()
        self.generator = RequestGenerator(self.rng, known)
        self.credentials = credentials(platform, seated_player)
        self.check_state = check_state
        self.report = FuzzReport()
        self._probe = StateProbe(platform.db_urls) if check_state else None

    def _credential(self) -> Credential:
        """A valid token two times in three (so calls get past authentication), else a bad one."""
        valid = self.rng.random() < VALID_SHARE
        return self.rng.choice([c for c in self.credentials if c.valid is valid])

    async def _call(self, rpc: Rpc, request: Message, cred: Credential) -> Outcome:
        """The one place calls are made: through :attr:`transport`."""
        return await self.transport.call(rpc, request, cred)

    async def run(self, calls: int, progress: Callable[[int], None] | None = None) -> FuzzReport:
        """Send ``calls`` generated requests; returns the report (also ``self.report``)."""
        report = self.report
        began = time.monotonic()
        probe = self._probe
        baseline = probe.fingerprint() if probe else {}
        versions = probe.versions() if probe else ()
        # Refused calls since the baseline (described only when a finding needs them).
        since: list[tuple[str, str, str, Message]] = []
        for _ in range(calls):
            rpc = self.rng.choice(self.rpcs)
            request = self.generator.request(rpc)
            cred = self._credential()
            is_mutating = mutating(rpc)
            if probe and is_mutating:
                report.state_checks += 1
                # No commit by any service since the baseline: nothing can differ.
                seen = probe.versions()
                if seen != versions:
                    versions = seen
                    now = probe.fingerprint()
                    if now != baseline:
                        baseline, now = await self._reclassify(probe, baseline, now)
                    if now != baseline:
                        self._state_changed(baseline, now, since)
                        baseline = now
                del since[:-20]
            outcome = await self._call(rpc, request, cred)
            report.calls += 1
            report.huge_calls += self.generator.huge_used
            report.by_rpc[rpc.name] += 1
            report.by_code[outcome.code.name] += 1
            report.by_rpc_code[(rpc.name, outcome.code.name)] += 1
            if outcome.code is not grpc.StatusCode.OK:
                report.examples.setdefault((rpc.name, outcome.code.name), outcome.detail[:200])
            report.largest = max(report.largest, outcome.size)
            if outcome.code in FORBIDDEN_CODES:
                report.findings.append(
                    Finding(
                        "status",
                        rpc.name,
                        cred.label,
                        f"{outcome.code.name}: {outcome.detail[:300]}",
                        describe(request),
                    )
                )
            if outcome.size > SIZE_BOUND:
                report.findings.append(
                    Finding(
                        "size",
                        rpc.name,
                        cred.label,
                        f"{outcome.size} bytes ({outcome.code.name})",
                        describe(request),
                    )
                )
            if probe:
                if is_mutating and outcome.code is grpc.StatusCode.OK:
                    if not await probe.settle():
                        report.unsettled += 1
                    versions = probe.versions()
                    baseline = probe.fingerprint()
                    since = []
                else:
                    since.append((rpc.name, cred.label, outcome.code.name, request))
            if progress is not None:
                progress(1)
        if probe:
            report.state_checks += 1
            await asyncio.sleep(0.05)
            now = probe.fingerprint()
            if now != baseline:
                self._state_changed(baseline, now, since)
        report.seconds += time.monotonic() - began
        return report

    async def _reclassify(
        self, probe: StateProbe, before: dict[str, str], after: dict[str, str]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """A difference was seen: wait with no call in flight; tables that change again on
        their own become :attr:`StateProbe.volatile` (counted in ``report.background``).
        Returns ``before`` and ``after`` fingerprinted the same way (volatile by size), so a
        refused call is still caught when it adds or removes rows there."""
        await asyncio.sleep(1.5)
        again = probe.fingerprint()
        moving = {k for k in again if again.get(k) != after.get(k)} - probe.volatile
        if not moving:
            return before, after
        for name in moving:
            self.report.background[name] += 1
        probe.volatile |= moving
        # Re-express both sides by size for the volatile tables: ``before`` from the
        # baseline's row counts is unknown, so compare the sizes seen now with each other
        # (a background update keeps the size; a row added by a refused call does not).
        now = probe.fingerprint()
        return {**before, **{k: now[k] for k in moving if k in now}}, now

    def _state_changed(
        self,
        before: dict[str, str],
        after: dict[str, str],
        since: list[tuple[str, str, str, Message]],
    ) -> None:
        """Record what changed while every call since ``before`` was refused."""
        changed = sorted(k for k in after if after.get(k) != before.get(k))
        for name in changed:
            if name in REQUEST_LOG_TABLES:
                self.report.request_log[name] += 1
        state = [name for name in changed if name not in REQUEST_LOG_TABLES]
        if state:
            calls = " | ".join(
                f"{rpc}[{cred}] {code} {describe(request, 200)}"
                for rpc, cred, code, request in since[-5:]
            )
            last = since[-1] if since else ("?", "", "", None)
            self.report.findings.append(
                Finding("state", last[0], last[1], f"changed {state}", calls or "(none)")
            )

    def close(self) -> None:
        if self._probe:
            self._probe.close()


def _failed(err: grpc.aio.AioRpcError) -> Outcome:
    details = err.details() or ""
    size = len(details.encode()) + _metadata_size(err.trailing_metadata())
    return Outcome(err.code(), size, details)


def new_seed() -> int:
    """A fresh seed (printed by the make target so a run can be repeated)."""
    return uuid.uuid4().int % 1_000_000

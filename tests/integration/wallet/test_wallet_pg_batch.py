"""The batch executor (``batch.execute_batch``) against the pure ledger on real PostgreSQL:
random scripts of commands (opens, deposits, p2p, wagers, winnings split by stake,
pending + partial post / void, replays, reused keys, insufficient funds, unknown
transfers) are cut into batches of random size and each batch is decided together; every
command's outcome, every balance and every transfer must equal running the same commands
one by one on the pure ledger, and the projections (statement lines included) must equal
a fold of the stored events."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from electric_clients.accounts import ESCROW
from electric_eventlog import EventStore, create_engine
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.batch import WalletCommand, execute_batch
from electric_wallet.handlers import Result, Wallet
from electric_wallet.store.projections import rebuild_and_compare
from sqlalchemy import select

pytestmark = pytest.mark.integration

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PLAYERS = ("bp1", "bp2", "bp3", "bp4")
KINDS = (
    *("open", "deposit", "p2p", "wager", "win", "bonus", "release", "withdraw"),
    *("post", "post", "void", "retry", "reuse", "unknown"),
)


class _Captured(Exception):
    """Raised instead of running a command: the test runs the captured commands itself."""


@pytest.fixture
def wallet(fresh_pg_url: str) -> Iterator[Wallet]:
    engine = create_engine(fresh_pg_url)
    store.migrate(engine)
    w = Wallet(engine, EventStore(engine, producer="wallet"), clock=lambda: NOW)
    w.bootstrap()
    try:
        yield w
    finally:
        w.events.group.close()
        engine.dispose()


def _cash(p: str) -> d.AccountSide:
    return d.AccountSide(d.player_account_id(p, d.AccountKind.PLAYER_CASH))


Command = tuple[str, tuple[object, ...]]


def _script(rng: random.Random, sizes: list[int]) -> list[list[Command]]:
    """Batches of commands (name, arguments) of the given sizes; none depends on an
    earlier one's outcome. A post or void names a transfer of an EARLIER batch: its
    caller learns of the transfer only once the batch that created it has committed."""
    made: list[d.TransferRequest] = []
    batches: list[list[Command]] = []
    for size in sizes:
        resolvable = list(made)
        batches.append(_batch(rng, size, made, resolvable, sum(len(b) for b in batches)))
    return batches


def _batch(
    rng: random.Random,
    size: int,
    made: list[d.TransferRequest],
    resolvable: list[d.TransferRequest],
    first: int,
) -> list[Command]:
    out: list[Command] = []
    for i in range(first, first + size):
        p, q = rng.sample(PLAYERS, 2)
        amount = rng.choice((1, 7, 150, 900, 2_500, 6_000))
        kind = rng.choice(KINDS)
        tid = f"bt{i}"
        req: d.TransferRequest | None = None
        if kind == "open":
            out.append(("open_player", (p,)))
        elif kind == "deposit":
            out.append(("deposit", (tid, p, amount * 3)))
        elif kind == "p2p":
            req = d.TransferRequest(tid, _cash(p), _cash(q), amount, pending=rng.random() < 0.5)
        elif kind == "wager":
            pending = rng.random() < 0.5
            req = d.TransferRequest(tid, d.PlayerFunds(p), d.AccountSide(ESCROW), amount, pending)
        elif kind == "win":
            stakes = [r for r in made if isinstance(r.debit, d.PlayerFunds)]
            stake = rng.choice(stakes) if stakes and rng.random() < 0.7 else None
            player = (
                stake.debit.player_id if stake and isinstance(stake.debit, d.PlayerFunds) else p
            )
            req = d.TransferRequest(
                tid,
                d.AccountSide("house:casino_bankroll"),
                d.PlayerWinnings(player, stake.transfer_id if stake else ""),
                amount,
                code="win",
            )
        elif kind == "bonus":
            pending_bonus = d.AccountKind.PLAYER_PENDING_BONUS
            target = d.AccountSide(d.player_account_id(p, pending_bonus))
            req = d.TransferRequest(tid, d.AccountSide("house:promotions"), target, amount)
        elif kind == "release":
            src = d.AccountSide(d.player_account_id(p, d.AccountKind.PLAYER_PENDING_BONUS))
            dst = d.AccountSide(d.player_account_id(p, d.AccountKind.PLAYER_BONUS))
            req = d.TransferRequest(tid, src, dst, amount, code="bonus_release")
        elif kind == "withdraw":
            req = d.TransferRequest(tid, _cash(p), d.AccountSide(d.CASH_OUT), amount)
        elif kind in ("post", "void") and resolvable:
            # Mostly the newest transfers (likely pending).
            t = resolvable[-1 - min(len(resolvable) - 1, int(rng.expovariate(0.5)))]
            if kind == "void":
                out.append(("void_transfer", (t.transfer_id, "test")))
            else:
                part = rng.choice((None, None, max(1, t.amount // 2), t.amount, t.amount + 1))
                out.append(("post_transfer", (t.transfer_id, part)))
        elif kind == "retry" and made:
            out.append(("create_transfer", (rng.choice(made),)))
        elif kind == "reuse" and made:
            r = rng.choice(made)
            out.append(
                ("create_transfer", (d.TransferRequest(r.transfer_id, r.debit, r.credit, 3),))
            )
        elif kind == "unknown":
            out.append(("post_transfer", (f"nope{i}", None)))
        if req is not None:
            made.append(req)
            out.append(("create_transfer", (req,)))
    return out


def _model(ledger: d.Ledger, name: str, args: tuple[object, ...]) -> str:
    """One command on the pure ledger, all or nothing (like its transaction)."""
    trial = ledger.clone()
    try:
        if name == "open_player":
            trial.open_player(str(args[0]), NOW)
            outcome = "ok"
        elif name == "deposit":
            tid, p, amount = args
            assert isinstance(tid, str) and isinstance(p, str) and isinstance(amount, int)
            req = d.TransferRequest(tid, d.AccountSide(d.CASH_IN), _cash(p), amount, code="deposit")
            opened = [] if tid in trial.transfers else trial.open_player(p, NOW)
            _, events = trial.create_transfer(req, NOW)
            outcome = "replayed" if not events and not opened else "ok"
        elif name == "create_transfer":
            r = args[0]
            assert isinstance(r, d.TransferRequest)
            _, events = trial.create_transfer(r, NOW)
            outcome = "ok" if events else "replayed"
        elif name == "post_transfer":
            tid, amount = args
            assert isinstance(tid, str) and (amount is None or isinstance(amount, int))
            _, events = trial.post_transfer(tid, amount, NOW)
            outcome = "ok" if events else "replayed"
        else:
            tid, reason = args
            assert isinstance(tid, str) and isinstance(reason, str)
            _, events = trial.void_transfer(tid, reason, NOW)
            outcome = "ok" if events else "replayed"
    except d.WalletError as exc:
        return type(exc).__name__
    ledger.accounts, ledger.transfers = trial.accounts, trial.transfers
    return outcome


def _name(outcome: object) -> str:
    if isinstance(outcome, BaseException):
        return type(outcome).__name__
    if isinstance(outcome, Result):
        return "replayed" if outcome.replayed else "ok"
    return "ok"  # open_player's (breakdown, opened)


@pytest.mark.parametrize("seed", range(6))
def test_batches_decide_like_the_pure_ledger_one_by_one(wallet: Wallet, seed: int) -> None:
    rng = random.Random(seed)
    batches = _script(rng, [rng.randint(1, 32) for _ in range(12)])
    script = [c for batch in batches for c in batch]
    model = d.Ledger()
    for aid in d.SYSTEM_ACCOUNTS:
        model.open_account(aid, NOW)
    want = [_model(model, name, args) for name, args in script]

    # Capture each command as the data the group commit would hand the executor.
    cmds: list[WalletCommand] = []

    def capture(work: object, *, bulk: WalletCommand) -> object:
        cmds.append(bulk)
        raise _Captured

    wallet.events.transact = capture  # type: ignore[method-assign]
    for name, args in script:
        with pytest.raises(_Captured):
            getattr(wallet, name)(*args)
    del wallet.events.transact

    got: list[str] = []
    at = 0
    for batch in batches:
        chunk = cmds[at : at + len(batch)]
        at += len(chunk)
        commit = rng.random() < 0.5  # both ways to end the batch: its own COMMIT or not
        with wallet.engine.connect() as conn, conn.begin():
            outcomes = execute_batch(conn, chunk, commit)
        assert outcomes is not None, "the batch fell back to one by one"
        got += [_name(o) for o in outcomes]
    assert got == want
    assert len(set(want)) > 4, want  # the script exercised refusals and replays too

    with wallet.engine.connect() as conn:
        accounts = {
            r.account_id: store.account_from_row(r) for r in conn.execute(select(store.accounts))
        }
        transfers = {
            r.transfer_id: store.transfer_from_row(r) for r in conn.execute(select(store.transfers))
        }
    assert accounts == model.accounts
    assert transfers == model.transfers
    assert sum(a.posted for a in accounts.values()) == 0
    assert rebuild_and_compare(wallet.engine, wallet.events) == []

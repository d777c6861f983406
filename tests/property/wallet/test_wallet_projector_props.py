"""The wallet's one projector (issue 25 item 3): for random command sequences through the
handlers — players opened, deposits, reservations posted (in full or in part) or voided,
prizes against a stake, transfers between players, bonus adjustments, withdrawals,
commands repeated with the same idempotency key (same content: a replay; other content:
refused) and commands the ledger refuses — the rows written live equal, column for
column, the rows a rebuild writes from the events alone.

SQLite, and PostgreSQL with the ``integration`` marker (there every command goes through
the group-commit batch executor, ``batch.py``: the same fold, written by the same
``store.write``). One database per backend for the whole test, bootstrapped once; each
example works under its own id prefix, and ends with the tables rebuilt, so a difference
found by one example does not leak into the next. The rebuild writes in pieces of 5 rows,
so its chunking is exercised too.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from electric_eventlog import EventStore
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store import projections
from electric_wallet.store.projections import rebuild_and_compare, rebuild_projections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

ESCROW = d.AccountSide("house:tournament_escrow")
PLAYERS = ("a", "b", "c")
KEYS = 8  # few keys: the same idempotency key comes back often


@dataclass(frozen=True)
class Cmd:
    """One command of a sequence; ``key`` and ``stake`` pick idempotency keys."""

    kind: str
    player: str = "a"
    other: str = "b"
    key: int = 0
    stake: int = 0
    amount: int = 1
    flag: bool = False


_player = st.sampled_from(PLAYERS)
_key = st.integers(0, KEYS - 1)
_funds = st.integers(1, 10_000)
_spend = st.integers(1, 3_000)
_deposit = st.builds(Cmd, kind=st.just("deposit"), player=_player, key=_key, amount=_funds)
_reserve = st.builds(Cmd, kind=st.just("reserve"), player=_player, key=_key, amount=_spend)
_post = st.builds(Cmd, kind=st.just("post"), key=_key, amount=_spend, flag=st.booleans())
# Deposits, reservations and posts are drawn more often than the rest, so that most
# sequences move money rather than being refused for want of it.
commands = st.one_of(
    _deposit,
    _deposit,
    _reserve,
    _reserve,
    _post,
    _post,
    st.builds(Cmd, kind=st.just("open"), player=_player),
    st.builds(Cmd, kind=st.just("withdraw"), player=_player, key=_key, amount=_spend),
    st.builds(Cmd, kind=st.just("void"), key=_key),
    st.builds(Cmd, kind=st.just("win"), player=_player, key=_key, stake=_key, amount=_spend),
    st.builds(Cmd, kind=st.just("pay"), player=_player, other=_player, key=_key, amount=_spend),
    st.builds(
        Cmd, kind=st.just("bonus"), player=_player, key=_key, amount=_spend, flag=st.booleans()
    ),
    st.builds(Cmd, kind=st.just("again")),
)


class _Clock:
    """Distinct, microsecond-precise moments: timestamps must survive the round trip."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 9, 30, 0, 123_456, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1_001)
        return self.now


def _cash(player: str) -> d.AccountSide:
    return d.AccountSide(d.player_account_id(player, d.AccountKind.PLAYER_CASH))


def _run(wallet: Wallet, prefix: str, cmd: Cmd) -> None:
    """Issue ``cmd``; a refusal of the ledger is an outcome like any other."""
    player, other = f"{prefix}{cmd.player}", f"{prefix}{cmd.other}"
    # A key per kind of command (posts and voids name reservations), so that a key comes
    # back mostly as a retry of its own command, sometimes with other content.
    family = "r" if cmd.kind in ("post", "void") else cmd.kind[0]
    key = f"{prefix}{family}{cmd.key}"
    try:
        if cmd.kind == "open":
            wallet.open_player(player)
        elif cmd.kind == "deposit":
            wallet.deposit(key, player, cmd.amount, "top-up")
        elif cmd.kind == "withdraw":
            wallet.withdraw(key, player, cmd.amount)
        elif cmd.kind == "reserve":
            req = d.TransferRequest(
                key, d.PlayerFunds(player), ESCROW, cmd.amount, pending=True, code="buy_in"
            )
            wallet.create_transfer(req)
        elif cmd.kind == "post":
            wallet.post_transfer(key, cmd.amount if cmd.flag else None)
        elif cmd.kind == "void":
            wallet.void_transfer(key, "unregistered")
        elif cmd.kind == "win":
            winnings = d.PlayerWinnings(player, f"{prefix}r{cmd.stake}")
            wallet.create_transfer(d.TransferRequest(key, ESCROW, winnings, cmd.amount))
        elif cmd.kind == "pay":
            wallet.create_transfer(
                d.TransferRequest(key, _cash(player), _cash(other), cmd.amount, code="p2p")
            )
        elif cmd.kind == "bonus":
            amount = -cmd.amount if cmd.flag else cmd.amount
            wallet.adjust(key, player, d.AccountKind.PLAYER_BONUS, amount, "promo")
    except d.WalletError:
        pass


def _rows(wallet: Wallet) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the wallet's tables, every column (a statement line's id aside: a
    rebuild numbers its lines anew, in the same order)."""
    e = store.entries
    with wallet.engine.connect() as conn:
        return {
            "accounts": [
                tuple(r)
                for r in conn.execute(select(store.accounts).order_by(store.accounts.c.account_id))
            ],
            "transfers": [
                tuple(r)
                for r in conn.execute(
                    select(store.transfers).order_by(store.transfers.c.transfer_id)
                )
            ],
            "entries": [
                tuple(r)
                for r in conn.execute(
                    select(*(c for c in e.c if c.name != "entry_id")).order_by(e.c.entry_id)
                )
            ],
        }


_examples = itertools.count()


@pytest.fixture(scope="module")
def wallet(module_engine: Engine) -> Iterator[Wallet]:
    """One bootstrapped wallet per backend for the whole test (module doc)."""
    engine = module_engine
    with contextlib.ExitStack() as stack:
        # Small pieces: every rebuild then writes its fold in several statements a table.
        stack.enter_context(pytest.MonkeyPatch.context()).setattr(projections, "REBUILD_CHUNK", 5)
        store.migrate(engine)
        w = Wallet(engine, EventStore(engine, producer="wallet"), clock=_Clock())
        w.bootstrap()
        yield w


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(commands, min_size=1, max_size=30))
def test_live_rows_equal_the_rows_rebuilt_from_the_events(
    wallet: Wallet, sequence: list[Cmd]
) -> None:
    prefix = f"x{next(_examples)}-"
    # Every player starts with some cash, so that most commands move money.
    for player in PLAYERS[:2]:
        wallet.deposit(f"{prefix}seed-{player}", f"{prefix}{player}", 6_000)
    previous: Cmd | None = None
    for cmd in sequence:
        if cmd.kind == "again":
            if previous is None:
                continue
            cmd = previous  # the very same command again: same key, same content
        _run(wallet, prefix, cmd)
        previous = cmd
    assert rebuild_and_compare(wallet.engine, wallet.events) == []
    live = _rows(wallet)
    rebuild_projections(wallet.engine, wallet.events)
    assert _rows(wallet) == live

"""Operation generator shared by the wallet property tests (domain and store)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from electric_wallet import domain as d
from hypothesis import strategies as st

PLAYERS = ("p1", "p2", "p3")


@dataclass(frozen=True)
class Op:
    """One generated step; ``kind`` picks what it does, the ints parametrise it."""

    kind: str
    player: str = "p1"
    other: str = "p2"
    amount: int = 1
    ref: int = 0
    flag: bool = False


amounts = st.integers(min_value=1, max_value=5_000)
small = st.integers(min_value=1, max_value=1_500)
ops = st.one_of(
    st.builds(Op, kind=st.just("open"), player=st.sampled_from(PLAYERS)),
    st.builds(Op, kind=st.just("deposit"), player=st.sampled_from(PLAYERS), amount=amounts),
    st.builds(
        Op,
        kind=st.just("bonus"),
        player=st.sampled_from(PLAYERS),
        amount=amounts,
        flag=st.booleans(),
    ),
    st.builds(Op, kind=st.just("release"), player=st.sampled_from(PLAYERS), amount=small),
    st.builds(
        Op,
        kind=st.just("wager"),
        player=st.sampled_from(PLAYERS),
        amount=small,
        flag=st.booleans(),
    ),
    st.builds(
        Op,
        kind=st.just("win"),
        player=st.sampled_from(PLAYERS),
        amount=amounts,
        ref=st.integers(0, 40),
        flag=st.booleans(),
    ),
    st.builds(
        Op,
        kind=st.just("p2p"),
        player=st.sampled_from(PLAYERS),
        other=st.sampled_from(PLAYERS),
        amount=small,
        flag=st.booleans(),
    ),
    st.builds(Op, kind=st.just("spend_pending"), player=st.sampled_from(PLAYERS), amount=amounts),
    st.builds(Op, kind=st.just("withdraw"), player=st.sampled_from(PLAYERS), amount=small),
    st.builds(Op, kind=st.just("post"), ref=st.integers(0, 40), amount=st.integers(0, 3_000)),
    st.builds(Op, kind=st.just("void"), ref=st.integers(0, 40)),
    st.builds(Op, kind=st.just("retry"), ref=st.integers(0, 40), flag=st.booleans()),
)


class Driver(Protocol):
    """What a property test drives: the pure ledger or the store."""

    def open_player(self, player_id: str) -> None: ...
    def create(self, req: d.TransferRequest) -> bool: ...  # returns replayed
    def post(self, transfer_id: str, amount: int | None) -> bool: ...
    def void(self, transfer_id: str) -> bool: ...


def acct(player: str, kind: d.AccountKind) -> d.AccountSide:
    return d.AccountSide(d.player_account_id(player, kind))


def to_request(op: Op, n: int) -> d.TransferRequest | None:
    """The transfer request of a creating op (``n`` numbers the transfer id)."""
    tid = f"t{n}"
    p = op.player
    if op.kind == "deposit":
        return d.TransferRequest(
            tid,
            d.AccountSide("operator:cash_in"),
            acct(p, d.AccountKind.PLAYER_CASH),
            op.amount,
            code="deposit",
        )
    if op.kind == "bonus":
        kind = d.AccountKind.PLAYER_PENDING_BONUS if op.flag else d.AccountKind.PLAYER_BONUS
        return d.TransferRequest(
            tid, d.AccountSide("house:promotions"), acct(p, kind), op.amount, code="bonus"
        )
    if op.kind == "release":
        return d.TransferRequest(
            tid,
            acct(p, d.AccountKind.PLAYER_PENDING_BONUS),
            acct(p, d.AccountKind.PLAYER_BONUS),
            op.amount,
            code="bonus_release",
        )
    if op.kind == "wager":
        return d.TransferRequest(
            tid,
            d.PlayerFunds(p),
            d.AccountSide("house:tournament_escrow"),
            op.amount,
            pending=op.flag,
            code="buy_in",
        )
    if op.kind == "p2p":
        return d.TransferRequest(
            tid,
            acct(p, d.AccountKind.PLAYER_CASH),
            acct(op.other, d.AccountKind.PLAYER_CASH),
            op.amount,
            pending=op.flag,
            code="p2p",
        )
    if op.kind == "spend_pending":
        return d.TransferRequest(
            tid,
            acct(p, d.AccountKind.PLAYER_PENDING_BONUS),
            d.AccountSide("house:casino_bankroll"),
            op.amount,
            code="wager",
        )
    if op.kind == "withdraw":
        return d.TransferRequest(
            tid,
            acct(p, d.AccountKind.PLAYER_CASH),
            d.AccountSide("operator:cash_out"),
            op.amount,
            code="withdraw",
        )
    return None


def run_ops(driver: Driver, ops_: list[Op]) -> list[tuple[str, str]]:
    """Run the ops; return one (op kind, outcome) per op: "ok", "replayed" or the error
    class name. Outcomes must not depend on the driver."""
    made: list[d.TransferRequest] = []  # every request tried (numbers the ids)
    created: list[d.TransferRequest] = []  # those that were accepted
    outcomes: list[tuple[str, str]] = []
    for p in PLAYERS[:2]:  # p3 stays unopened unless an "open" op opens it
        driver.open_player(p)
        driver.create(
            d.TransferRequest(
                f"seed-{p}",
                d.AccountSide("operator:cash_in"),
                acct(p, d.AccountKind.PLAYER_CASH),
                4_000,
                code="deposit",
            )
        )
    for op in ops_:
        try:
            replayed = False
            if op.kind == "open":
                driver.open_player(op.player)
            elif op.kind == "win":
                stake = ""
                if op.flag and made:
                    stake = made[op.ref % len(made)].transfer_id
                req = d.TransferRequest(
                    f"t{len(made)}",
                    d.AccountSide("house:casino_bankroll"),
                    d.PlayerWinnings(op.player, stake),
                    op.amount,
                    code="win",
                )
                made.append(req)
                replayed = driver.create(req)
                created.append(req)
            elif op.kind in ("post", "void", "retry"):
                pending = [r for r in created if r.pending]
                if op.ref % 5 == 0:
                    pool = made  # sometimes a rejected or single-phase one
                elif op.kind == "retry" or not pending:
                    pool = created
                else:
                    pool = pending[-1 - op.ref % 2 :]  # the newest, likely unresolved
                if not pool:
                    outcomes.append((op.kind, "skip"))
                    continue
                tid = pool[op.ref % len(pool)].transfer_id
                if op.kind == "post":
                    full = pool[op.ref % len(pool)].amount
                    amount = op.amount if op.ref % 4 == 0 else op.amount % full + 1
                    replayed = driver.post(tid, None if op.amount == 0 else amount)
                elif op.kind == "void":
                    replayed = driver.void(tid)
                else:
                    req = pool[op.ref % len(pool)]
                    if op.flag:  # same key, different content
                        req = d.TransferRequest(
                            req.transfer_id,
                            req.debit,
                            req.credit,
                            req.amount + 1,
                            req.pending,
                            req.code,
                            req.memo,
                        )
                    replayed = driver.create(req)
            else:
                req_ = to_request(op, len(made))
                assert req_ is not None
                made.append(req_)
                replayed = driver.create(req_)
                created.append(req_)
            outcomes.append((op.kind, "replayed" if replayed else "ok"))
        except d.WalletError as e:
            outcomes.append((op.kind, type(e).__name__))
    return outcomes

"""OwedWork with bounded parallelism (issue 16: payout crediting keeps up): calls of
non-blocking groups run concurrently but never more than ``parallelism`` at once; groups
with blocking calls keep their order and stop at a failed blocking call."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import grpc
import pytest
from electric_platform.owed_work import OwedWork


@dataclass(frozen=True)
class Call:
    op_id: str
    group: str
    blocking: bool = False
    fails: bool = False
    stage: str | None = None


class _Failed(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(
            grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "down"
        )


class Source:
    def __init__(self, calls: list[Call]) -> None:
        self.owed = list(calls)
        self.performed: list[str] = []
        self.done: list[str] = []
        self.failed: list[str] = []
        self.in_flight = 0
        self.peak = 0

    def pending(self, group: str | None) -> Sequence[Call]:
        return [c for c in self.owed if group is None or c.group == group]

    def groups_waiting(self) -> Iterable[str]:
        return ()

    async def perform(self, call: Call) -> str:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            self.performed.append(call.op_id)
            if call.fails:
                raise _Failed()
            return call.op_id
        finally:
            self.in_flight -= 1

    def record_done(self, call: Call, result: str) -> bool:
        if call in self.owed:
            self.owed.remove(call)
            self.done.append(result)
            return True
        return False

    def record_failure(self, call: Call, error: str) -> None:
        self.failed.append(call.op_id)

    async def settle(self, group: str) -> None:
        return None

    async def before_pass(self) -> None:
        return None

    async def after_pass(self) -> None:
        return None


@pytest.mark.parametrize("parallelism", [1, 4])
def test_calls_run_concurrently_within_the_bound(parallelism: int) -> None:
    calls = [Call(f"g{g}-c{c}", f"g{g}") for g in range(5) for c in range(3)]
    source = Source(calls)
    work: OwedWork[Call, str] = OwedWork("test", source, parallelism=parallelism)
    outcome = asyncio.run(work.run_pass())
    assert outcome.ok and outcome.done == 15
    assert sorted(source.done) == sorted(c.op_id for c in calls)
    assert source.owed == []
    assert source.peak == work.peak_in_flight
    if parallelism == 1:
        assert source.peak == 1
        assert source.performed == sorted(c.op_id for c in calls)  # group order kept
    else:
        assert 2 <= source.peak <= parallelism


def test_blocking_groups_keep_order_and_stop_at_a_failure() -> None:
    calls = [
        Call("a1", "a", blocking=True),
        Call("a2", "a", blocking=True, fails=True),
        Call("a3", "a", blocking=True),
        *(Call(f"b{i}", "b") for i in range(4)),
    ]
    source = Source(calls)
    work: OwedWork[Call, str] = OwedWork("test", source, parallelism=4)
    outcome = asyncio.run(work.run_pass())
    assert not outcome.ok and outcome.done == 5
    a_order = [op for op in source.performed if op.startswith("a")]
    assert a_order == ["a1", "a2"]  # a3 never ran after the failed blocking a2
    assert source.failed == ["a2"]
    assert [c.op_id for c in source.owed] == ["a2", "a3"]
    assert work.peak_in_flight >= 2  # b's calls overlapped with a's


def test_stages_of_a_blocking_group_run_together_in_order() -> None:
    # A filled table's posts run together, then its moves (issue 26 item 5): a stage starts
    # only once the one before is done, and a failed blocking call stops the later stages.
    def table(group: str, fail: bool) -> list[Call]:
        posts = [Call(f"{group}-post{i}", group, True, fail and i == 1, "post") for i in range(3)]
        moves = [Call(f"{group}-move{i}", group, True, False, "move") for i in range(6)]
        return [*posts, *moves, Call(f"{group}-last", group, True)]

    source = Source(table("a", False) + table("b", True))
    work: OwedWork[Call, str] = OwedWork("test", source, parallelism=8)
    outcome = asyncio.run(work.run_pass())
    assert not outcome.ok and outcome.done == 10 + 2
    a = [op for op in source.performed if op.startswith("a")]
    assert sorted(a[:3]) == [f"a-post{i}" for i in range(3)]
    assert sorted(a[3:9]) == [f"a-move{i}" for i in range(6)] and a[9] == "a-last"
    # b's posts all ran (one failed): none of its moves did.
    assert sorted(op for op in source.performed if op.startswith("b")) == [
        f"b-post{i}" for i in range(3)
    ]
    assert source.failed == ["b-post1"]
    # The 3 + 3 posts at once (one at a time per group before stages), then a's 6 moves,
    # which may overlap b's last bookkeeping; never more than the bound.
    assert 6 <= work.peak_in_flight <= 8

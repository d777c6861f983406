"""Owed gRPC work: calls a committed decision owes another service, retried until done.

A decision records the calls it owes in its own transaction (registration: the wallet ops
of a filled table or a withdrawn entry; payout: the credits of awarded prizes). After the
commit, :class:`OwedWork` carries them out: each call carries its own idempotency key, so
doing one twice (a crash after the other service answered but before the call was marked
done, two workers) has one effect. The service supplies an :class:`OwedWorkSource`:

- ``pending(group)``: the owed calls, of one group or (``None``) of all, in execution order;
- ``perform(call)``: the gRPC call itself;
- ``record_done(call, result)`` / ``record_failure(call, error)``: bookkeeping, each in its
  own transaction (``record_done`` returns False when another worker got there first);
- ``groups_waiting()``: groups with nothing owed that still need ``settle`` (e.g. a filled
  table whose ops are done but whose start is not yet recorded);
- ``settle(group)``: runs after a group's calls (e.g. start the tournament once paid);
- ``before_pass()`` / ``after_pass()``: the service's own sweeps around each pass.

Calls of one group run in order under a per-group lock; a failed ``blocking`` call stops the
rest of its group (order matters: a post before the moves out of the escrow), a
non-blocking failure does not. The background loop (:meth:`OwedWork.run`) makes a pass when
woken and at least every ``interval`` seconds, backing off while passes keep failing
(``electric_platform.retry.backoff_delay``: doubling up to ``max_interval``).

The sync callables run in worker threads (``asyncio.to_thread``), the async ones on the loop.

Parallelism (``parallelism=N``, default 1 = one call at a time, in group order): with N > 1
a pass runs its groups concurrently, and the calls of a group concurrently when none of
them is ``blocking``; at most N calls (``perform`` + its bookkeeping) are in flight at
once. A group with blocking calls runs in stages (:func:`stages`: consecutive calls that
name the same ``stage`` run together, e.g. a filled table's three buy-in posts, then its six
moves out of the escrow), and a failed blocking call stops the stages after its own. Payout
credits prizes this way (issue 16: crediting keeps up with finishing tournaments).

Causality: a call may carry ``correlation_id`` and ``causation_id`` (stored with the owed row:
the correlation id of the decision and the id of the event that owes the call). The runner
binds them (:func:`electric_eventlog.causality.caused_by`) around ``perform``,
``record_done``/``record_failure`` and ``settle``, so the gRPC call carries them in its
metadata, the callee's events record them and every log line shows them; each call logs
``owed_work.done`` (INFO) or ``owed_work.failed`` (WARNING).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import grpc
from electric_eventlog import causality

from electric_platform.log import get_logger
from electric_platform.retry import backoff_delay

log = get_logger("electric.platform.owed_work")


class OwedCall(Protocol):
    """What the runner needs to know of one owed call."""

    @property
    def op_id(self) -> str:
        """Stable id of the call (for logs)."""
        ...

    @property
    def group(self) -> str:
        """Calls of one group run in order, one group at a time."""
        ...

    @property
    def blocking(self) -> bool:
        """A failure stops the rest of the group."""
        ...


def call_ids(call: object) -> tuple[str, str]:
    """``(correlation_id, causation_id)`` of an owed call ("" where it has none)."""
    return str(getattr(call, "correlation_id", "") or ""), str(
        getattr(call, "causation_id", "") or ""
    )


C = TypeVar("C", bound=OwedCall)
R = TypeVar("R")


def stages(calls: Sequence[C]) -> list[list[C]]:
    """``calls`` cut into stages: consecutive calls with the same ``stage`` (an optional
    attribute) share one; a call without one is a stage of its own. The calls of a stage do
    not depend on each other and run together; a stage starts once the one before is done."""
    out: list[list[C]] = []
    last: object = None
    for call in calls:
        stage = getattr(call, "stage", None)
        if out and stage is not None and stage == last:
            out[-1].append(call)
        else:
            out.append([call])
        last = stage
    return out


class OwedWorkSource(Protocol[C, R]):
    """The service's side of owed work (module doc)."""

    def pending(self, group: str | None) -> Sequence[C]: ...

    def groups_waiting(self) -> Iterable[str]: ...

    async def perform(self, call: C) -> R: ...

    def record_done(self, call: C, result: R) -> bool: ...

    def record_failure(self, call: C, error: str) -> None: ...

    async def settle(self, group: str) -> None: ...

    async def before_pass(self) -> None: ...

    async def after_pass(self) -> None: ...


def describe_error(err: BaseException) -> str:
    """``CODE: details`` of a failed gRPC call; the text of anything else."""
    if isinstance(err, grpc.aio.AioRpcError):
        return f"{err.code().name}: {err.details()}"
    return f"{type(err).__name__}: {err}"


@dataclass(frozen=True)
class GroupOutcome:
    """What one run over a group did."""

    #: Calls this run marked done.
    done: int
    #: True when no call of the group failed.
    ok: bool


class OwedWork(Generic[C, R]):
    """Carries out a source's owed calls (module doc)."""

    def __init__(
        self,
        name: str,
        source: OwedWorkSource[C, R],
        *,
        interval: float = 1.0,
        max_interval: float = 5.0,
        retryable: tuple[type[BaseException], ...] = (grpc.aio.AioRpcError,),
        delay: Callable[[int], float] | None = None,
        parallelism: int = 1,
    ) -> None:
        if parallelism < 1:
            raise ValueError("parallelism must be >= 1")
        self.name = name
        self.parallelism = parallelism
        self._slots = asyncio.Semaphore(parallelism)
        #: Most calls seen in flight at once (for tests and benchmarks).
        self.peak_in_flight = 0
        self._in_flight = 0
        self.source = source
        self.interval = interval
        self.retryable = retryable
        self._delay = delay or (lambda n: backoff_delay(n, initial=interval, maximum=max_interval))
        #: Set to make the background loop pass now.
        self.wake = asyncio.Event()
        self._locks: dict[str, asyncio.Lock] = {}
        self._failed_passes = 0

    async def run_group(self, group: str) -> GroupOutcome:
        """Do the pending calls of ``group`` in order, then settle it."""
        lock = self._locks.setdefault(group, asyncio.Lock())
        done, ok = 0, True
        async with lock:
            settle_ids = ("", "")
            calls = await asyncio.to_thread(self.source.pending, group)
            for call in calls:
                ids = call_ids(call)
                settle_ids = ids if ids[0] else settle_ids
            if self.parallelism > 1 and not any(c.blocking for c in calls):
                results = await asyncio.gather(*(self._call(call, group) for call in calls))
                done = sum(1 for d, _ in results if d)
                ok = all(o for _, o in results)
            elif self.parallelism > 1:
                for stage in stages(calls):
                    results = await asyncio.gather(*(self._call(call, group) for call in stage))
                    done += sum(1 for d, _ in results if d)
                    failed = [call for call, (_, o) in zip(stage, results, strict=True) if not o]
                    ok = ok and not failed
                    if any(call.blocking for call in failed):
                        break  # keep the order: no later stage after a failed blocking call
            else:
                for call in calls:
                    did, call_ok = await self._call(call, group)
                    done += did
                    if not call_ok:
                        ok = False
                        if call.blocking:
                            break  # keep the order: nothing after a failed blocking call
            with causality.caused_by(*settle_ids):
                await self.source.settle(group)
        if len(self._locks) > 1000:  # forget the idle locks of finished groups
            for key in [k for k, v in self._locks.items() if not v.locked()]:
                self._locks.pop(key, None)
        return GroupOutcome(done, ok)

    async def _call(self, call: C, group: str) -> tuple[bool, bool]:
        """Perform one call and record it: (marked done by this run, succeeded)."""
        with causality.caused_by(*call_ids(call)):
            async with self._slots:
                self._in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
                try:
                    try:
                        result = await self.source.perform(call)
                    except self.retryable as err:
                        error = describe_error(err)
                        log.warning(
                            "owed_work.failed",
                            work=self.name,
                            op_id=call.op_id,
                            group=group,
                            error=error,
                        )
                        await asyncio.to_thread(self.source.record_failure, call, error)
                        return False, False
                    if await asyncio.to_thread(self.source.record_done, call, result):
                        log.info("owed_work.done", work=self.name, op_id=call.op_id, group=group)
                        return True, True
                    return False, True
                finally:
                    self._in_flight -= 1

    async def run_pass(self) -> GroupOutcome:
        """One pass over every group with owed calls or waiting to settle."""
        await self.source.before_pass()
        groups = {c.group for c in await asyncio.to_thread(self.source.pending, None)}
        groups.update(await asyncio.to_thread(lambda: list(self.source.groups_waiting())))
        if self.parallelism > 1:
            outcomes = await asyncio.gather(*(self.run_group(g) for g in sorted(groups)))
        else:
            outcomes = [await self.run_group(g) for g in sorted(groups)]
        done = sum(o.done for o in outcomes)
        ok = all(o.ok for o in outcomes)
        await self.source.after_pass()
        return GroupOutcome(done, ok)

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: a pass whenever woken, else after the backoff delay (module doc)."""
        while not stop.is_set():
            self.wake.clear()
            try:
                outcome = await self.run_pass()
                ok = outcome.ok
            except self.retryable as err:
                ok = False
                log.warning("owed_work.pass_failed", work=self.name, error=describe_error(err))
            self._failed_passes = 0 if ok else self._failed_passes + 1
            waiters = [asyncio.ensure_future(self.wake.wait()), asyncio.ensure_future(stop.wait())]
            try:
                await asyncio.wait(
                    waiters,
                    timeout=self._delay(self._failed_passes),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                for w in waiters:
                    w.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await w

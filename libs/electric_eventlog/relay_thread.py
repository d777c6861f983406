"""An outbox relay on a thread of its own, with its own event loop and bus (issue 16).

In a service process the relay shared the event loop with the gRPC server: every step of a
pass (the fetch's result, the producer's send, its acknowledgement, the mark) waited for
its turn behind the loop's ready callbacks. With the table's loop 50-60 % busy at 50
tables, a committed event reached Kafka 150-250 ms later at p50 and 0.5-2.2 s at p99 (the
"on Kafka" part of ``python -m bench platform``'s Finished → credited), most of the prize's
lag. On a loop of its own the relay waits only for the GIL. The producer of that loop is
its own (an aiokafka producer belongs to the loop it was started in); consumers keep the
service's bus.

The in-process bus stays on the service's loop: it is a per-loop object (its consumers
wait on the same asyncio events).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable

from .bus import EventBus
from .outbox_relay import OutboxRelay


async def run_on_own_loop(
    relay: OutboxRelay, make_bus: Callable[[], EventBus], stop: asyncio.Event
) -> None:
    """``relay.run`` on a new thread and event loop, publishing through ``make_bus()``
    (created, started and stopped on that loop). ``stop`` ends it after the current pass,
    like ``relay.run(stop)``; cancelling this task cancels the relay's task there, as it
    cancelled ``relay.run`` on the service's loop (unmarked rows are sent again later),
    also after a ``stop`` whose pass hangs. Either way this returns only after the thread
    ended. An exception of the relay's loop is raised here (a host task with ``restart``
    runs it again)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    halted = threading.Event()  # this task asks the relay to stop after its pass
    killed = threading.Event()  # this task was cancelled: cancel the relay's task

    def settle(error: BaseException | None) -> None:
        if ended.done():
            return
        if error is None:
            ended.set_result(None)
        else:
            ended.set_exception(error)

    async def relay_loop() -> None:
        own_stop = asyncio.Event()
        bus = make_bus()
        this = asyncio.current_task()
        running = True

        async def follow_requests() -> None:
            await asyncio.to_thread(halted.wait)
            own_stop.set()
            await asyncio.to_thread(killed.wait)
            if running and this is not None:
                this.cancel()

        follower = asyncio.create_task(follow_requests())
        shared = relay.bus
        try:
            await bus.start()
            relay.bus = bus
            await relay.run(own_stop)
        finally:
            running = False
            relay.bus = shared
            halted.set()  # ends the follower's waits, so the loop can close
            killed.set()
            try:
                await asyncio.shield(follower)
            finally:
                await bus.stop()

    context = contextvars.copy_context()  # the service's log fields and causal ids

    def thread_main() -> None:
        error: BaseException | None = None
        try:
            context.run(asyncio.run, relay_loop())
        except asyncio.CancelledError:
            pass  # cancelled at this task's request: it raises its own CancelledError
        except BaseException as exc:  # reported to the awaiting task, which raises it
            error = exc
        with contextlib.suppress(RuntimeError):  # the service's loop closed: nobody waits
            loop.call_soon_threadsafe(settle, error)

    thread = threading.Thread(target=thread_main, name="outbox-relay-loop", daemon=True)
    thread.start()
    stopping: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
    either: set[asyncio.Future[object]] = {stopping, ended}  # type: ignore[arg-type]
    try:
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            halted.set()
        await asyncio.shield(ended)
    except asyncio.CancelledError:
        killed.set()
        with contextlib.suppress(asyncio.CancelledError):  # a second cancel: stop waiting
            await asyncio.shield(ended)
        raise
    finally:
        # ``ended`` is settled as the thread's last act: this join returns at once.
        thread.join(timeout=5.0)

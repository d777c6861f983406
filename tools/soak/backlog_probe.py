"""Does a slow consumer's memory grow with its backlog? (docs/chaos.md, soak finding)

Consumes a topic that already holds many messages through ``KafkaBus.consume`` (the
services' consumer loop) with a handler that takes ``--delay`` seconds per message, in a new
consumer group (so the whole topic is backlog), and prints this process's RSS every 5 s.
A flat RSS means aiokafka's prefetch is bounded whatever the lag.

    .venv/bin/python -m tools.soak.backlog_probe --namespace e2e-76b0912cd092 \\
        --topic electric.table.events --seconds 50
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import uuid

from electric_eventlog.bus import ReceivedMessage
from electric_eventlog.kafka import KafkaBus

from tools.soak.probe import rss_mb


async def probe(args: argparse.Namespace) -> None:
    import os

    bus = KafkaBus(args.kafka, client_id="backlog-probe", namespace=args.namespace)
    stop = asyncio.Event()
    consumed = 0

    async def slow(_: ReceivedMessage) -> None:
        nonlocal consumed
        consumed += 1
        await asyncio.sleep(args.delay)

    group = f"backlog-probe-{uuid.uuid4().hex[:6]}"
    task = asyncio.create_task(bus.consume([args.topic], group_id=group, handler=slow, stop=stop))
    began, base = time.monotonic(), rss_mb(os.getpid())
    print(f"RSS at start {base:.1f} MiB")
    while time.monotonic() - began < args.seconds and not task.done():
        await asyncio.sleep(5)
        now = rss_mb(os.getpid())
        took = time.monotonic() - began
        print(f"{took:5.0f}s consumed {consumed:7d} RSS {now:.1f} MiB (+{now - base:.1f})")
    stop.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(task, 15)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tools.soak.backlog_probe", description=__doc__)
    p.add_argument("--kafka", default="127.0.0.1:9092")
    p.add_argument("--namespace", default="")
    p.add_argument("--topic", default="electric.table.events")
    p.add_argument("--delay", type=float, default=0.002, help="seconds per message")
    p.add_argument("--seconds", type=float, default=50)
    asyncio.run(probe(p.parse_args()))


if __name__ == "__main__":
    main()

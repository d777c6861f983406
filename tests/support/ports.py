"""Free loopback ports for tests that start servers of their own (on consecutive ports).

Ports are chosen below Linux's ephemeral range (32768-60999 by default), which the kernel
hands to every outgoing connection (Kafka and PostgreSQL clients open many): a port found
free there and bound a moment later by a child process was taken in between more than once
in CI ("Address already in use"; a service instance that never started)."""

from __future__ import annotations

import random
import socket


def free_port_run(count: int, low: int, high: int) -> int:
    """A base port in ``low..high`` with ``count`` consecutive free ports from it."""
    for _ in range(200):
        base = random.randint(low, high)
        try:
            for p in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return base
    raise RuntimeError("no free port range")


#: Where servers started by tests listen: below the ephemeral range (module doc).
LOW, HIGH = 20_000, 32_000


def free_port() -> int:
    """A free loopback port below the ephemeral range."""
    return free_port_run(1, LOW, HIGH)

"""Free loopback ports for tests that start servers of their own on consecutive ports."""

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

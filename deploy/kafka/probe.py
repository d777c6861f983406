"""Readiness probe for a Kafka broker, standard library only (used by deploy/kafka.sh).

Sends a Metadata v0 request over the wire protocol and succeeds when the broker answers with at
least one live broker. Exit status 0 = ready; 1 = not ready (reason on stderr).

    python deploy/kafka/probe.py 127.0.0.1:9092 [timeout_seconds]
"""

from __future__ import annotations

import socket
import struct
import sys

METADATA_API_KEY = 3
CORRELATION_ID = 0x0E1E


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf.extend(chunk)
    return bytes(buf)


def metadata_brokers(host: str, port: int, timeout: float) -> list[tuple[int, str, int]]:
    """Return (node_id, host, port) of the brokers a Metadata v0 response lists."""
    client_id = b"electric-probe"
    header = struct.pack(">hhih", METADATA_API_KEY, 0, CORRELATION_ID, len(client_id)) + client_id
    body = struct.pack(">i", 0)  # v0: an empty topic list means "all topics"
    request = header + body
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        payload = _recv_exact(sock, size)
    (correlation_id, n_brokers) = struct.unpack_from(">ii", payload, 0)
    if correlation_id != CORRELATION_ID:
        raise ValueError(f"unexpected correlation id {correlation_id}")
    pos = 8
    brokers = []
    for _ in range(n_brokers):
        (node_id, host_len) = struct.unpack_from(">ih", payload, pos)
        pos += 6
        broker_host = payload[pos : pos + host_len].decode()
        pos += host_len
        (broker_port,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        brokers.append((node_id, broker_host, broker_port))
    return brokers


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "127.0.0.1:9092"
    timeout = float(argv[2]) if len(argv) > 2 else 2.0
    host, _, port = target.rpartition(":")
    try:
        brokers = metadata_brokers(host, int(port), timeout)
    except (OSError, ValueError, struct.error) as exc:
        print(f"not ready: {exc}", file=sys.stderr)
        return 1
    if not brokers:
        print("not ready: metadata lists no brokers", file=sys.stderr)
        return 1
    print(" ".join(f"{node}@{h}:{p}" for node, h, p in brokers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

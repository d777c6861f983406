"""A local Alertmanager webhook receiver: appends every alert it is sent to a JSON-lines file.

Alertmanager's ``webhook_configs`` POST a JSON document per notification (``version`` "4",
``receiver``, ``status``, ``groupKey``, ``alerts``: a list of alerts, each with ``status``,
``labels``, ``annotations``, ``startsAt``, ``endsAt``, ``fingerprint``). This server writes
one line per alert: the alert object plus the notification's ``receiver`` and ``groupKey``
and the time it arrived (``receivedAt``). deploy/observability.sh starts it for local use,
the operations tests read the file to see an alert arrive. Standard library only.

    python3 deploy/alertmanager/webhook_receiver.py --port 9099 --out var/observability/alerts.jsonl

Endpoints: ``POST /alerts`` (any path is accepted, so a receiver URL typo still lands),
``GET /-/healthy`` (200 "ok"), ``GET /alerts`` (the file's lines as a JSON list).
Listens on 127.0.0.1 unless ``--host`` says otherwise (docker-compose shares the network
namespace of the alertmanager container, so loopback works there too).

To page a human instead, point the receiver of deploy/alertmanager/alertmanager.yml at the
real system (see deploy/README.md, "Alerts"); this file stays the local and test sink.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: Refuse bodies above this: Alertmanager batches alerts per group, a few KiB each.
MAX_BODY = 8 * 1024 * 1024


def alert_lines(payload: dict[str, Any], received_at: float) -> list[str]:
    """One JSON line per alert of an Alertmanager webhook payload."""
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise ValueError("payload has no 'alerts' list")
    lines = []
    for alert in alerts:
        if not isinstance(alert, dict):
            raise ValueError("an alert is not an object")
        record = dict(alert)
        record["receiver"] = payload.get("receiver", "")
        record["groupKey"] = payload.get("groupKey", "")
        record["receivedAt"] = received_at
        lines.append(json.dumps(record, sort_keys=True))
    return lines


class AlertSink:
    """Appends lines to the output file; one writer at a time."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._lock = threading.Lock()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.touch()

    def append(self, lines: list[str]) -> None:
        with self._lock, self.out.open("a", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
            f.flush()

    def read(self) -> list[Any]:
        with self._lock:
            text = self.out.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def make_handler(sink: AlertSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "electric-webhook-receiver/1"

        def _reply(self, code: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.startswith("/-/healthy") or self.path.startswith("/-/ready"):
                self._reply(200, b"ok\n")
            elif self.path.startswith("/alerts"):
                body = json.dumps(sink.read()).encode()
                self._reply(200, body, "application/json")
            else:
                self._reply(404, b"not found\n")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self._reply(400, b"missing or oversized body\n")
                return
            try:
                payload = json.loads(self.rfile.read(length))
                if not isinstance(payload, dict):
                    raise ValueError("payload is not an object")
                lines = alert_lines(payload, time.time())
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                self._reply(400, f"bad payload: {exc}\n".encode())
                return
            sink.append(lines)
            self._reply(200, b"ok\n")

        def log_message(self, format: str, *args: Any) -> None:
            # One short line per request on stderr (the script's log file).
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    return Handler


def serve(host: str, port: int, out: Path) -> ThreadingHTTPServer:
    """A started-on-demand server (``serve_forever`` is the caller's)."""
    return ThreadingHTTPServer((host, port), make_handler(AlertSink(out)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Alertmanager webhook receiver (JSON lines)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address; 127.0.0.1")
    parser.add_argument("--port", type=int, default=9099, help="listen port; 9099")
    parser.add_argument("--out", type=Path, default=Path("alerts.jsonl"), help="output file")
    args = parser.parse_args(argv)
    server = serve(args.host, args.port, args.out)
    # SIGTERM from deploy/observability.sh down: leave serve_forever cleanly.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    sys.stderr.write(f"webhook receiver on http://{args.host}:{args.port}/alerts -> {args.out}\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

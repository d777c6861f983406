"""Serves the Prometheus text files of a directory on ``/metrics`` (the textfile collector).

Jobs that run now and then (``deploy/audit/verify_metrics.py`` after each
``electric-audit verify``) cannot be scraped while they run; they write their result as a
``*.prom`` file in the Prometheus text format, atomically (write a temporary file, rename).
This server concatenates the directory's ``*.prom`` files on every scrape and adds
``electric_textfile_mtime_seconds{file}`` per file. It is the same contract as node_exporter's
``--collector.textfile.directory`` (which can replace it where node_exporter runs);
deploy/observability.sh starts it on 127.0.0.1:9110 over ``var/observability/textfile``.
Standard library only.

    python3 deploy/observability/textfile_exporter.py --dir var/observability/textfile --port 9110
"""

from __future__ import annotations

import argparse
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render(directory: Path) -> str:
    """The exposition text: every ``*.prom`` file (sorted), then their modification times.

    A file whose lines do not end with a newline gets one; unreadable or vanished files
    are skipped (a writer may be renaming one in)."""
    parts: list[str] = []
    mtimes: list[tuple[str, float]] = []
    for path in sorted(directory.glob("*.prom")):
        try:
            text = path.read_text("utf-8")
            mtime = path.stat().st_mtime
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text if text.endswith("\n") or not text else text + "\n")
        mtimes.append((path.name, mtime))
    parts.append(
        "# HELP electric_textfile_mtime_seconds Modification time of a served text file.\n"
        "# TYPE electric_textfile_mtime_seconds gauge\n"
    )
    for name, mtime in mtimes:
        parts.append(f'electric_textfile_mtime_seconds{{file="{name}"}} {mtime:.3f}\n')
    return "".join(parts)


def make_handler(directory: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/-/healthy":
                self._send(200, "ok\n", "text/plain")
            elif self.path.split("?")[0] == "/metrics":
                self._send(200, render(directory), CONTENT_TYPE)
            else:
                self._send(404, "not found\n", "text/plain")

        def _send(self, status: int, body: str, content_type: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path, help="directory of *.prom files")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9110)
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.dir))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

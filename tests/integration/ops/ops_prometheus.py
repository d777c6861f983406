"""What the live operations tests (test_ops_platform, test_ops_stack) share to reach the
processes they start: free loopback ports, waiting on a condition, and Prometheus's HTTP API."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from sqlalchemy.engine import make_url

from tests.support.ports import free_port

T = TypeVar("T")


def observability_ports() -> dict[str, str]:
    """A free loopback port for each process deploy/observability.sh starts (its variables)."""
    names = ("PROMETHEUS", "ALERTMANAGER", "PG_EXPORTER", "KAFKA_LAG", "WEBHOOK", "TEXTFILE")
    return {f"OBS_{name}_PORT": str(free_port()) for name in names}


def exporter_dsn(postgres_url: str, database: str) -> str:
    """The PostgreSQL exporter's DSN (``OBS_PG_DSN``) for ``database`` on the server of
    ``postgres_url`` (a SQLAlchemy URL)."""
    u = make_url(postgres_url)
    return (
        f"postgresql://{u.username}:{u.password}@{u.host}:{u.port or 5432}/{database}"
        "?sslmode=disable"
    )


def wait_for(what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """The first value of ``probe`` that is not None, polled every second; an OSError (not
    listening yet) counts as no value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:  # not listening yet
            last = exc
        if last is not None and not isinstance(last, Exception):
            found: T = last
            return found
        time.sleep(1)
    raise AssertionError(f"{what} not seen within {timeout:.0f} s (last: {last!r})")


class PrometheusQueries:
    """Instant queries through Prometheus's API at ``self.prometheus`` (its base URL, a field
    of the class this is mixed into)."""

    prometheus: str
    #: Seconds one API call may take.
    api_timeout: ClassVar[float] = 20

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.prometheus}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=self.api_timeout) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

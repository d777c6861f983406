"""The wallet's ledger (``electric_wallet.domain``) is pure: importing it loads no I/O
framework. Checked in a fresh interpreter, so implicit imports (a parent package's
``__init__``) count too, which a static import graph does not see."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "grpc",
    "sqlalchemy",
    "psycopg",
    "aiokafka",
    "structlog",
    "prometheus_client",
    "electric_platform",
    "electric_eventlog",
)

PROBE = """
import json, sys
import electric_wallet.domain
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_importing_the_ledger_loads_no_io_framework() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    assert "electric_wallet" in loaded  # the probe did import it
    assert sorted(loaded & set(FORBIDDEN)) == []

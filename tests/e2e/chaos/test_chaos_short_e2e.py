"""Issue 18, the chaos run's short seeded version for the default suite.

The same harness as ``make chaos`` (tests/chaos): the four services as processes, tournament
and casino bots, one fault of each kind below from a fixed seed, then the drain and every
invariant from independent data (topics, wallet answers, ``electric-audit verify``).

The run starts its OWN PostgreSQL cluster (it is restarted and paused). The Kafka broker
restart is left to ``make chaos``: starting a private broker and restarting it costs two
JVM starts (about a minute each on a loaded 2-core machine), beyond this test's budget; this
run uses the shared broker with its own namespace and never stops it. So are the faults of
the replicated infrastructure (``make chaos REPLICATED=1``: a lost broker, a failover): the
3-broker cluster and the failover are tested on their own in tests/integration/infra/. The
network partition of a table instance (issue 28) is one of the kinds here: it needs no more
than the single broker and database.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.chaos.run import ChaosConfig, run, table

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SEED = 18
KINDS = ("kill9", "pause", "pg_restart", "slow_disk", "disconnect", "partition")


def test_short_chaos_run_keeps_every_invariant(kafka_bootstrap: str, tmp_path: Path) -> None:
    cfg = ChaosConfig(
        seed=SEED,
        tournaments=1,
        rounds=20,
        faults=len(KINDS),
        duration=240.0,
        kinds=KINDS,
        gap=3.0,
        tournament_bots=9,
        thb_bots=3,
        uth_bots=3,
        drain_budget=180.0,
        out=tmp_path,
        shared_kafka=kafka_bootstrap,
    )
    report = run(cfg)
    summary = table(report)
    print(f"\n{summary}")
    assert Counter(f["kind"] for f in report.faults) == dict.fromkeys(KINDS, 1), summary
    assert all(f["ok"] for f in report.faults), summary
    assert report.passed, summary
    names = {c["name"] for c in report.checks}
    assert "electric-audit verify (stores + topics)" in names, summary
    assert len(names) >= 8, summary

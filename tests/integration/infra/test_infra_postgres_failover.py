"""PostgreSQL with a synchronous standby and automatic failover (issue 28 item 2):
``deploy/postgres-ha.sh`` (pg_auto_failover from Debian's packages: a monitor and three data
nodes, one synchronous standby required) on ports of its own. The platform's event store
connects through the multi-host URL the script prints (libpq picks the node that accepts
writes) and appends one event at a time; each append that returned is *acknowledged*. The
primary is killed (keeper and server, as a lost machine); appends fail meanwhile and are
retried as the services retry (the error is UNAVAILABLE at their edge); the monitor promotes
a standby and the appends go on there. Every acknowledged event is on the new primary (a
commit is acknowledged only once a standby holds it); at most the appends in doubt at the
kill are there unacknowledged. The killed node is restarted and rejoins as a standby.
Then the new primary is killed too and comes back unable to start its PostgreSQL while its
keeper runs (the first stall of docs/chaos.md §7): the healer rebuilds it, and it rejoins."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_eventlog import ANY, EventStore, create_engine, migrate
from electric_eventlog.testing import event
from electric_platform.errors import database_unavailable
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from tests.support.ports import HIGH, LOW, free_port_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
STREAM = "failover-probe"


@pytest.fixture
def formation() -> Iterator[tuple[str, dict[str, str]]]:
    # Under /var/tmp: the postgres OS user must reach it (pytest's tmp is root's alone).
    directory = Path("/var/tmp/electric-poker") / f"pgha-test-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    env = {
        **os.environ,
        "PGHA_PORT": str(free_port_run(4, LOW, HIGH)),
        "ELECTRIC_PGHA_DIR": str(directory),
        "PGHA_HEAL_AFTER": "10",  # the healer's wait (60 s by default): the second kill below
    }

    def ha(*args: str) -> str:
        return subprocess.run(
            ["bash", str(ROOT / "deploy/postgres-ha.sh"), *args],
            env=env,
            check=True,
            timeout=600,
            capture_output=True,
            text=True,
        ).stdout.strip()

    try:
        ha("up")
        yield ha("url"), env
    finally:
        subprocess.run(["bash", str(ROOT / "deploy/postgres-ha.sh"), "down"], env=env, timeout=300)
        shutil.rmtree(directory, ignore_errors=True)


def _ha(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        ["bash", str(ROOT / "deploy/postgres-ha.sh"), *args],
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _settled_primary(env: dict[str, str], timeout: float = 120.0) -> str:
    """The primary once the monitor's assigned state and the node's own agree. Writes can be
    acknowledged on the promoted node a moment before that: ``postgres-ha.sh primary``
    asked once in between found no settled primary and failed a CI run (7 Dec)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _ha(env, "primary")
        except subprocess.CalledProcessError:
            assert time.monotonic() < deadline, _ha(env, "status")
            time.sleep(1)


def _source_offered_to_a_fast_forward_candidate(
    env: dict[str, str],
    reports: dict[str, tuple[int, str, str]],
    observed: dict[str, int] | None = None,
) -> str:
    """A failover in its fast_forward step, as the monitor's table holds it: each node at
    ``reports`` (name: timeline, position, reported state), node1 the candidate assigned
    fast_forward, and the healer's ``observed`` control file timelines (none by default).
    Written in a transaction that is rolled back, so the live formation never sees it. The
    answer of the function the candidate's keeper calls: "node|target", or ""."""
    seen = ", ".join(f"('default', '{name}', {tli})" for name, tli in (observed or {}).items())
    record = "DELETE FROM electric_heal.node_timeline;" + (
        f" INSERT INTO electric_heal.node_timeline (formationid, nodename, tli) VALUES {seen};"
        if seen
        else ""
    )
    tlis = " ".join(f"WHEN '{name}' THEN {tli}" for name, (tli, _, _) in reports.items())
    lsns = " ".join(f"WHEN '{name}' THEN '{at}'::pg_lsn" for name, (_, at, _) in reports.items())
    states = " ".join(
        f"WHEN '{name}' THEN '{st}'::pgautofailover.replication_state"
        for name, (_, _, st) in reports.items()
    )
    crafted = f"""
BEGIN;
UPDATE pgautofailover.node SET reportedstate = CASE nodename {states} END,
       goalstate = CASE nodename {states} END,
       reportedtli = CASE nodename {tlis} END, reportedlsn = CASE nodename {lsns} END
 WHERE formationid = 'default' AND groupid = 0;
UPDATE pgautofailover.node SET goalstate = 'fast_forward' WHERE nodename = 'node1';
{record}
SET LOCAL ROLE autoctl_node; -- as the keeper calls it: the grants are part of the test
SELECT node_name || '|' || node_lsn FROM pgautofailover.get_most_advanced_standby('default', 0);
ROLLBACK;
"""
    return _monitor_sql(env, crafted)


def _monitor_sql(env: dict[str, str], sql: str) -> str:
    owner = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    psql = [*owner, "psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"]
    psql += ["-p", env["PGHA_PORT"], "-d", "pg_auto_failover"]
    done = subprocess.run(
        psql, input=sql, cwd="/", check=True, timeout=60, capture_output=True, text=True
    )
    return done.stdout.strip()


def _check_the_fast_forward_source(env: dict[str, str]) -> None:
    """What the candidate of a failover in its fast_forward step is told (docs/chaos.md §7,
    the second stall), on the live monitor, in rolled-back transactions."""
    r = "report_lsn"

    def ask(
        n1: tuple[int, str, str],
        n2: tuple[int, str, str],
        n3: tuple[int, str, str],
        observed: dict[str, int] | None = None,
    ) -> str:
        return _source_offered_to_a_fast_forward_candidate(
            env, {"node1": n1, "node2": n2, "node3": n3}, observed
        )

    # The candidate holds the most WAL (an old primary back from a restart). Debian's
    # answered node1|0/9000000: itself, streaming from its own port for ever. The first
    # replacement answered node2|0/8000000, and the keeper threw away its WAL past
    # 0/8000000 at the promotion (the hour of 7 Dec lost nine published events so). Now its
    # own position: nothing is fetched and nothing is thrown away.
    assert ask((2, "0/9000000", r), (2, "0/8000000", r), (2, "0/7000000", r)) == "node2|0/9000000"
    # The candidate is behind a peer of its timeline: that peer, to its position.
    assert ask((2, "0/7000000", r), (2, "0/9000000", r), (2, "0/8000000", r)) == "node2|0/9000000"
    # The candidate is an old primary on an older timeline whose raw position looks ahead:
    # nothing (it waits; the healer rebuilds it). Debian's answered node1.
    assert ask((2, "0/9000000", r), (3, "0/8000000", r), (3, "0/7000000", r)) == ""
    # The same report, but the healer saw the candidate's control file on timeline 3: its
    # keeper's timeline was one read long before (the hour of seed 38). Its own position.
    on_3 = {"node1": 3, "node2": 3, "node3": 3}
    assert ask((2, "0/9000000", r), (3, "0/8000000", r), (3, "0/7000000", r), on_3) == (
        "node2|0/9000000"
    )
    # An old primary's control file keeps its old timeline: nothing, as above.
    on_2 = {"node1": 2, "node2": 3, "node3": 3}
    assert ask((2, "0/9000000", r), (3, "0/8000000", r), (3, "0/7000000", r), on_2) == ""
    # The monitor's own ranking reads the stored timeline: a keeper's stale report (5)
    # never lowers it below the node's observed control file (7); a later report (9) wins.
    floor = _monitor_sql(
        env,
        """BEGIN;
DELETE FROM electric_heal.node_timeline;
INSERT INTO electric_heal.node_timeline (formationid, nodename, tli) VALUES ('default', 'node1', 7);
UPDATE pgautofailover.node SET reportedtli = 5 WHERE nodename IN ('node1', 'node2');
SELECT string_agg(nodename || '=' || reportedtli, ' ' ORDER BY nodename)
  FROM pgautofailover.node WHERE nodename IN ('node1', 'node2');
UPDATE pgautofailover.node SET reportedtli = 9 WHERE nodename = 'node1';
SELECT reportedtli FROM pgautofailover.node WHERE nodename = 'node1';
ROLLBACK;""",
    )
    assert floor.split("\n") == ["node1=7 node2=5", "9"], floor
    # No peer reported: the candidate itself, to its own position.
    sec = "secondary"
    assert ask((2, "0/9000000", r), (2, "0/8000000", sec), (2, "0/7000000", sec)) == (
        "node1|0/9000000"
    )


def test_no_acknowledged_commit_is_lost_when_the_primary_dies(
    formation: tuple[str, dict[str, str]],
) -> None:
    url, env = formation
    _check_the_fast_forward_source(env)
    engine = create_engine(url)
    migrate(engine)
    store = EventStore(engine, producer="failover")
    acknowledged: list[str] = []
    in_doubt: list[str] = []
    retries = 0

    def append(value: str) -> None:
        nonlocal retries
        deadline = time.monotonic() + 120
        while True:
            try:
                store.append_in_new_tx(STREAM, ANY, [event(value)])
                acknowledged.append(value)
                return
            except DBAPIError as exc:
                # What the services answer UNAVAILABLE for, and their clients retry.
                assert database_unavailable(exc), exc
                in_doubt.append(value)  # may or may not have committed: a new id next time
                retries += 1
                assert time.monotonic() < deadline, "no primary came back within 120 s"
                time.sleep(0.2)
                value = f"{value}-retry{retries}"

    for n in range(30):
        append(f"before-{n}")
    old = _ha(env, "primary")
    killed_at = time.monotonic()
    _ha(env, "kill", old)
    for n in range(30):
        append(f"after-{n}")
    writable_after = time.monotonic() - killed_at
    new = _settled_primary(env)
    assert new != old

    _check_stored(engine, store, acknowledged, in_doubt)
    _check_timelines_reported_true(env)
    print(
        f"\nprimary node {old} killed: writes acknowledged again {writable_after:.1f} s later on"
        f" node {new}; {len(acknowledged)} acknowledged, all stored; {retries} retries"
    )

    _ha(env, "start", old)  # the old primary rejoins as a standby
    _wait_secondary(env, old)

    # Again, writing all along, but the killed primary's PostgreSQL cannot start when its
    # keeper comes back (as an old primary that was not rewound): the healer rebuilds it once
    # it has been behind for PGHA_HEAL_AFTER s while a live node is on a later timeline.
    for n in range(10):
        append(f"second-before-{n}")
    second = _settled_primary(env)
    _ha(env, "kill", second)
    for n in range(10):
        append(f"second-after-{n}")
    third = _settled_primary(env)
    assert third != second
    directory = Path(env["ELECTRIC_PGHA_DIR"])
    with (directory / f"node{second}" / "data" / "postgresql.conf").open("a") as conf:
        conf.write("\nnot_a_setting_of_postgresql = 1\n")
    _ha(env, "start", second)
    _wait_secondary(env, second, timeout=240)
    for n in range(10):
        append(f"second-healed-{n}")
    _check_stored(engine, store, acknowledged, in_doubt)
    engine.dispose()
    rebuilt = [x for x in (directory / "heal.log").read_text().splitlines() if "rebuilt node" in x]
    assert [x.split()[-1] for x in rebuilt] == [second], rebuilt  # that node, and only once
    assert list((directory / f"node{second}").glob("diverged-*/PG_VERSION"))  # kept aside
    # Every node's lock is free (no keeper, started by `up`, `start` or the rebuild, kept
    # it), and while another process holds one a `start` (the harness's supervisor, `up`)
    # leaves that node alone rather than race a rebuild (postgres-ha.sh node_lock)
    for n in (1, 2, 3):
        with (directory / f"node{n}" / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError when held
            if str(n) == second:
                assert "not started" in _ha(env, "start", second)
    print(f"node {second}, unable to start, rebuilt by the healer; node {third} primary")


def _check_stored(
    engine: Engine, store: EventStore, acknowledged: list[str], in_doubt: list[str]
) -> None:
    with engine.connect() as conn:
        stored = [store.decode(e).value for e in store.read_stream(conn, STREAM)]  # type: ignore[attr-defined]
    assert set(acknowledged) <= set(stored), sorted(set(acknowledged) - set(stored))
    assert len(stored) == len(set(stored))  # nothing twice
    assert set(stored) - set(acknowledged) <= set(in_doubt)


def _check_timelines_reported_true(env: dict[str, str], timeout: float = 180) -> None:
    """After a failover every running node's last checkpoint reaches the timeline it is on
    (the healer asks for one), the monitor holds that timeline for it, and so does the
    healer's record of its control file (what the fast-forward guard reads). Without the
    checkpoints a standby's stays the old one until its next restartpoint (5 min), and the
    primary's, under load, until its first spread checkpoint ends (docs/chaos.md §7)."""
    deadline = time.monotonic() + timeout
    while True:
        # N, control file's timeline, in recovery, last checkpoint's, the one it is on
        lines = _ha(env, "timelines").splitlines()
        running = [r for r in (x.split() for x in lines) if r[2] != "-"]
        reported = {
            str(n["nodename"]).removeprefix("node"): str(n["reported_tli"])
            for n in json.loads(_ha(env, "state"))
        }
        recorded = dict(
            line.split("|")
            for line in _monitor_sql(
                env, "SELECT substr(nodename, 5), tli FROM electric_heal.node_timeline"
            ).splitlines()
        )
        stale = [
            r
            for r in running
            if not r[1] == r[3] == r[4] == reported.get(r[0]) == recorded.get(r[0])
        ]
        if len(running) == 2 and not stale:
            break
        assert time.monotonic() < deadline, (running, reported, recorded, _ha(env, "status"))
        time.sleep(1)
    log = (Path(env["ELECTRIC_PGHA_DIR"]) / "heal.log").read_text()
    assert "recording timelines" not in log, log


def _primary_now(env: dict[str, str]) -> str:
    try:
        return _ha(env, "primary")
    except subprocess.CalledProcessError:
        return ""


def _wait_secondary(env: dict[str, str], node: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:  # the node's line (none while a rebuild has it dropped from the monitor)
        lines = [x for x in _ha(env, "status").splitlines() if x.startswith(f"node{node} ")]
        if lines and "secondary" in lines[0]:
            return
        assert time.monotonic() < deadline, _ha(env, "status")
        time.sleep(1)

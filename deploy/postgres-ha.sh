#!/usr/bin/env bash
# PostgreSQL with synchronous standbys and automatic failover, locally, no Docker:
# pg_auto_failover (Debian's postgresql-15-auto-failover and pg-auto-failover-cli) with one
# monitor and three data nodes on 127.0.0.1.
#
#   bash deploy/postgres-ha.sh up            install the packages when missing, create the
#                                            monitor and the nodes (once), start them, wait for
#                                            one primary and two secondaries, require one
#                                            synchronous standby (number-sync-standbys 1),
#                                            ensure role electric/electric and database electric
#   bash deploy/postgres-ha.sh install       install the packages when missing (nothing else)
#   bash deploy/postgres-ha.sh down          stop every node and the monitor
#   bash deploy/postgres-ha.sh status        the formation's state (pg_autoctl show state)
#   bash deploy/postgres-ha.sh url           the services' DATABASE_URL: every node, the
#                                            primary chosen by libpq (target_session_attrs)
#   bash deploy/postgres-ha.sh primary       the number (1-3) of the current primary
#   bash deploy/postgres-ha.sh kill N        SIGKILL node N, keeper and server alike (a lost
#                                            machine); the monitor fails over to a standby
#   bash deploy/postgres-ha.sh start N       restart node N's keeper: it rejoins as a standby
#   bash deploy/postgres-ha.sh rebuild N     node N dropped from the monitor and copied anew
#                                            from the primary (one that cannot rejoin; below)
#   bash deploy/postgres-ha.sh wait [S]      until one primary and two secondaries (S s: 120)
#   bash deploy/postgres-ha.sh state         the formation's state as JSON
#   bash deploy/postgres-ha.sh timelines     per node with data: N, its control file's
#                                            timeline (read with PostgreSQL up or down), and
#                                            when it answers: in recovery (t/f), its last
#                                            checkpoint's timeline, the one it is on (- unknown)
#   bash deploy/postgres-ha.sh record-timelines N:TLI...  the healer's observed timelines,
#                                            kept in the monitor for the fast-forward guard
#   bash deploy/postgres-ha.sh checkpoint N  a CHECKPOINT on node N (a restartpoint on a standby)
#
# `up` also starts the healer (deploy/lib/pgha_heal.py; `down` stops it): a node that
# cannot rejoin after a failover left it behind is rebuilt (below, rebuild_node).
#
# Why three data nodes: with two, pg_auto_failover keeps a primary writable when its only
# standby is gone (wait_primary: synchronous replication off), so a commit could be
# acknowledged that no standby holds. With three and number-sync-standbys 1, every
# acknowledged commit is on a standby too (synchronous_standby_names = ANY 1 (...)), even
# with one node down; with two down, commits wait rather than be acknowledged undurably.
# Failover is tuned for seconds, not the defaults' 20-30 s (monitor settings below).
#
# Environment: PGHA_PORT (monitor; nodes at +1, +2, +3; default 25400), ELECTRIC_PGHA_DIR
# (default <repo>/var/postgres-ha, or /var/tmp/... when the postgres OS user cannot reach it).
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PGHA_PORT="${PGHA_PORT:-25400}"
HOST=127.0.0.1
DIR="${ELECTRIC_PGHA_DIR:-}"
PGBIN=/usr/lib/postgresql/15/bin
DB_USER=electric
DB_PASSWORD=electric
DB_NAME=electric

log() { printf '[postgres-ha] %s\n' "$*" >&2; }

resolve_dir() {
  if [[ -z "$DIR" ]]; then
    DIR="$ROOT/var/postgres-ha"
    mkdir -p "$ROOT/var"
    if [[ "$(id -u)" == 0 ]] && ! runuser -u postgres -- test -x "$ROOT/var" 2>/dev/null; then
      DIR="/var/tmp/electric-poker/postgres-ha-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
    fi
  fi
  mkdir -p "$DIR"
  [[ "$(id -u)" == 0 ]] && chown postgres "$DIR"
  return 0
}

as_pg() { # run as the postgres OS user (root runs everything else), with PostgreSQL's tools
  # pg_autoctl keeps each node's configuration and state under XDG_CONFIG_HOME and
  # XDG_DATA_HOME: inside the formation's folder, so deleting it resets everything.
  local xdg=(XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" PATH="$PGBIN:$PATH")
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- env "${xdg[@]}" "$@"
  else
    env "${xdg[@]}" "$@"
  fi
}

ensure_packages() {
  command -v pg_autoctl >/dev/null && [[ -x "$PGBIN/postgres" ]] && return 0
  if [[ "$(id -u)" != 0 ]]; then
    log "missing pg_auto_failover: run 'sudo apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli'"
    exit 1
  fi
  log "installing pg_auto_failover from Debian's packages (apt-get) ..."
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -q >/dev/null
  apt_get install -y -q --no-install-recommends postgresql-15-auto-failover \
    pg-auto-failover-cli >/dev/null
}

monitor_dir() { echo "$DIR/monitor"; }
node_dir() { echo "$DIR/node$1"; }
node_port() { echo $((PGHA_PORT + $1)); }
monitor_uri() { echo "postgres://autoctl_node@$HOST:$PGHA_PORT/pg_auto_failover?sslmode=disable"; }

keeper_alive() { # dir
  [[ -f "$1/keeper.pid" ]] && kill -0 "$(cat "$1/keeper.pid")" 2>/dev/null
}

run_keeper() { # dir
  local dir="$1" i
  keeper_alive "$dir" && return 0
  rm -f "$dir/keeper.pid"
  # setsid: the keeper, its services and its PostgreSQL in a session of their own, whose
  # leader is the keeper itself (it writes its own pid: `$!` here would be runuser's, in the
  # caller's session); `kill` ends that session, as a lost machine would. 8>&-: the keeper
  # must not inherit a node's lock (node_lock), or it would hold it for ever.
  as_pg setsid nohup bash -c 'echo $$ >"$1/keeper.pid"; exec pg_autoctl run --pgdata "$1/data"' \
    keeper "$dir" >>"$dir/keeper.log" 2>&1 </dev/null 8>&- &
  for ((i = 0; i < 50; i++)); do
    [[ -s "$dir/keeper.pid" ]] && return 0
    sleep 0.1
  done
  log "the keeper of $dir did not start"
  exit 1
}

start_node() { # N: create the node when it has no data (a standby copied from the primary
  # by pg_basebackup, or the first primary), then run its keeper
  local n="$1" d
  d="$(node_dir "$n")"
  mkdir -p "$d"
  [[ "$(id -u)" == 0 ]] && chown postgres "$d"
  if [[ ! -f "$d/data/PG_VERSION" ]]; then
    log "creating node $n on $HOST:$(node_port "$n")"
    as_pg pg_autoctl create postgres --pgdata "$d/data" --pgport "$(node_port "$n")" \
      --hostname "$HOST" --listen "$HOST" --name "node$n" --auth trust --no-ssl \
      --monitor "$(monitor_uri)" >>"$d/keeper.log" 2>&1
  fi
  as_pg pg_autoctl config set --pgdata "$d/data" timeout.network_partition_timeout 6 \
    >>"$d/keeper.log" 2>&1
  run_keeper "$d"
}

# A node that cannot rejoin, rebuilt: killed, dropped from the monitor, its data set aside
# (diverged-<time>/) and copied anew from the primary. Needed when an old primary's WAL went past the point its
# successor was promoted at (commits it wrote that no standby acknowledged, so no client
# was told they were done) and a second failover asks it for its LSN before it was rewound:
# PostgreSQL cannot start it ("requested timeline N does not contain minimum recovery
# point"), yet its keeper answers the monitor, which waits for that node's report and
# promotes nobody (docs/chaos.md §7). Dropping it lets the failover go on.
rebuild_node() { # N
  local n="$1" d
  d="$(node_dir "$n")"
  # While it runs, the node's keeper is gone on purpose: `start N` (a supervisor that
  # revives lost nodes, as the chaos harness's) and `up` leave a node being rebuilt alone.
  # A keeper started in the middle raced the copy and failed the rebuild (seed 38). The
  # lock orders it after a start under way; the marker tells the chaos harness.
  if ! node_lock "$n" 60; then
    log "node $n: a start or rebuild under way held it for 60 s: not rebuilt"
    exit 1
  fi
  echo $$ >"$d/rebuilding"
  trap "rm -f '$d/rebuilding'" EXIT
  kill_dir "$d"
  as_pg pg_autoctl drop node --monitor "$(monitor_uri)" --name "node$n" --force \
    >>"$d/keeper.log" 2>&1 || true
  # The healer's observation was of the data set aside: the copy gets its own.
  sql_monitor -c "DELETE FROM electric_heal.node_timeline WHERE nodename = 'node$n'" \
    >/dev/null 2>&1 || true
  # Kept aside, never deleted: what the node wrote past its timeline's fork was never
  # acknowledged, but an operator may want to read it.
  rm -rf "$d/backup"
  if [[ -d "$d/data" ]]; then mv "$d/data" "$d/diverged-$(date -u +%Y%m%dT%H%M%SZ)"; fi
  start_node "$n"
}

# One start or rebuild of a node at a time, across processes (the healer's rebuild, `up`,
# `start N` from a supervisor): each holds the node's lock file on fd 8 while it runs, and
# the keeper it leaves running does not inherit it (run_keeper). Released when the holder
# exits, however it ends (the healer kills a rebuild's process group at its timeout).
node_lock() { # N SECONDS: take node N's lock, waiting up to SECONDS (0: not at all)
  local d
  d="$(node_dir "$1")"
  mkdir -p "$d"
  exec 8>"$d/lock" || { log "cannot open $d/lock"; exit 1; }
  flock -w "$2" 8
}

start_node_unless_busy() { # N: start node N unless a start or rebuild of it is under way
  if ! node_lock "$1" 0; then
    log "node $1 is being started or rebuilt by another process: left to it"
    exec 8>&-
    return 0
  fi
  start_node "$1"
  exec 8>&-
}

sql_monitor() {
  as_pg psql -X -q -h "$HOST" -p "$PGHA_PORT" -d pg_auto_failover -v ON_ERROR_STOP=1 "$@"
}

# pg_auto_failover 2.0's second stall (docs/chaos.md §7): the monitor picks a failover
# candidate by raw WAL position and assigns it fast_forward whenever its position differs
# from the most advanced one it computed, so an old primary back from a restart can be
# the candidate with MORE WAL than its peers. Its keeper asks the SQL function
# get_most_advanced_standby for a source, and restarts with recovery_target_lsn at the
# position that function answers (inclusive; then it is promoted). Debian's function
# orders by raw position and knows nothing of its caller: it answers the candidate itself,
# which then streams from its own port for ever (no primary). Answering a peer BEHIND the
# candidate instead, as releases after 2.0 do, loses data with the 2.0 keeper: the target
# is the peer's position, and everything the candidate wrote past it is thrown away at the
# promotion (the hour of 7 Dec lost nine published events so). This replacement answers
#   - the best peer, ranked by timeline then position (as the monitor ranks "most
#     advanced"), the candidate itself only when no peer reported;
#   - as the target, the peer's position when that peer is on the candidate's timeline (or
#     later) and ahead of it, else the candidate's OWN reported position: a candidate that
#     holds the most WAL replays its own WAL to where it reported, is at its target at
#     once, and is promoted with nothing lost;
#   - nothing when a peer that reported is on a later timeline than the candidate (an old
#     primary not yet rewound): promoting it would fork away the later timeline's
#     acknowledged commits. It waits; the healer (below) rebuilds it after its wait.
# Without a candidate (the function's other caller, a node created while no primary
# exists) it answers the best node as Debian's does, timeline first.
# Replaced on every `up`, so it holds on a monitor created by an older script too.
# Each node's timeline here is the later of the keeper's report and the healer's
# observation of the node's control file (electric_heal.node_timeline, record-timelines):
# the 2.0 keeper can report a timeline it read long before. A node primary on timeline 5
# for two minutes, stopped and restarted, reported 4, the timeline its control file had
# when its keeper started (the hour of seed 38); the guard took it for an old primary and
# the healer rebuilt the node with the most WAL. Both values are lower bounds of the
# truth (a timeline never goes back on a node's data), so the later one is the better.
patch_monitor() {
  sql_monitor <<'SQL' >/dev/null
CREATE SCHEMA IF NOT EXISTS electric_heal;
CREATE TABLE IF NOT EXISTS electric_heal.node_timeline (
   formationid  text        NOT NULL,
   nodename     text        NOT NULL,
   tli          int         NOT NULL,
   observed_at  timestamptz NOT NULL DEFAULT now(),
   PRIMARY KEY (formationid, nodename)
);
GRANT USAGE ON SCHEMA electric_heal TO autoctl_node;
GRANT SELECT ON electric_heal.node_timeline TO autoctl_node;
-- The monitor's own ranking of failover candidates reads reportedtli too (timeline first):
-- a keeper's stale report never lowers it below what the node's control file showed.
CREATE OR REPLACE FUNCTION electric_heal.observed_timeline_floor() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE
  observed int;
BEGIN
  SELECT o.tli INTO observed FROM electric_heal.node_timeline o
   WHERE o.formationid = NEW.formationid AND o.nodename = NEW.nodename;
  IF observed > NEW.reportedtli THEN
    NEW.reportedtli := observed;
  END IF;
  RETURN NEW;
EXCEPTION WHEN undefined_table THEN
  RETURN NEW; -- the table dropped by hand: the keepers' reports must still go through
END $f$;
CREATE OR REPLACE TRIGGER electric_observed_timeline_floor BEFORE UPDATE OF reportedtli
  ON pgautofailover.node FOR EACH ROW EXECUTE FUNCTION electric_heal.observed_timeline_floor();
CREATE OR REPLACE FUNCTION pgautofailover.get_most_advanced_standby
 (
   IN formationid       text default 'default',
   IN groupid           int default 0,
   OUT node_id          bigint,
   OUT node_name        text,
   OUT node_host        text,
   OUT node_port        int,
   OUT node_lsn         pg_lsn,
   OUT node_is_primary  bool
 )
RETURNS SETOF record LANGUAGE SQL STRICT
AS $$
   with nodes as (
       select n.nodeid, n.nodename, n.nodehost, n.nodeport, n.reportedlsn, n.reportedstate,
              n.goalstate, n.health, greatest(n.reportedtli, coalesce(o.tli, 0)) as tli
         from pgautofailover.node n
         left join electric_heal.node_timeline o
           on o.formationid = n.formationid and o.nodename = n.nodename
        where n.formationid = $1 and n.groupid = $2
   ),
   candidate as (
       select tli, reportedlsn as lsn from nodes where goalstate = 'fast_forward' limit 1
   )
   select n.nodeid, n.nodename, n.nodehost, n.nodeport,
          case when c.lsn is null then n.reportedlsn
               when n.tli >= c.tli and n.reportedlsn > c.lsn then n.reportedlsn
               else c.lsn end,
          false
     from nodes n
     left join candidate c on true
    where n.reportedstate = 'report_lsn'
      and not exists (
            select 1 from nodes later
             where later.reportedstate = 'report_lsn' and later.tli > c.tli)
 order by (n.goalstate = 'fast_forward'), n.tli desc, n.reportedlsn desc, n.health desc
    limit 1;
$$;
SQL
}

cmd_up() {
  ensure_packages
  resolve_dir
  local m n
  m="$(monitor_dir)"
  mkdir -p "$m"
  [[ "$(id -u)" == 0 ]] && chown postgres "$m"
  if [[ ! -f "$m/data/PG_VERSION" ]]; then
    log "creating the monitor on $HOST:$PGHA_PORT"
    as_pg pg_autoctl create monitor --pgdata "$m/data" --pgport "$PGHA_PORT" \
      --hostname "$HOST" --listen "$HOST" --auth trust --no-ssl >>"$m/keeper.log" 2>&1
  fi
  run_keeper "$m"
  for _ in $(seq 1 120); do
    as_pg pg_isready -q -h "$HOST" -p "$PGHA_PORT" && break
    sleep 0.5
  done
  # Fail over in seconds: a node is unhealthy after 4 s of failed checks every second, and
  # a standby is promoted 10 s after the primary was asked to demote (the default 30 s made
  # every failover take 35-40 s). That wait exists for a primary that is alive but cut off:
  # its keeper demotes it by itself after network_partition_timeout (6 s, set on each node
  # below), which must stay shorter, so two primaries never accept writes at once. Even then
  # a cut-off primary acknowledges nothing: every commit waits for a synchronous standby.
  sql_monitor -c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout TO 10000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_period TO 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_timeout TO 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay TO 500" \
    -c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout TO 4000" \
    -c "SELECT pg_reload_conf()" >/dev/null
  patch_monitor
  start_healer # before the nodes: an `up` that meets a stall has its healer already
  for n in 1 2 3; do start_node_unless_busy "$n"; done
  wait_formation 240
  as_pg pg_autoctl set formation number-sync-standbys 1 --pgdata "$(node_dir "$(primary)")/data" \
    >>"$DIR/set.log" 2>&1 || true
  wait_formation 120 # the primary applies the setting (apply_settings), then is primary again
  ensure_role
  echo "PostgreSQL HA up: 3 nodes, 1 synchronous standby required; DATABASE_URL=$(url)"
}

# The healer (deploy/lib/pgha_heal.py): rebuilds a node whose keeper is alive but that has
# been behind its assigned state for PGHA_HEAL_AFTER s (default 60) while another node is on
# a later timeline (the formation failed over without it) - the stall pg_auto_failover 2.0
# cannot leave by itself (docs/chaos.md §7). Its decisions are in heal.log.
healer_pid() { # the healer's pid, when the recorded one is still the healer
  local pidf="$DIR/heal.pid" pid
  [[ -f "$pidf" ]] || return 1
  pid="$(cat "$pidf")"
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "pgha_heal.py .*--dir $DIR " || return 1
  echo "$pid"
}

start_healer() {
  healer_pid >/dev/null && return 0
  # setsid: the healer leads a process group of its own (python3 may be a shim that execs,
  # so $! is the healer), which `down` ends; on SIGTERM the healer first ends the group of
  # the command it runs (each in a group of its own), a rebuild in progress included.
  ELECTRIC_PGHA_DIR="$DIR" PGHA_PORT="$PGHA_PORT" setsid nohup python3 \
    "$ROOT/deploy/lib/pgha_heal.py" --script "$ROOT/deploy/postgres-ha.sh" --dir "$DIR" \
    --after "${PGHA_HEAL_AFTER:-60}" >>"$DIR/heal.log" 2>&1 </dev/null &
  echo $! >"$DIR/heal.pid"
}

stop_healer() {
  local pid i
  if pid="$(healer_pid)"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/heal.pid"
}

state_json() { as_pg pg_autoctl show state --pgdata "$(monitor_dir)/data" --json 2>/dev/null; }

# One primary (or wait_primary) and two secondaries, as reported AND assigned.
formation_ready() {
  state_json | python3 -c '
import json, sys
nodes = json.load(sys.stdin)
states = sorted(n["current_group_state"] for n in nodes if n["current_group_state"] == n["assigned_group_state"])
sys.exit(0 if states == ["primary", "secondary", "secondary"] else 1)' 2>/dev/null
}

wait_formation() { # seconds
  local i
  for ((i = 0; i < $1 * 2; i++)); do
    formation_ready && return 0
    sleep 0.5
  done
  log "the formation did not reach primary + 2 secondaries in $1 s:"
  as_pg pg_autoctl show state --pgdata "$(monitor_dir)/data" >&2 || true
  exit 1
}

primary() {
  state_json | python3 -c '
import json, sys
for n in json.load(sys.stdin):
    if n["current_group_state"] in ("primary", "wait_primary", "single") and n["assigned_group_state"] == n["current_group_state"]:
        print(n["nodename"].removeprefix("node")); break
else:
    sys.exit(1)'
}

url() {
  local hosts="" n
  for n in 1 2 3; do hosts+="&host=$HOST:$(node_port "$n")"; done
  # libpq tries the nodes in turn and keeps the one that accepts writes.
  echo "postgresql+psycopg://$DB_USER:$DB_PASSWORD@/$DB_NAME?${hosts#&}&target_session_attrs=read-write&connect_timeout=3"
}

ensure_role() {
  local port
  port="$(node_port "$(primary)")"
  as_pg psql -X -q -h "$HOST" -p "$port" -d postgres -v ON_ERROR_STOP=1 <<SQL >/dev/null
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$DB_PASSWORD';
  END IF;
END \$\$;
SQL
  if [[ -z "$(as_pg psql -X -tA -h "$HOST" -p "$port" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ]]; then
    as_pg psql -X -q -h "$HOST" -p "$port" -d postgres -c "CREATE DATABASE $DB_NAME OWNER $DB_USER" >/dev/null
  fi
}

# The keeper reports a node's timeline (pg_auto_failover 2.0, pgsql.c and pgsetup.c): a
# primary's from its last checkpoint (pg_control_checkpoint()); a streaming standby's from
# its WAL receiver (with none the monitor keeps the last value); and, while a node's
# PostgreSQL is down, from its control file (pg_controldata). After a promotion the last
# checkpoint stays on the old timeline until the first checkpoint on the new one, a spread
# checkpoint (up to checkpoint_timeout x checkpoint_completion_target, 4.5 min, under
# load), and a standby's control file until its next restartpoint: a node restarted then
# is reported on an older timeline than it is on. The healer compares with the timeline
# the node is on (its current WAL file's, or its WAL receiver's) and asks for a CHECKPOINT
# where they differ (docs/chaos.md §7).
node_sql() { # N SQL: one row, fields separated by spaces; fails when the node does not answer
  # (psql's errors on stderr); statement_timeout: a frozen server holds no caller for long.
  as_pg env PGCONNECT_TIMEOUT=2 PGOPTIONS="-c statement_timeout=${3:-5s}" psql -X -tA -F' ' \
    -h "$HOST" -p "$(node_port "$1")" -d postgres -v ON_ERROR_STOP=1 -c "$2"
}

# The timeline a node's data is on at least, from its control file: the later of its last
# checkpoint's and its minimum recovery point's (a standby moves the latter as it replays).
# Read whether its PostgreSQL runs or not: an old primary that cannot start stays on its
# old timeline here, whatever its keeper says.
# Nothing when the file read is not trustworthy: pg_controldata warns of a bad checksum (a
# read torn by a concurrent rewrite) on stdout and exits 0. The checksum is the test: a
# second read to compare with would only double the cost of every look.
control_tli() { # N
  as_pg env LC_ALL=C pg_controldata -D "$(node_dir "$1")/data" 2>/dev/null | awk -F: '
    /CRC|untrustworthy|byte ordering/ { bad = 1 }
    /^Latest checkpoint.s TimeLineID/ || /^Min recovery ending loc.s timeline/ {
      gsub(/ /, "", $2); if ($2 + 0 > tli) tli = $2 + 0 }
    END { if (tli > 0 && !bad) print tli; else exit 1 }'
}

cmd_timelines() {
  local n control row
  for n in 1 2 3; do
    [[ -f "$(node_dir "$n")/data/PG_VERSION" ]] || continue
    control="$(control_tli "$n")" || continue
    row="$(node_sql "$n" "SELECT pg_is_in_recovery(),
        (SELECT timeline_id FROM pg_control_checkpoint()),
        coalesce(CASE WHEN pg_is_in_recovery()
             THEN (SELECT received_tli FROM pg_stat_wal_receiver WHERE received_tli > 0)
             ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
        END::text, '-')" 2>/dev/null)" || row="- - -"
    echo "$n $control $row"
  done
}

# The healer's observations, where the guard of patch_monitor reads them: N:TLI ...
cmd_record_timelines() {
  # A no-op update per node has the trigger raise a stale report at once, not at the next
  # one: one row per transaction, as the monitor's own calls take several rows in their
  # own order (two rows in one statement could deadlock with them), briefly.
  local values="" raise=() pair n
  for pair in "$@"; do
    [[ "$pair" =~ ^([123]):([0-9]+)$ ]] || { log "record-timelines: N:TLI, not $pair"; exit 2; }
    n="${BASH_REMATCH[1]}"
    values+="${values:+,}('default', 'node$n', ${BASH_REMATCH[2]})"
    raise+=(-c "UPDATE pgautofailover.node SET reportedtli = reportedtli
      WHERE formationid = 'default' AND nodename = 'node$n'
        AND reportedtli < (SELECT tli FROM electric_heal.node_timeline
                            WHERE formationid = 'default' AND nodename = 'node$n')")
  done
  [[ -n "$values" ]] || return 0
  sql_monitor -c "SET lock_timeout = '2s'" \
    -c "INSERT INTO electric_heal.node_timeline (formationid, nodename, tli)
    VALUES $values ON CONFLICT (formationid, nodename)
    DO UPDATE SET tli = excluded.tli, observed_at = now()" "${raise[@]}" >/dev/null
}

kill_dir() { # dir: SIGKILL its keeper's whole session (keeper, services, PostgreSQL)
  local dir="$1" pid sid
  [[ -f "$dir/keeper.pid" ]] || return 0
  pid="$(cat "$dir/keeper.pid")"
  sid="$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ' || true)"
  # Only a session the keeper leads (never the caller's: a stale pid may be reused).
  if [[ -n "$sid" && "$sid" == "$pid" ]]; then
    pkill -9 -s "$sid" 2>/dev/null || true
  fi
  # A PostgreSQL that is not in the session (started by a keeper restarted by hand).
  pkill -9 -f -- "-D $dir/data" 2>/dev/null || true
  rm -f "$dir/keeper.pid" "$dir/data/postmaster.pid"
}

cmd_down() {
  resolve_dir
  stop_healer
  local n
  for n in 3 2 1; do
    local d
    d="$(node_dir "$n")"
    if keeper_alive "$d"; then
      as_pg pg_autoctl stop --pgdata "$d/data" >/dev/null 2>&1 || true
    fi
  done
  keeper_alive "$(monitor_dir)" && as_pg pg_autoctl stop --pgdata "$(monitor_dir)/data" >/dev/null 2>&1 || true
  sleep 2
  for n in 1 2 3; do kill_dir "$(node_dir "$n")"; done
  kill_dir "$(monitor_dir)"
  echo "PostgreSQL HA stopped ($DIR)"
}

case "${1:-}" in
install) ensure_packages ;;
up) cmd_up ;;
down) cmd_down ;;
status)
  resolve_dir
  as_pg pg_autoctl show state --pgdata "$(monitor_dir)/data"
  ;;
url)
  resolve_dir
  url
  ;;
primary)
  resolve_dir
  primary
  ;;
kill)
  resolve_dir
  kill_dir "$(node_dir "${2:?node number}")"
  echo "node $2 killed (keeper and server)"
  ;;
start)
  resolve_dir
  if ! node_lock "${2:?node number}" 0; then
    echo "node $2 is being rebuilt or started by another process: not started"
    exit 0
  fi
  run_keeper "$(node_dir "$2")"
  echo "node $2 keeper started (it rejoins as a standby)"
  ;;
rebuild)
  resolve_dir
  rebuild_node "${2:?node number}"
  echo "node $2 dropped and created anew from the primary (it joins as a standby)"
  ;;
state)
  resolve_dir
  state_json
  ;;
timelines)
  resolve_dir
  cmd_timelines
  ;;
record-timelines)
  resolve_dir
  shift
  cmd_record_timelines "$@"
  ;;
checkpoint)
  resolve_dir
  [[ "${2:-}" =~ ^[123]$ ]] || { echo "checkpoint: a node number, 1-3" >&2; exit 2; }
  node_sql "$2" "CHECKPOINT" 60s >/dev/null
  echo "node $2: checkpoint done"
  ;;
wait)
  resolve_dir
  wait_formation "${2:-120}"
  echo "one primary and two secondaries"
  ;;
*)
  echo "usage: $0 install|up|down|status|url|primary|kill N|start N|rebuild N|wait [SECONDS]|state|timelines|record-timelines N:TLI...|checkpoint N" >&2
  exit 2
  ;;
esac

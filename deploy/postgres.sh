#!/usr/bin/env bash
# Local PostgreSQL for development and tests, no Docker needed.
#
#   bash deploy/postgres.sh up      install PostgreSQL from Debian's packages when missing, create a
#                                   cluster under var/postgres (once), start it on 127.0.0.1:$PGPORT,
#                                   ensure role electric/electric (superuser) and database electric
#   bash deploy/postgres.sh down    stop that cluster (fast shutdown)
#   bash deploy/postgres.sh status  print state; exit 0 when it accepts connections, 3 otherwise
#
# Environment: PGPORT (default 5432), ELECTRIC_PG_DIR (default <repo>/var/postgres, or a folder
# under /var/tmp/electric-poker when the `postgres` OS user cannot reach the repo).
# The cluster is disposable test/dev data: fsync and synchronous_commit are off for speed.
# Quick (<1 s) when it is already up. As root, the server runs as the `postgres` OS user.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PGPORT="${PGPORT:-5432}"
PGHOST=127.0.0.1
PG_DIR="${ELECTRIC_PG_DIR:-}"
DB_USER=electric
DB_PASSWORD=electric
DB_NAME=electric
# One database per service (the same set docker-compose creates), for running services locally.
SERVICE_DBS=(electric_registration electric_table electric_wallet electric_payout)

log() { printf '[postgres] %s\n' "$*" >&2; }

# Where the cluster lives: <repo>/var/postgres, unless the `postgres` OS user cannot reach the
# repo (e.g. a clone under a private home directory) - then a per-repo folder under /var/tmp.
resolve_dirs() {
  if [[ -z "$PG_DIR" ]]; then
    PG_DIR="$ROOT/var/postgres"
    if [[ "$(id -u)" == 0 ]] && id postgres >/dev/null 2>&1; then
      mkdir -p "$ROOT/var"
      if ! runuser -u postgres -- test -x "$ROOT/var"; then
        PG_DIR="/var/tmp/electric-poker/postgres-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
      fi
    fi
  fi
  PGDATA="$PG_DIR/data"
  PG_LOG="$PG_DIR/postgres.log"
  SOCK_DIR="$PG_DIR/run"
  # A unix socket path must stay under ~100 bytes.
  if ((${#SOCK_DIR} > 80)); then
    SOCK_DIR="/tmp/electric-pg-$(printf '%s' "$PG_DIR" | cksum | cut -d' ' -f1)"
  fi
}

# A PostgreSQL client program: the installed version's own binary, else the one on PATH.
pg_tool() {
  local bindir
  bindir="$(pg_bindir || true)"
  if [[ -n "$bindir" && -x "$bindir/$1" ]]; then
    echo "$bindir/$1"
  else
    command -v "$1" || echo "$1"
  fi
}

pg_bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [[ -n "$d" && -x "$d/pg_ctl" ]] && printf '%s\n' "$d"
}

# Run a command as the OS user owning the cluster (`postgres` when we are root).
as_pg() {
  if [[ "$(id -u)" == 0 ]]; then
    # From / : the repo may sit where `postgres` cannot cd (a private home directory).
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

install_postgres() {
  if [[ -n "$(pg_bindir)" ]]; then
    return 0
  fi
  if [[ "$(id -u)" != 0 ]]; then
    log "PostgreSQL is not installed and we are not root: run 'sudo apt-get install -y postgresql'"
    exit 1
  fi
  log "installing PostgreSQL from Debian's packages (apt-get) ..."
  # No system-wide 'main' cluster: we run our own under var/postgres.
  mkdir -p /etc/postgresql-common
  if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -q >/dev/null
  apt_get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    postgresql postgresql-contrib >/dev/null
  if [[ -z "$(pg_bindir)" ]]; then
    log "apt-get finished but no /usr/lib/postgresql/*/bin/pg_ctl was found"
    exit 1
  fi
  # Should the package have created and started a system cluster anyway, stop it: it would
  # hold our port. (Only right after we installed the package ourselves.)
  if command -v pg_lsclusters >/dev/null; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _port status _rest; do
      if [[ "$status" == online* ]]; then
        log "stopping the system cluster $ver/$name that the package started"
        pg_ctlcluster "$ver" "$name" stop || true
      fi
    done
  fi
}

is_ready() {
  "$(pg_tool pg_isready)" -q -h "$PGHOST" -p "$PGPORT" -t 1 >/dev/null 2>&1
}

electric_can_connect() {
  PGPASSWORD="$DB_PASSWORD" PGCONNECT_TIMEOUT=3 "$(pg_tool psql)" -X -q -h "$PGHOST" -p "$PGPORT" \
    -U "$DB_USER" -d "$DB_NAME" -tAc 'select 1' >/dev/null 2>&1
}

ours_running() {
  local bindir="$1"
  [[ -f "$PGDATA/PG_VERSION" ]] && as_pg "$bindir/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

init_cluster() {
  local bindir="$1"
  if [[ -f "$PGDATA/PG_VERSION" ]]; then
    return 0
  fi
  log "creating cluster in $PGDATA"
  mkdir -p "$PGDATA" "$SOCK_DIR"
  if [[ "$(id -u)" == 0 ]]; then
    chown -R postgres:postgres "$PG_DIR"
  fi
  chmod 700 "$PGDATA"
  as_pg "$bindir/initdb" -D "$PGDATA" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256 >"$PG_DIR/initdb.log" 2>&1 || {
    cat "$PG_DIR/initdb.log" >&2
    exit 1
  }
  cat >>"$PGDATA/postgresql.conf" <<CONF

# --- electric-poker local dev/test cluster (deploy/postgres.sh) ---
listen_addresses = '127.0.0.1'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
CONF
}

start_cluster() {
  local bindir="$1"
  mkdir -p "$SOCK_DIR"
  if [[ "$(id -u)" == 0 ]]; then
    chown postgres:postgres "$PG_DIR" "$SOCK_DIR"
    touch "$PG_LOG" && chown postgres:postgres "$PG_LOG"
  fi
  log "starting PostgreSQL on $PGHOST:$PGPORT (data $PGDATA, log $PG_LOG)"
  as_pg "$bindir/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -w -t 60 \
    -o "-p $PGPORT -c listen_addresses=$PGHOST -c unix_socket_directories='$SOCK_DIR'" \
    start >/dev/null || {
    log "pg_ctl start failed; last log lines:"
    tail -n 30 "$PG_LOG" >&2 || true
    exit 1
  }
  local i
  for ((i = 0; i < 120; i++)); do
    is_ready && return 0
    sleep 0.5
  done
  log "server did not become ready; last log lines:"
  tail -n 30 "$PG_LOG" >&2 || true
  exit 1
}

bootstrap_roles() {
  # Over the unix socket with trust auth as the bootstrap superuser; idempotent.
  local psql_su=("$(pg_tool psql)" -X -q -v ON_ERROR_STOP=1 -h "$SOCK_DIR" -p "$PGPORT" -U postgres -d postgres)
  as_pg "${psql_su[@]}" >/dev/null <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$DB_PASSWORD';
  ELSE
    ALTER ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$DB_PASSWORD';
  END IF;
END
\$\$;
SQL
  local db
  for db in "$DB_NAME" "${SERVICE_DBS[@]}"; do
    as_pg "${psql_su[@]}" -tAc \
      "SELECT 'CREATE DATABASE $db OWNER $DB_USER' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$db')" \
      | as_pg "${psql_su[@]}" >/dev/null
  done
}

server_version() {
  PGPASSWORD="$DB_PASSWORD" "$(pg_tool psql)" -X -h "$PGHOST" -p "$PGPORT" -U "$DB_USER" -d "$DB_NAME" -tAc \
    'show server_version' 2>/dev/null | awk '{print $1}'
}

report_up() {
  echo "PostgreSQL $(server_version) up on $PGHOST:$PGPORT" \
    "(postgresql+psycopg://$DB_USER:$DB_PASSWORD@$PGHOST:$PGPORT/$DB_NAME)"
}

cmd_up() {
  # Fast path: a server answers and our role works.
  if is_ready && electric_can_connect; then
    report_up
    return 0
  fi
  install_postgres
  resolve_dirs
  local bindir
  bindir="$(pg_bindir)"
  if ! ours_running "$bindir"; then
    if is_ready; then
      log "another PostgreSQL server already listens on $PGHOST:$PGPORT and role '$DB_USER'" \
        "cannot log in; stop it or choose another port (PGPORT=5433 bash deploy/infra.sh up)"
      exit 1
    fi
    init_cluster "$bindir"
    start_cluster "$bindir"
  fi
  bootstrap_roles
  electric_can_connect || {
    log "cluster is up but role '$DB_USER' cannot log in over TCP"
    exit 1
  }
  report_up
}

cmd_down() {
  resolve_dirs
  local bindir
  bindir="$(pg_bindir || true)"
  if [[ -n "$bindir" ]] && ours_running "$bindir"; then
    as_pg "$bindir/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null
    echo "PostgreSQL stopped ($PGDATA)"
  else
    echo "PostgreSQL not running from $PGDATA"
  fi
}

cmd_status() {
  if is_ready && electric_can_connect; then
    report_up
    return 0
  fi
  if is_ready; then
    echo "PostgreSQL answers on $PGHOST:$PGPORT but role '$DB_USER' cannot log in"
  else
    echo "PostgreSQL down on $PGHOST:$PGPORT"
  fi
  return 3
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
  echo "usage: $0 up|down|status" >&2
  exit 2
  ;;
esac

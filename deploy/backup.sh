#!/usr/bin/env bash
# Backup and restore of the services' PostgreSQL databases (docs/chaos.md, "Backup and restore").
#
#   bash deploy/backup.sh dump DIR URL...          pg_dump -Fc of each database (while the services
#                                                  run: each dump is one consistent snapshot) into
#                                                  DIR/<database>.dump, listed in DIR/manifest.txt
#   bash deploy/backup.sh restore DIR SERVER_URL   create each dumped database on the server of
#                                                  SERVER_URL (it must not exist there) and
#                                                  pg_restore into it; prints one new URL a line
#   bash deploy/backup.sh fresh-up DIR PORT        a FRESH PostgreSQL cluster in DIR on
#                                                  127.0.0.1:PORT (deploy/postgres.sh with its own
#                                                  directory and port; the shared one is untouched)
#   bash deploy/backup.sh fresh-down DIR PORT      stop it (fast shutdown); DIR stays for you
#
# URLs are the services' DATABASE_URL form (postgresql+psycopg://user:pw@host:port/db) or libpq's.
# After a restore: re-import each store's events from its topic, rebuild the projections, verify
# (the steps are in docs/chaos.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '[backup] %s\n' "$*" >&2; }

pg_tool() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [[ -n "$d" && -x "$d/$1" ]]; then echo "$d/$1"; else command -v "$1" || echo "$1"; fi
}

# postgresql+psycopg://... -> postgresql://... (libpq does not know the driver suffix).
libpq_uri() { printf '%s\n' "$1" | sed -E 's#^postgresql\+[a-z0-9]+://#postgresql://#'; }
db_name() { local u="${1%%\?*}"; printf '%s\n' "${u##*/}"; }

cmd_dump() {
  local dir="$1"; shift
  [[ $# -gt 0 ]] || { log "dump: no database URL given"; exit 2; }
  mkdir -p "$dir"
  : >"$dir/manifest.txt"
  local url uri db started
  for url in "$@"; do
    uri="$(libpq_uri "$url")"
    db="$(db_name "$uri")"
    started="$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"
    "$(pg_tool pg_dump)" -Fc --no-owner --no-privileges -d "$uri" -f "$dir/$db.dump"
    printf '%s %s %s\n' "$db" "$started" "$(stat -c %s "$dir/$db.dump")" >>"$dir/manifest.txt"
    log "dumped $db ($(stat -c %s "$dir/$db.dump") bytes, snapshot at ~$started)"
  done
}

cmd_restore() {
  local dir="$1" server
  server="$(libpq_uri "$2")"
  local base="${server%%\?*}"
  base="${base%/*}"
  local db target
  while read -r db _; do
    [[ -n "$db" ]] || continue
    "$(pg_tool psql)" -X -q -v ON_ERROR_STOP=1 -d "$server" -c "CREATE DATABASE \"$db\"" >/dev/null
    target="$base/$db"
    "$(pg_tool pg_restore)" --no-owner --no-privileges --exit-on-error -d "$target" "$dir/$db.dump"
    log "restored $db"
    printf '%s\n' "$(printf '%s' "$target" | sed 's#^postgresql://#postgresql+psycopg://#')"
  done <"$dir/manifest.txt"
}

cmd_fresh() {
  local action="$1" dir="$2" port="$3"
  PGPORT="$port" ELECTRIC_PG_DIR="$dir" bash "$ROOT/deploy/postgres.sh" "$action"
}

case "${1:-}" in
  dump) shift; cmd_dump "$@" ;;
  restore) shift; [[ $# -eq 2 ]] || { log "usage: restore DIR SERVER_URL"; exit 2; }; cmd_restore "$@" ;;
  fresh-up) [[ $# -eq 3 ]] || { log "usage: fresh-up DIR PORT"; exit 2; }; cmd_fresh up "$2" "$3" ;;
  fresh-down) [[ $# -eq 3 ]] || { log "usage: fresh-down DIR PORT"; exit 2; }; cmd_fresh down "$2" "$3" ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac

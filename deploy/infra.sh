#!/usr/bin/env bash
# Real infrastructure for development and tests without Docker: PostgreSQL + Apache Kafka (KRaft)
# on 127.0.0.1. See deploy/postgres.sh and deploy/kafka.sh for the details and variables.
#
#   bash deploy/infra.sh up|down|status [postgres|kafka]    (make infra-up / make infra-down)
#
# Without a component name it acts on both (start order: PostgreSQL, then Kafka).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

action="${1:-}"
case "${2:-all}" in
all) components=(postgres kafka) ;;
postgres | kafka) components=("$2") ;;
*)
  echo "usage: $0 up|down|status [postgres|kafka]" >&2
  exit 2
  ;;
esac

case "$action" in
up)
  for c in "${components[@]}"; do
    bash "$HERE/$c.sh" up
  done
  ;;
down | status)
  rc=0
  if [[ "$action" == down ]]; then
    # Stop in reverse start order.
    for ((i = ${#components[@]} - 1; i >= 0; i--)); do
      bash "$HERE/${components[$i]}.sh" down || rc=$?
    done
  else
    for c in "${components[@]}"; do
      bash "$HERE/$c.sh" status || rc=$?
    done
  fi
  exit "$rc"
  ;;
*)
  echo "usage: $0 up|down|status [postgres|kafka]" >&2
  exit 2
  ;;
esac

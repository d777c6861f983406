#!/usr/bin/env bash
# Real infrastructure for development and tests without Docker: PostgreSQL + Apache Kafka (KRaft)
# on 127.0.0.1. See deploy/postgres.sh and deploy/kafka.sh for the details and variables.
#
#   bash deploy/infra.sh up|down|status [postgres|kafka|observability]
#                                                  (make infra-up / make infra-down)
#
# Without a component name `up` and `status` act on PostgreSQL and Kafka (start order: PostgreSQL,
# then Kafka). `observability` (Prometheus, Alertmanager, exporters: deploy/observability.sh) is
# optional: only `up observability` starts it; a plain `down` stops it too when it runs.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

action="${1:-}"
usage() {
  echo "usage: $0 up|down|status [postgres|kafka|observability]" >&2
  exit 2
}
case "${2:-all}" in
all)
  components=(postgres kafka)
  # Stopping everything includes the optional stack (a no-op when it never started).
  [[ "$action" == down ]] && components+=(observability)
  ;;
postgres | kafka | observability) components=("$2") ;;
*) usage ;;
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
*) usage ;;
esac

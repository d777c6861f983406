#!/usr/bin/env bash
# N table-service instances on loopback ports, owning tables by Kafka partition (issue 17,
# docs/scaling.md):
#
#   bash deploy/tables.sh up [N]     # start instances 1..N (default 3) not running yet
#   bash deploy/tables.sh status     # which instances answer
#   bash deploy/tables.sh down       # stop them (SIGTERM, then SIGKILL after 20 s)
#
# Instance k (1-based) listens on gRPC 127.0.0.1:$((50052 + 10*(k-1))) and metrics
# $((9102 + 10*(k-1))): 50052/9102, 50062/9112, 50072/9122, ... It runs with
# ELECTRIC_TABLE_OWNERSHIP=partitions and advertises its own address (what the others
# forward calls to); each serves the casino (THB; the UTH tables of its partitions, see
# docs/scaling.md). Every instance uses the same DATABASE_URL (one table store) and Kafka:
# set DATABASE_URL, KAFKA_BOOTSTRAP_SERVERS and the key variables (ELECTRIC_AUTH_JWKS_FILE,
# ELECTRIC_AUTH_SIGNING_KEY_FILE, ...) as for one instance. A client reaches them all with
# the gRPC target `ipv4:127.0.0.1:50052,127.0.0.1:50062,...` (printed by `up`).
# Pids and logs: var/tables/table-<k>.{pid,log} (ELECTRIC_TABLES_VAR moves them). Other base
# ports: ELECTRIC_TABLES_GRPC_BASE / ELECTRIC_TABLES_METRICS_BASE. Loopback only.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
VAR="${ELECTRIC_TABLES_VAR:-$ROOT/var/tables}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
GRPC_BASE="${ELECTRIC_TABLES_GRPC_BASE:-50052}"
METRICS_BASE="${ELECTRIC_TABLES_METRICS_BASE:-9102}"

port_of() { echo $((GRPC_BASE + 10 * ($1 - 1))); }
metrics_of() { echo $((METRICS_BASE + 10 * ($1 - 1))); }

# shellcheck source=lib/procs.sh
source "$HERE/lib/procs.sh"

up() {
  local n="${1:-3}" k targets=()
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "N must be a positive integer" >&2; exit 2; }
  for ((k = 1; k <= n; k++)); do
    targets+=("127.0.0.1:$(port_of "$k")")
    if proc_running "$VAR" "table-$k"; then
      echo "table-$k already running (pid $(cat "$VAR/table-$k.pid"))"
      continue
    fi
    ELECTRIC_TABLE_OWNERSHIP=partitions \
      ELECTRIC_GRPC_HOST=127.0.0.1 ELECTRIC_METRICS_HOST=127.0.0.1 \
      ELECTRIC_GRPC_PORT="$(port_of "$k")" ELECTRIC_METRICS_PORT="$(metrics_of "$k")" \
      ELECTRIC_TABLE_ADVERTISED_ADDRESS="127.0.0.1:$(port_of "$k")" \
      proc_start "$VAR" "table-$k" "$PY" -m electric_table
    echo "table-$k: pid $(cat "$VAR/table-$k.pid"), gRPC 127.0.0.1:$(port_of "$k"), metrics $(metrics_of "$k")"
  done
  local IFS=,
  echo "client target: ipv4:${targets[*]}"
}

describe() { echo "gRPC 127.0.0.1:$(port_of "${1#table-}")"; }

case "${1:-}" in
up) up "${2:-3}" ;;
status) proc_status "$VAR" describe ;;
down) proc_down "$VAR" ;;
*)
  echo "usage: $0 up [N]|status|down" >&2
  exit 2
  ;;
esac

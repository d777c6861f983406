#!/usr/bin/env bash
# The four services as separate processes on the local PostgreSQL and Kafka (deploy/infra.sh),
# several instances each (issue 17, docs/scaling.md):
#
#   bash deploy/platform.sh up [TABLES] [INSTANCES]  # TABLES table instances (default 3) and
#                                                    # INSTANCES of registration, wallet, payout
#                                                    # (default 2); starts what is not running
#   bash deploy/platform.sh status                   # which processes run (exit 3: none)
#   bash deploy/platform.sh down                     # stop them all (SIGTERM; SIGKILL after 20 s)
#
# Instance k (1-based) of a service listens on its base port + 10·(k−1): gRPC registration
# 50051, table 50052, wallet 50053, payout 50054; metrics 9101..9104 likewise (instance 1 on
# the ports `deploy/observability.sh targets processes` scrapes). Each service's instances
# share its database (`electric_<service>` on 127.0.0.1:$PGPORT, made by deploy/postgres.sh)
# and reach the others' instances through one round-robin target, e.g.
# ELECTRIC_WALLET_TARGET=ipv4:127.0.0.1:50053,127.0.0.1:50063. Table instances own tables by
# Kafka partition (ELECTRIC_TABLE_OWNERSHIP=partitions), casino UTH tables included, and
# forward a table's calls to its owner. A development key set (issuer,
# one signing key and one checkpoint key per service) is written once to
# $ELECTRIC_PLATFORM_VAR/keys. Pids, logs, keys and state: var/platform/
# (ELECTRIC_PLATFORM_VAR). Loopback only. Variables: PGPORT (5432), KAFKA_PORT (9092);
# ELECTRIC_PLATFORM_DB_URL (the databases' URL with %s for the service name) or
# ELECTRIC_PLATFORM_<SERVICE>_DB_URL (one service's database),
# KAFKA_BOOTSTRAP_SERVERS (when set, deploy/infra.sh is not asked) and ELECTRIC_KAFKA_NAMESPACE,
# ELECTRIC_PLATFORM_GRPC_BASE (50050) and ELECTRIC_PLATFORM_METRICS_BASE (9100) move the ports.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
VAR="${ELECTRIC_PLATFORM_VAR:-$ROOT/var/platform}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
PGPORT="${PGPORT:-5432}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
DB_URL="${ELECTRIC_PLATFORM_DB_URL:-}"
BOOTSTRAP="${KAFKA_BOOTSTRAP_SERVERS:-}"
GRPC_BASE="${ELECTRIC_PLATFORM_GRPC_BASE:-50050}"
METRICS_BASE="${ELECTRIC_PLATFORM_METRICS_BASE:-9100}"
SERVICES=(registration table wallet payout)

# shellcheck source=lib/procs.sh
source "$HERE/lib/procs.sh"

offset_of() { # the service's place in the port scheme: registration 1 ... payout 4
  case "$1" in
  registration) echo 1 ;;
  table) echo 2 ;;
  wallet) echo 3 ;;
  payout) echo 4 ;;
  esac
}
grpc_port() { echo $((GRPC_BASE + $(offset_of "$1") + 10 * ($2 - 1))); }
metrics_port() { echo $((METRICS_BASE + $(offset_of "$1") + 10 * ($2 - 1))); }

target_of() { # the round-robin gRPC target of N instances of service $1
  local service="$1" n="$2" k addresses=()
  for ((k = 1; k <= n; k++)); do
    addresses+=("127.0.0.1:$(grpc_port "$service" "$k")")
  done
  local IFS=,
  echo "ipv4:${addresses[*]}"
}

up() {
  local tables="${1:-3}" instances="${2:-2}" service k n
  for n in "$tables" "$instances"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "counts must be positive integers" >&2; exit 2; }
  done
  if [[ -z "$BOOTSTRAP" ]]; then # the local infrastructure, not one the caller names
    bash "$HERE/infra.sh" status >/dev/null || {
      echo "PostgreSQL and Kafka must be up first: bash deploy/infra.sh up" >&2
      exit 2
    }
  fi
  DB_URL="${DB_URL:-postgresql+psycopg://electric:electric@127.0.0.1:$PGPORT/electric_%s}"
  mkdir -p "$VAR/keys" "$VAR/state"
  # Exports ELECTRIC_AUTH_JWKS_FILE and each service's signing and checkpoint key files.
  eval "$("$PY" -m electric_platform.keys "$VAR/keys" --reuse --checkpoint-keys 2>/dev/null)"
  export KAFKA_BOOTSTRAP_SERVERS="${BOOTSTRAP:-127.0.0.1:$KAFKA_PORT}"
  export ELECTRIC_VAR_DIR="$VAR/state" ELECTRIC_GRPC_HOST=127.0.0.1 ELECTRIC_METRICS_HOST=127.0.0.1
  export ELECTRIC_TABLE_OWNERSHIP=partitions # read by the table service only
  for service in "${SERVICES[@]}"; do
    n="$instances"
    [[ "$service" == table ]] && n="$tables"
    export "ELECTRIC_${service^^}_TARGET=$(target_of "$service" "$n")"
  done
  for service in "${SERVICES[@]}"; do
    n="$instances"
    [[ "$service" == table ]] && n="$tables"
    for ((k = 1; k <= n; k++)); do
      if proc_running "$VAR" "$service-$k"; then
        echo "$service-$k already running (pid $(cat "$VAR/$service-$k.pid"))"
        continue
      fi
      local own=() # the table service's own settings
      if [[ "$service" == table ]]; then
        own=("ELECTRIC_TABLE_ADVERTISED_ADDRESS=127.0.0.1:$(grpc_port table "$k")")
      fi
      local url_var="ELECTRIC_PLATFORM_${service^^}_DB_URL"
      DATABASE_URL="${!url_var:-${DB_URL//%s/$service}}" \
        ELECTRIC_GRPC_PORT="$(grpc_port "$service" "$k")" \
        ELECTRIC_METRICS_PORT="$(metrics_port "$service" "$k")" \
        proc_start "$VAR" "$service-$k" env "${own[@]}" "$PY" -m "electric_$service"
      echo "$service-$k: pid $(cat "$VAR/$service-$k.pid"), gRPC 127.0.0.1:$(grpc_port "$service" "$k"), metrics $(metrics_port "$service" "$k")"
    done
  done
  echo "client targets:"
  for service in registration table; do
    n="$instances"
    [[ "$service" == table ]] && n="$tables"
    echo "  $service $(target_of "$service" "$n")"
  done
  echo "keys: $VAR/keys (mint a player token: $PY -m electric_platform.token --key $VAR/keys/issuer.jwk.json --sub alice --role player)"
}

describe() { # NAME = <service>-<k>
  local service="${1%-*}" k="${1##*-}"
  echo "gRPC 127.0.0.1:$(grpc_port "$service" "$k"), metrics $(metrics_port "$service" "$k")"
}

case "${1:-}" in
up) up "${2:-3}" "${3:-2}" ;;
status) proc_status "$VAR" describe ;;
down) proc_down "$VAR" ;;
*)
  echo "usage: $0 up [TABLES] [INSTANCES]|status|down" >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Local observability stack, no Docker: Prometheus, Alertmanager, the PostgreSQL exporter, the
# Kafka consumer-lag exporter and a webhook receiver, all on 127.0.0.1. Kafka's own metrics come
# from the JMX exporter agent deploy/kafka.sh attaches to the broker.
#
#   bash deploy/observability.sh install   Debian's prometheus, prometheus-alertmanager and
#                                          prometheus-postgres-exporter when missing (no daemon
#                                          is started by the packages); also gives promtool/amtool
#   bash deploy/observability.sh config    write the configs under $OBS_DIR only
#   bash deploy/observability.sh targets [embedded|processes]
#                                          rewrite the services' scrape targets (live)
#   bash deploy/observability.sh up        install, write configs, start what is not running
#   bash deploy/observability.sh down      stop what `up` started (pid files under $OBS_DIR/run)
#   bash deploy/observability.sh status    exit 0 when every component answers, 3 otherwise
# Also: bash deploy/infra.sh up observability (not part of a plain `infra.sh up`).
#
# Ports (127.0.0.1) and variables, defaults in brackets:
#   OBS_PROMETHEUS_PORT [9090]    Prometheus UI/API
#   OBS_ALERTMANAGER_PORT [9095]  Alertmanager (not 9093: Kafka's controller; clustering off)
#   OBS_PG_EXPORTER_PORT [9187]   postgres_exporter
#   OBS_KAFKA_LAG_PORT [9308]     deploy/kafka/lag_exporter.py
#   OBS_WEBHOOK_PORT [9099]       deploy/alertmanager/webhook_receiver.py -> $OBS_DIR/alerts.jsonl
#   OBS_TEXTFILE_PORT [9110]      deploy/observability/textfile_exporter.py over $OBS_DIR/textfile
#                                 (*.prom files of periodic jobs: deploy/audit/verify_metrics.py)
#   OBS_KAFKA_LAG_GROUPS []       regex of the consumer groups the lag exporter reports (all)
#   KAFKA_JMX_PORT [9404]         the broker's JMX exporter (deploy/kafka.sh), scraped only
#   KAFKA_PORT [9092], PGPORT [5432]
#   OBS_DEPLOYMENT [processes]    how the services run: processes | embedded (see the template)
#   ELECTRIC_<SVC>_METRICS_PORT   service metrics ports [9101 9102 9103 9104]
#   OBS_PG_DSN                    exporter DSN [postgresql://electric:electric@127.0.0.1:$PGPORT/electric]
#   OBS_PG_DATABASES              databases whose tables it reports (bloat) [electric + the 4 service DBs]
#   OBS_SCRAPE_INTERVAL [5s], OBS_EVAL_INTERVAL [15s], OBS_RETENTION [7d]
#   OBS_DIR [<repo>/var/observability]
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOST=127.0.0.1
OBS_DIR="${OBS_DIR:-$ROOT/var/observability}"
OBS_PROMETHEUS_PORT="${OBS_PROMETHEUS_PORT:-9090}"
OBS_ALERTMANAGER_PORT="${OBS_ALERTMANAGER_PORT:-9095}"
OBS_PG_EXPORTER_PORT="${OBS_PG_EXPORTER_PORT:-9187}"
OBS_KAFKA_LAG_PORT="${OBS_KAFKA_LAG_PORT:-9308}"
OBS_WEBHOOK_PORT="${OBS_WEBHOOK_PORT:-9099}"
OBS_TEXTFILE_PORT="${OBS_TEXTFILE_PORT:-9110}"
# Regex of the consumer groups the lag exporter reports (empty: all; then every topic's offsets).
OBS_KAFKA_LAG_GROUPS="${OBS_KAFKA_LAG_GROUPS:-}"
KAFKA_JMX_PORT="${KAFKA_JMX_PORT:-9404}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
PGPORT="${PGPORT:-5432}"
# Set explicitly? Otherwise `config` keeps the deployment chosen last (`targets embedded`).
OBS_DEPLOYMENT_SET="${OBS_DEPLOYMENT:+1}"
OBS_DEPLOYMENT="${OBS_DEPLOYMENT:-processes}"
OBS_PG_DSN="${OBS_PG_DSN:-postgresql://electric:electric@$HOST:$PGPORT/electric?sslmode=disable}"
OBS_PG_DATABASES="${OBS_PG_DATABASES:-electric,electric_registration,electric_table,electric_wallet,electric_payout}"
OBS_SCRAPE_INTERVAL="${OBS_SCRAPE_INTERVAL:-5s}"
OBS_EVAL_INTERVAL="${OBS_EVAL_INTERVAL:-15s}"
OBS_RETENTION="${OBS_RETENTION:-7d}"

SERVICES=(registration table wallet payout)
declare -A DEFAULT_METRICS_PORT=([registration]=9101 [table]=9102 [wallet]=9103 [payout]=9104)
PACKAGES=(prometheus prometheus-alertmanager prometheus-postgres-exporter)
# Start order; `down` goes the other way.
COMPONENTS=(webhook alertmanager pg-exporter kafka-lag textfile prometheus)

RUN_DIR="$OBS_DIR/run"
LOG_DIR="$OBS_DIR/logs"

log() { printf '[observability] %s\n' "$*" >&2; }

python_bin() {
  if [[ -x "$ROOT/.venv/bin/python" ]]; then
    echo "$ROOT/.venv/bin/python"
  else
    command -v python3
  fi
}

have_binaries() {
  command -v curl >/dev/null && command -v prometheus >/dev/null && command -v promtool >/dev/null &&
    command -v prometheus-alertmanager >/dev/null && command -v amtool >/dev/null &&
    command -v prometheus-postgres-exporter >/dev/null
}

# `install` alone (CI) only warns when it cannot install, as deploy/promtool.sh does: the tests
# that need the binaries then skip, saying why. `up` cannot do without them.
cmd_install() {
  local mode="${1:-required}"
  if have_binaries; then
    return 0
  fi
  if [[ "$(id -u)" != 0 ]]; then
    log "missing binaries and not root: run 'sudo apt-get install -y ${PACKAGES[*]} curl'"
    [[ "$mode" == optional ]] && return 0
    exit 1
  fi
  local packages=("${PACKAGES[@]}")
  command -v curl >/dev/null || packages+=(curl) # health checks of `up` and `status`
  log "installing ${packages[*]} from Debian's packages (apt-get) ..."
  # Keep the packages' maintainer scripts from starting system daemons (they would take
  # 9090/9093/9187 on every interface); ours run from this script on loopback.
  local policy=/usr/sbin/policy-rc.d created=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    created=1
  fi
  local rc=0
  export DEBIAN_FRONTEND=noninteractive
  {
    apt_get update -qq &&
      apt_get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${packages[@]}"
  } >"${TMPDIR:-/tmp}/electric-observability-apt.log" 2>&1 || rc=$?
  ((created)) && rm -f "$policy"
  if ((rc != 0)) || ! have_binaries; then
    log "apt-get failed (exit $rc); see ${TMPDIR:-/tmp}/electric-observability-apt.log"
    exit 1
  fi
  log "$(prometheus --version 2>&1 | head -n 1)"
}

# --- configuration --------------------------------------------------------------------------

metrics_port() {
  local var="ELECTRIC_${1^^}_METRICS_PORT"
  echo "${!var:-${DEFAULT_METRICS_PORT[$1]}}"
}

# The services' scrape targets (file_sd): one entry per service with its labels.
write_targets() {
  local mode="${1:-$OBS_DEPLOYMENT}"
  case "$mode" in
  processes | embedded) ;;
  *)
    log "OBS_DEPLOYMENT must be 'processes' or 'embedded', not '$mode'"
    exit 2
    ;;
  esac
  mkdir -p "$OBS_DIR/targets"
  local tmp="$OBS_DIR/targets/.electric.json.$$" sep="" svc
  {
    echo "["
    for svc in "${SERVICES[@]}"; do
      printf '%s  {"targets": ["%s:%s"], "labels": {"service": "%s", "deployment": "%s"}}' \
        "$sep" "$HOST" "$(metrics_port "$svc")" "$svc" "$mode"
      sep=$',\n'
    done
    printf '\n]\n'
  } >"$tmp"
  # Atomic: Prometheus watches the file and must never read half of it.
  mv "$tmp" "$OBS_DIR/targets/electric.json"
  echo "$mode" >"$OBS_DIR/targets/deployment"
}

fill_template() {
  sed -e "s#@ROOT@#$ROOT#g" -e "s#@OBS_DIR@#$OBS_DIR#g" \
    -e "s#@SCRAPE_INTERVAL@#$OBS_SCRAPE_INTERVAL#g" -e "s#@EVAL_INTERVAL@#$OBS_EVAL_INTERVAL#g" \
    -e "s#@PROMETHEUS_PORT@#$OBS_PROMETHEUS_PORT#g" -e "s#@ALERTMANAGER_PORT@#$OBS_ALERTMANAGER_PORT#g" \
    -e "s#@PG_EXPORTER_PORT@#$OBS_PG_EXPORTER_PORT#g" -e "s#@KAFKA_JMX_PORT@#$KAFKA_JMX_PORT#g" \
    -e "s#@KAFKA_LAG_PORT@#$OBS_KAFKA_LAG_PORT#g" -e "s#@TEXTFILE_PORT@#$OBS_TEXTFILE_PORT#g" "$1"
}

cmd_config() {
  mkdir -p "$OBS_DIR/rules" "$OBS_DIR/prometheus" "$OBS_DIR/alertmanager" "$OBS_DIR/textfile" \
    "$RUN_DIR" "$LOG_DIR"
  # Keep the deployment chosen last time (`targets embedded`) unless OBS_DEPLOYMENT says.
  local mode="$OBS_DEPLOYMENT"
  if [[ -z "$OBS_DEPLOYMENT_SET" && -f "$OBS_DIR/targets/deployment" ]]; then
    mode="$(cat "$OBS_DIR/targets/deployment")"
  fi
  write_targets "$mode"
  fill_template "$ROOT/deploy/observability/prometheus.yml.in" >"$OBS_DIR/prometheus.yml"
  # The checked-in Alertmanager config names the receiver's default port; follow ours.
  sed -e "s#http://127.0.0.1:9099/#http://$HOST:$OBS_WEBHOOK_PORT/#g" \
    "$ROOT/deploy/alertmanager/alertmanager.yml" >"$OBS_DIR/alertmanager.yml"
  log "configs in $OBS_DIR (prometheus.yml, alertmanager.yml, targets/electric.json: $mode)"
}

# --- processes ------------------------------------------------------------------------------

pid_file() { echo "$RUN_DIR/$1.pid"; }

pid_alive() {
  local f
  f="$(pid_file "$1")"
  [[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

port_of() {
  case "$1" in
  prometheus) echo "$OBS_PROMETHEUS_PORT" ;;
  alertmanager) echo "$OBS_ALERTMANAGER_PORT" ;;
  pg-exporter) echo "$OBS_PG_EXPORTER_PORT" ;;
  kafka-lag) echo "$OBS_KAFKA_LAG_PORT" ;;
  webhook) echo "$OBS_WEBHOOK_PORT" ;;
  textfile) echo "$OBS_TEXTFILE_PORT" ;;
  esac
}

health_path() {
  case "$1" in
  prometheus | alertmanager) echo "/-/ready" ;;
  webhook | textfile) echo "/-/healthy" ;;
  *) echo "/metrics" ;;
  esac
}

answers() {
  curl -fsS -o /dev/null --max-time 3 "http://$HOST:$(port_of "$1")$(health_path "$1")" 2>/dev/null
}

port_taken() {
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

launch() {
  local name="$1"
  shift
  # setsid + nohup: the process outlives this script and a Ctrl-C in the calling terminal.
  setsid nohup "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$(pid_file "$name")"
}

start_component() {
  local name="$1" port
  port="$(port_of "$name")"
  if pid_alive "$name" && answers "$name"; then
    return 0
  fi
  if ! pid_alive "$name"; then
    rm -f "$(pid_file "$name")"
    if port_taken "$port"; then
      log "$HOST:$port is taken by another process: set the port variable for $name"
      exit 1
    fi
    case "$name" in
    webhook)
      launch webhook "$(python_bin)" "$ROOT/deploy/alertmanager/webhook_receiver.py" \
        --host "$HOST" --port "$port" --out "$OBS_DIR/alerts.jsonl"
      ;;
    alertmanager)
      # --cluster.listen-address= : no gossip port (it would bind 0.0.0.0:9094).
      launch alertmanager prometheus-alertmanager --config.file="$OBS_DIR/alertmanager.yml" \
        --storage.path="$OBS_DIR/alertmanager" --web.listen-address="$HOST:$port" \
        --web.external-url="http://$HOST:$port" --cluster.listen-address= --log.level=warn
      ;;
    pg-exporter)
      DATA_SOURCE_NAME="$OBS_PG_DSN" launch pg-exporter prometheus-postgres-exporter \
        --web.listen-address="$HOST:$port" \
        --extend.query-path="$ROOT/deploy/postgres/exporter-queries.yaml" \
        --auto-discover-databases --include-databases="$OBS_PG_DATABASES" --log.level=warn
      ;;
    textfile)
      launch textfile "$(python_bin)" "$ROOT/deploy/observability/textfile_exporter.py" \
        --dir "$OBS_DIR/textfile" --host "$HOST" --port "$port"
      ;;
    kafka-lag)
      launch kafka-lag "$(python_bin)" "$ROOT/deploy/kafka/lag_exporter.py" \
        --bootstrap "$HOST:$KAFKA_PORT" --host "$HOST" --port "$port" --groups "$OBS_KAFKA_LAG_GROUPS"
      ;;
    prometheus)
      launch prometheus prometheus --config.file="$OBS_DIR/prometheus.yml" \
        --storage.tsdb.path="$OBS_DIR/prometheus" --storage.tsdb.retention.time="$OBS_RETENTION" \
        --web.listen-address="$HOST:$port" --web.external-url="http://$HOST:$port" \
        --web.enable-lifecycle --log.level=warn
      ;;
    esac
  fi
  local i
  for ((i = 0; i < 120; i++)); do
    answers "$name" && return 0
    if ! pid_alive "$name"; then
      log "$name exited during start-up; last log lines ($LOG_DIR/$name.log):"
      tail -n 20 "$LOG_DIR/$name.log" >&2 || true
      rm -f "$(pid_file "$name")"
      exit 1
    fi
    sleep 0.25
  done
  log "$name did not answer on $HOST:$port within 30 s; see $LOG_DIR/$name.log"
  exit 1
}

stop_component() {
  local name="$1" pid i
  pid_alive "$name" || {
    rm -f "$(pid_file "$name")"
    return 0
  }
  pid="$(cat "$(pid_file "$name")")"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name ($pid) ignored SIGTERM for 15 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(pid_file "$name")"
  echo "$name stopped (pid $pid)"
}

print_status() {
  local name rc=0
  for name in "${COMPONENTS[@]}"; do
    if answers "$name"; then
      printf '%-13s up    http://%s:%s\n' "$name" "$HOST" "$(port_of "$name")"
    elif pid_alive "$name"; then
      printf '%-13s alive but not answering on %s:%s\n' "$name" "$HOST" "$(port_of "$name")"
      rc=3
    else
      printf '%-13s down\n' "$name"
      rc=3
    fi
  done
  if curl -fsS -o /dev/null --max-time 3 "http://$HOST:$KAFKA_JMX_PORT/metrics" 2>/dev/null; then
    printf '%-13s up    http://%s:%s/metrics (attached by deploy/kafka.sh)\n' kafka-jmx "$HOST" "$KAFKA_JMX_PORT"
  else
    printf '%-13s not answering on %s:%s (deploy/kafka.sh attaches it when Kafka starts)\n' \
      kafka-jmx "$HOST" "$KAFKA_JMX_PORT"
  fi
  return "$rc"
}

cmd_up() {
  cmd_install
  cmd_config
  local name
  for name in "${COMPONENTS[@]}"; do
    start_component "$name"
  done
  # A Prometheus that was already running picks up regenerated configs and rule files.
  curl -fsS -o /dev/null --max-time 10 -X POST "http://$HOST:$OBS_PROMETHEUS_PORT/-/reload" || true
  curl -fsS -o /dev/null --max-time 10 -X POST "http://$HOST:$OBS_ALERTMANAGER_PORT/-/reload" || true
  print_status || true
}

cmd_down() {
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop_component "${COMPONENTS[$i]}"
  done
  echo "observability stack down ($OBS_DIR)"
}

case "${1:-}" in
install) cmd_install optional ;;
config) cmd_config ;;
targets)
  mkdir -p "$OBS_DIR"
  write_targets "${2:-$OBS_DEPLOYMENT}"
  echo "scrape targets: $(cat "$OBS_DIR/targets/deployment") ($OBS_DIR/targets/electric.json)"
  ;;
up) cmd_up ;;
down) cmd_down ;;
status) print_status ;;
*)
  echo "usage: $0 install|config|targets [embedded|processes]|up|down|status" >&2
  exit 2
  ;;
esac

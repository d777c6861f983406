#!/usr/bin/env bash
# Local Apache Kafka (KRaft, one broker+controller node) for development and tests, no Docker.
#
#   bash deploy/kafka.sh up      fetch the broker jars with Maven into a cache (once), write the
#                                config under var/kafka, format KRaft storage (once), start the
#                                broker on 127.0.0.1:$KAFKA_PORT and wait until metadata answers
#   bash deploy/kafka.sh down    stop it (SIGTERM, then SIGKILL after 60 s)
#   bash deploy/kafka.sh status  print state; exit 0 when metadata answers, 3 otherwise
#
# Environment: KAFKA_VERSION (default 3.9.1, falling back to 3.9.0 when that cannot be fetched),
# KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093), KAFKA_HEAP (512m),
# ELECTRIC_CACHE (default ~/.cache/electric-poker), ELECTRIC_KAFKA_DIR (default <repo>/var/kafka).
#
# Metrics: the Prometheus JMX exporter Java agent (io.prometheus.jmx:jmx_prometheus_javaagent,
# fetched with Maven like the broker jars) is attached to the broker and serves
# http://127.0.0.1:$KAFKA_JMX_PORT/metrics with the rules of deploy/kafka/jmx-exporter.yml.
# KAFKA_JMX_EXPORTER=0 starts the broker without it; KAFKA_JMX_PORT (9404);
# KAFKA_JMX_EXPORTER_VERSION (1.0.1). When the agent cannot be fetched, or its port is taken,
# the broker starts without it (with a warning): metrics must never keep Kafka from starting.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP="${KAFKA_HEAP:-512m}"
KAFKA_JMX_EXPORTER="${KAFKA_JMX_EXPORTER:-1}"
KAFKA_JMX_PORT="${KAFKA_JMX_PORT:-9404}"
KAFKA_JMX_EXPORTER_VERSION="${KAFKA_JMX_EXPORTER_VERSION:-1.0.1}"
HOST=127.0.0.1
CACHE="${ELECTRIC_CACHE:-${HOME:-/root}/.cache/electric-poker}"
KDIR="${ELECTRIC_KAFKA_DIR:-$ROOT/var/kafka}"
DATA_DIR="$KDIR/data"
LOG_DIR="$KDIR/logs"
PID_FILE="$KDIR/kafka.pid"
PROPS="$KDIR/server.properties"
LOG4J="$KDIR/log4j.properties"
POM="$ROOT/deploy/kafka/pom.xml"
PROBE="$ROOT/deploy/kafka/probe.py"
JMX_POM="$ROOT/deploy/kafka/jmx-agent-pom.xml"
JMX_CONFIG="$ROOT/deploy/kafka/jmx-exporter.yml"

log() { printf '[kafka] %s\n' "$*" >&2; }

python_bin() {
  if [[ -x "$ROOT/.venv/bin/python" ]]; then
    echo "$ROOT/.venv/bin/python"
  else
    command -v python3
  fi
}

probe() {
  local py
  py="$(python_bin)" || return 1
  "$py" "$PROBE" "$HOST:$KAFKA_PORT" "${1:-2}" >/dev/null 2>&1
}

pid_alive() {
  [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

libs_dir() { echo "$CACHE/kafka-$1/libs"; }

# Java (17+) runs the broker, Maven fetches it: install them from Debian's packages when
# missing and we are root.
ensure_tools() {
  local missing=()
  command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v python3 >/dev/null || [[ -x "$ROOT/.venv/bin/python" ]] || missing+=(python3)
  ((${#missing[@]} == 0)) && return 0
  if [[ "$(id -u)" != 0 ]]; then
    log "missing ${missing[*]}: run 'sudo apt-get install -y ${missing[*]}'"
    exit 1
  fi
  log "installing ${missing[*]} from Debian's packages (apt-get) ..."
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -q >/dev/null
  apt_get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

fetch_version() {
  local version="$1" libs tmp
  libs="$(libs_dir "$version")"
  [[ -f "$libs/.complete" ]] && return 0
  log "fetching Apache Kafka $version jars with Maven into $libs ..."
  tmp="$libs.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if mvn -q -B -f "$POM" -Dkafka.version="$version" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" >"$CACHE/mvn-$version.log" 2>&1 &&
    ls "$tmp"/kafka_2.13-"$version".jar >/dev/null 2>&1; then
    rm -rf "$libs"
    mv "$tmp" "$libs"
    touch "$libs/.complete"
    return 0
  fi
  log "Maven could not fetch Kafka $version (see $CACHE/mvn-$version.log):"
  tail -n 15 "$CACHE/mvn-$version.log" >&2 || true
  rm -rf "$tmp"
  return 1
}

# Sets LIBS and VERSION.
ensure_jars() {
  mkdir -p "$CACHE"
  local candidates=("${KAFKA_VERSION:-3.9.1}")
  [[ -z "${KAFKA_VERSION:-}" ]] && candidates+=(3.9.0)
  local v
  for v in "${candidates[@]}"; do
    if fetch_version "$v"; then
      VERSION="$v"
      LIBS="$(libs_dir "$v")"
      return 0
    fi
  done
  log "no Kafka 3.9.x jars could be fetched"
  exit 1
}

# Sets JMX_AGENT to the agent's -javaagent option, or to nothing when it is disabled or cannot
# be had (warning only: the broker starts either way).
ensure_jmx_agent() {
  JMX_AGENT=""
  [[ "$KAFKA_JMX_EXPORTER" == 0 ]] && return 0
  local dir="$CACHE/jmx-exporter-$KAFKA_JMX_EXPORTER_VERSION"
  local jar="$dir/jmx_prometheus_javaagent-$KAFKA_JMX_EXPORTER_VERSION.jar"
  if [[ ! -f "$jar" ]]; then
    log "fetching the Prometheus JMX exporter agent $KAFKA_JMX_EXPORTER_VERSION with Maven ..."
    local tmp="$dir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    if mvn -q -B -f "$JMX_POM" -Djmx.exporter.version="$KAFKA_JMX_EXPORTER_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" \
      >"$CACHE/mvn-jmx-exporter.log" 2>&1 && [[ -f "$tmp/${jar##*/}" ]]; then
      rm -rf "$dir"
      mv "$tmp" "$dir"
    else
      rm -rf "$tmp"
      log "WARNING: could not fetch the JMX exporter agent (see $CACHE/mvn-jmx-exporter.log);" \
        "starting Kafka without broker metrics"
      return 0
    fi
  fi
  # A taken port would make the agent abort the JVM: rather start without metrics.
  if port_taken "$KAFKA_JMX_PORT"; then
    log "WARNING: $HOST:$KAFKA_JMX_PORT is taken; starting Kafka without the JMX exporter" \
      "(set KAFKA_JMX_PORT)"
    return 0
  fi
  JMX_AGENT="-javaagent:$jar=$HOST:$KAFKA_JMX_PORT:$JMX_CONFIG"
}

port_taken() {
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

jmx_answers() {
  local py
  py="$(python_bin)" || return 1
  "$py" - "http://$HOST:$KAFKA_JMX_PORT/metrics" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.exit(0 if b"kafka_server_kafkaserver_brokerstate" in r.read() else 1)
PY
}

write_config() {
  mkdir -p "$DATA_DIR" "$LOG_DIR"
  cat >"$PROPS" <<PROPS
# Generated by deploy/kafka.sh - a single KRaft node (broker + controller) on loopback.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA_DIR
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
group.initial.rebalance.delay.ms=0
# Tests may rely on auto-creation; services create their topics explicitly.
auto.create.topics.enable=true
delete.topic.enable=true
# Event streams are the source of truth: keep everything.
log.retention.ms=-1
log.retention.bytes=-1
num.network.threads=2
num.io.threads=4
PROPS
  cat >"$LOG4J" <<LOG4J
# Generated by deploy/kafka.sh - broker logs go to $LOG_DIR.
log4j.rootLogger=INFO, serverAppender
log4j.appender.serverAppender=org.apache.log4j.RollingFileAppender
log4j.appender.serverAppender.File=$LOG_DIR/server.log
log4j.appender.serverAppender.MaxFileSize=50MB
log4j.appender.serverAppender.MaxBackupIndex=3
log4j.appender.serverAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.serverAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel\$=WARN
log4j.logger.org.apache.kafka.controller=INFO
log4j.logger.state.change.logger=WARN
LOG4J
}

java_cmd() {
  JAVA=(java "-Xms128m" "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true "-Dlog4j.configuration=file:$LOG4J" "-Dkafka.logs.dir=$LOG_DIR"
    -cp "$LIBS/*")
}

format_storage() {
  [[ -f "$DATA_DIR/meta.properties" ]] && return 0
  local cluster_id
  cluster_id="$("${JAVA[@]}" kafka.tools.StorageTool random-uuid 2>>"$LOG_DIR/format.log" | tail -n 1)"
  log "formatting KRaft storage (cluster id $cluster_id)"
  "${JAVA[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS" --ignore-formatted \
    >>"$LOG_DIR/format.log" 2>&1 || {
    tail -n 20 "$LOG_DIR/format.log" >&2
    exit 1
  }
}

running_version() {
  local v=""
  if [[ -f "$LOG_DIR/server.log" ]]; then
    v="$(grep -o 'Kafka version: [0-9.]*' "$LOG_DIR/server.log" 2>/dev/null | tail -n 1 | awk '{print $3}' || true)"
  fi
  if [[ -z "$v" && -f "$KDIR/version" ]]; then
    v="$(cat "$KDIR/version")"
  fi
  echo "${v:-unknown}"
}

report_up() {
  echo "Kafka $(running_version) (KRaft) up on $HOST:$KAFKA_PORT"
  [[ "$KAFKA_JMX_EXPORTER" == 0 ]] && return 0
  if jmx_answers; then
    echo "Kafka JMX exporter on http://$HOST:$KAFKA_JMX_PORT/metrics"
  else
    echo "Kafka JMX exporter not answering on $HOST:$KAFKA_JMX_PORT (broker started without it?" \
      "'bash deploy/kafka.sh down' then 'up' attaches it)"
  fi
}

cmd_up() {
  if probe 2; then
    report_up
    return 0
  fi
  ensure_tools
  ensure_jars
  write_config
  java_cmd
  if pid_alive; then
    log "broker process $(cat "$PID_FILE") is alive but not answering yet; waiting"
  else
    format_storage
    ensure_jmx_agent
    log "starting Kafka $VERSION on $HOST:$KAFKA_PORT (data $DATA_DIR, logs $LOG_DIR)"
    echo "$VERSION" >"$KDIR/version"
    : >"$LOG_DIR/server.log"
    # The agent only on the broker (not on StorageTool): it binds its port when the JVM starts.
    local cmd=("${JAVA[@]}")
    [[ -n "$JMX_AGENT" ]] && cmd=("${JAVA[0]}" "$JMX_AGENT" "${JAVA[@]:1}")
    # setsid + nohup: the broker outlives this script and a Ctrl-C in the calling terminal.
    setsid nohup "${cmd[@]}" kafka.Kafka "$PROPS" >"$LOG_DIR/stdout.log" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
  fi
  local i
  for ((i = 0; i < 240; i++)); do
    if probe 2; then
      report_up
      return 0
    fi
    if ! pid_alive; then
      log "broker exited during start-up; last log lines:"
      tail -n 30 "$LOG_DIR/server.log" "$LOG_DIR/stdout.log" >&2 || true
      rm -f "$PID_FILE"
      exit 1
    fi
    sleep 0.5
  done
  log "broker did not answer a metadata request within 120 s; see $LOG_DIR/server.log"
  exit 1
}

cmd_down() {
  if ! pid_alive; then
    rm -f "$PID_FILE"
    echo "Kafka not running from $KDIR"
    return 0
  fi
  local pid i
  pid="$(cat "$PID_FILE")"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 120; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "broker $pid ignored SIGTERM for 60 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  echo "Kafka stopped (pid $pid)"
}

cmd_status() {
  if probe 2; then
    report_up
    return 0
  fi
  if pid_alive; then
    echo "Kafka process $(cat "$PID_FILE") alive but not answering on $HOST:$KAFKA_PORT"
  else
    echo "Kafka down on $HOST:$KAFKA_PORT"
  fi
  return 3
}

# ------------------------------------------------------------------ a replicated cluster
#
#   bash deploy/kafka.sh cluster up        one KRaft controller and 3 brokers on loopback:
#                                          brokers 1..3 on $KAFKA_CLUSTER_PORT, +1, +2, the
#                                          controller on $KAFKA_CLUSTER_CONTROLLER_PORT
#   bash deploy/kafka.sh cluster down      stop them all
#   bash deploy/kafka.sh cluster status    exit 0 when all three brokers answer
#   bash deploy/kafka.sh cluster kill N    SIGKILL broker N (1..3)
#   bash deploy/kafka.sh cluster wipe N    SIGKILL broker N and delete its data (a disk lost)
#   bash deploy/kafka.sh cluster start N   (re)start broker N; a wiped one is formatted anew
#                                          with the cluster's id and the same node id: the
#                                          replacement re-replicates its partitions
#
# What production runs (docs/running.md): topics with replication factor 3 and
# min.insync.replicas=2 (ELECTRIC_KAFKA_REPLICATION_FACTOR=3; the platform's topics then get
# min.insync.replicas=2), idempotent producers with acks=all (always). Here the controller is
# one process (the local quorum of 1; production runs 3 controllers): the faults this cluster
# exists for are a broker's (docs/chaos.md). Environment: KAFKA_CLUSTER_PORT (19192),
# KAFKA_CLUSTER_CONTROLLER_PORT (19199), ELECTRIC_KAFKA_CLUSTER_DIR (<repo>/var/kafka-cluster),
# KAFKA_CLUSTER_HEAP (384m).
CLUSTER_PORT="${KAFKA_CLUSTER_PORT:-19192}"
CLUSTER_CONTROLLER_PORT="${KAFKA_CLUSTER_CONTROLLER_PORT:-19199}"
CDIR="${ELECTRIC_KAFKA_CLUSTER_DIR:-$ROOT/var/kafka-cluster}"
CONTROLLER_ID=100

node_dir() { echo "$CDIR/node-$1"; }
broker_port() { echo $((CLUSTER_PORT + $1 - 1)); }
node_pid_alive() { [[ -f "$(node_dir "$1")/pid" ]] && kill -0 "$(cat "$(node_dir "$1")/pid")" 2>/dev/null; }

cluster_props() { # id role
  local id="$1" role="$2" dir
  dir="$(node_dir "$id")"
  mkdir -p "$dir/data" "$dir/logs"
  local listeners advertised=""
  if [[ "$role" == controller ]]; then
    listeners="CONTROLLER://$HOST:$CLUSTER_CONTROLLER_PORT"
  else
    listeners="PLAINTEXT://$HOST:$(broker_port "$id")"
    advertised="advertised.listeners=PLAINTEXT://$HOST:$(broker_port "$id")"
  fi
  cat >"$dir/server.properties" <<PROPS
# Generated by deploy/kafka.sh cluster - node $id ($role) of a local replicated cluster.
process.roles=$role
node.id=$id
controller.quorum.voters=$CONTROLLER_ID@$HOST:$CLUSTER_CONTROLLER_PORT
listeners=$listeners
$advertised
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
unclean.leader.election.enable=false
delete.topic.enable=true
log.retention.ms=-1
log.retention.bytes=-1
num.network.threads=2
num.io.threads=2
replica.lag.time.max.ms=10000
PROPS
  sed "s#$LOG_DIR#$dir/logs#g" "$LOG4J" >"$dir/log4j.properties"
}

cluster_java() { # id
  local dir
  dir="$(node_dir "$1")"
  NODE_JAVA=(java "-Xms96m" "-Xmx${KAFKA_CLUSTER_HEAP:-384m}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true "-Dlog4j.configuration=file:$dir/log4j.properties"
    "-Dkafka.logs.dir=$dir/logs" -cp "$LIBS/*")
}

cluster_start_node() { # id role
  local id="$1" role="$2" dir cluster_id
  dir="$(node_dir "$id")"
  node_pid_alive "$id" && return 0
  cluster_props "$id" "$role"
  cluster_java "$id"
  cluster_id="$(cat "$CDIR/cluster.id")"
  if [[ ! -f "$dir/data/meta.properties" ]]; then
    "${NODE_JAVA[@]}" kafka.tools.StorageTool format -t "$cluster_id" \
      -c "$dir/server.properties" --ignore-formatted >>"$dir/logs/format.log" 2>&1 || {
      tail -n 20 "$dir/logs/format.log" >&2
      exit 1
    }
  fi
  : >"$dir/logs/server.log"
  setsid nohup "${NODE_JAVA[@]}" kafka.Kafka "$dir/server.properties" \
    >"$dir/logs/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  log "node $id ($role) started, pid $(cat "$dir/pid")"
}

cluster_wait_broker() { # id
  local py i
  py="$(python_bin)"
  for ((i = 0; i < 240; i++)); do
    "$py" "$PROBE" "$HOST:$(broker_port "$1")" 2 >/dev/null 2>&1 && return 0
    node_pid_alive "$1" || {
      log "broker $1 exited during start-up:"
      tail -n 30 "$(node_dir "$1")/logs/server.log" >&2 || true
      exit 1
    }
    sleep 0.5
  done
  log "broker $1 did not answer within 120 s"
  exit 1
}

cluster_stop_node() { # id [signal]
  local dir pid i
  dir="$(node_dir "$1")"
  node_pid_alive "$1" || {
    rm -f "$dir/pid"
    return 0
  }
  pid="$(cat "$dir/pid")"
  kill "-${2:-TERM}" "$pid" 2>/dev/null || true
  for ((i = 0; i < 120; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

cluster_bootstrap() { echo "$HOST:$(broker_port 1),$HOST:$(broker_port 2),$HOST:$(broker_port 3)"; }

cmd_cluster() {
  local what="${1:-}" n="${2:-}"
  case "$what" in
  up)
    ensure_tools
    ensure_jars
    mkdir -p "$CDIR"
    write_config # the single node's log4j file, the template of the nodes' own
    java_cmd
    [[ -f "$CDIR/cluster.id" ]] ||
      "${JAVA[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$CDIR/cluster.id"
    cluster_start_node "$CONTROLLER_ID" controller
    for n in 1 2 3; do cluster_start_node "$n" broker; done
    for n in 1 2 3; do cluster_wait_broker "$n"; done
    echo "Kafka cluster (3 brokers, replication factor 3, min.insync.replicas 2) up on $(cluster_bootstrap)"
    ;;
  down)
    for n in 1 2 3; do cluster_stop_node "$n"; done
    cluster_stop_node "$CONTROLLER_ID"
    echo "Kafka cluster stopped ($CDIR)"
    ;;
  status)
    local py ok=0
    py="$(python_bin)"
    for n in 1 2 3; do
      if "$py" "$PROBE" "$HOST:$(broker_port "$n")" 2 >/dev/null 2>&1; then
        echo "broker $n up on $HOST:$(broker_port "$n")"
      else
        echo "broker $n down on $HOST:$(broker_port "$n")"
        ok=3
      fi
    done
    return "$ok"
    ;;
  kill) cluster_stop_node "${n:?broker number}" KILL && echo "broker $n killed" ;;
  wipe)
    cluster_stop_node "${n:?broker number}" KILL
    rm -rf "$(node_dir "$n")/data"
    echo "broker $n killed and its data deleted"
    ;;
  start)
    ensure_jars
    write_config
    cluster_start_node "${n:?broker number}" broker
    cluster_wait_broker "$n"
    echo "broker $n up on $HOST:$(broker_port "$n")"
    ;;
  *)
    echo "usage: $0 cluster up|down|status|kill N|wipe N|start N" >&2
    exit 2
    ;;
  esac
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
cluster) cmd_cluster "${2:-}" "${3:-}" ;;
*)
  echo "usage: $0 up|down|status|cluster ..." >&2
  exit 2
  ;;
esac

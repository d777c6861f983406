# Shared by deploy/tables.sh and deploy/platform.sh: service processes tracked by pid files
# `<var>/<name>.pid` (logs beside them, `<name>.log`). Source it; it defines functions only.

# proc_running VAR NAME: the pid file of NAME names a live process.
proc_running() {
  local pidfile="$1/$2.pid"
  [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# proc_start VAR NAME CMD...: start CMD detached (environment as given by the caller), logging
# to VAR/NAME.log; NAME's pid goes to VAR/NAME.pid.
proc_start() {
  local var="$1" name="$2"
  shift 2
  mkdir -p "$var"
  nohup "$@" >>"$var/$name.log" 2>&1 </dev/null &
  echo $! >"$var/$name.pid"
}

# proc_status VAR [DESCRIBE]: one line per pid file; DESCRIBE NAME prints extra words for a
# running NAME. Returns 0 when any process runs, 3 when none does.
proc_status() {
  local var="$1" describe="${2:-}" rc=3 f name
  shopt -s nullglob
  for f in "$var"/*.pid; do
    name="${f##*/}"
    name="${name%.pid}"
    if proc_running "$var" "$name"; then
      echo "$name: running (pid $(cat "$f"))${describe:+, $($describe "$name")}"
      rc=0
    else
      echo "$name: stopped"
    fi
  done
  return "$rc"
}

# proc_down VAR: SIGTERM every process of VAR at once, SIGKILL whichever still runs 20 s later,
# then remove the pid files.
proc_down() {
  local var="$1" f pid waited alive
  local pids=()
  shopt -s nullglob
  for f in "$var"/*.pid; do
    pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      pids+=("$pid")
    fi
  done
  for ((waited = 0; waited < 200; waited++)); do
    alive=0
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  done
  rm -f "$var"/*.pid
}

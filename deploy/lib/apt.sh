# shellcheck shell=bash
# apt_get ARGS...: apt-get for the project's scripts, safe when several run at once.
#
# The scripts install their Debian packages on first use, and CI runs tests in parallel
# workers: two apt-get runs at once make the second fail on dpkg's lock (exit 100; seen in
# CI when the PostgreSQL HA test installed pg_auto_failover while another test's apt ran).
# So every run here takes one lock of ours (flock, waiting up to 15 minutes), also waits for
# dpkg's own lock (a system apt that is not ours), and is tried 3 times 10 s apart (a
# mirror's moment of trouble during `update`).
APT_LOCK="${ELECTRIC_APT_LOCK:-/var/lock/electric-poker-apt.lock}"

apt_get() {
  local attempt rc=0
  for attempt in 1 2 3; do
    rc=0
    flock -w 900 "$APT_LOCK" apt-get -o DPkg::Lock::Timeout=600 "$@" || rc=$?
    ((rc == 0)) && return 0
    ((attempt < 3)) && echo "apt-get $1 failed (exit $rc), attempt $attempt of 3" >&2 && sleep 10
  done
  return "$rc"
}

#!/usr/bin/env bash
# Installs promtool (Prometheus' rule checker, from Debian's `prometheus` package) when it is
# missing, without starting a Prometheus server. (`deploy/observability.sh install` installs it
# too, with Alertmanager's amtool and the PostgreSQL exporter.) The alert-rule tests use it; without it they
# skip. Idempotent and quick when promtool is already on PATH.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
if command -v promtool >/dev/null 2>&1; then
  promtool --version 2>&1 | head -n 1
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "promtool missing and not root: install Debian's prometheus package to run the rule tests" >&2
  exit 0
fi
# Keep the package's maintainer scripts from starting a server.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt_get update -qq
apt_get install -y -qq --no-install-recommends prometheus >/dev/null
# No server to stop: policy-rc.d kept the package from starting one (and a broad kill here
# would take down the Prometheus of deploy/observability.sh).
promtool --version 2>&1 | head -n 1

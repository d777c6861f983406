#!/usr/bin/env bash
# Breaking-change check of protos/ against the previous commit of main. Skips, saying so,
# when there is no previous commit or it had no protos yet.
set -euo pipefail
buf="$(realpath "$1")"
top="$(git rev-parse --show-toplevel)"
cd "$top"
if ! prev="$(git rev-parse --verify -q 'HEAD~1' 2>/dev/null)"; then
  echo "buf breaking: no previous commit of main, skipped"
  exit 0
fi
if ! git cat-file -e "${prev}:protos/buf.yaml" 2>/dev/null; then
  echo "buf breaking: previous commit ${prev:0:12} has no protos/buf.yaml, skipped"
  exit 0
fi
cd protos
"$buf" breaking --against "${top}/.git#ref=${prev},subdir=protos"

#!/usr/bin/env bash
# `npm run bench -- [options]`: --help answers at once; anything else first makes sure the machine
# has what the bench measures with (scripts/setup.sh --with-real-clients, quiet when it is there),
# then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case "$arg" in
    -h | --help) exec node --import tsx bench/cni-bench.ts --help ;;
  esac
done
bash scripts/setup.sh --with-real-clients
exec node --import tsx bench/cni-bench.ts "$@"

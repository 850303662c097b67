#!/bin/bash
# The light commands alone (kgsearch --help, stats, embed status, table and --json), 20
# runs each after 3 warm-ups, on a migrated copy of the demo database (run `make demo`
# first), this checkout only. Run it under the benchmark lock:
#
#   flock /tmp/kgsearch-bench.lock scripts/bench_cli_light.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
unset PYTHONDONTWRITEBYTECODE
cp .demo/kgsearch.db "$WORK/after.db"
KG=.venv/bin/kgsearch
$KG --db "$WORK/after.db" init > /dev/null
date -u; uptime
hyperfine -N --runs 20 --warmup 3 \
  -n 'python -c pass' '.venv/bin/python -c pass' \
  -n 'kgsearch --help' "$KG --help" \
  -n 'kgsearch stats' "$KG --db $WORK/after.db stats" \
  -n 'kgsearch embed status' "$KG --db $WORK/after.db embed status" \
  -n 'kgsearch --json stats' "$KG --db $WORK/after.db --json stats" \
  -n 'kgsearch --json embed status' "$KG --db $WORK/after.db --json embed status"
uptime

#!/bin/bash
# The light commands alone (kgsearch --help, stats, embed status, objects get/list,
# relationships get/list, table and --json), 20 runs each after 3 warm-ups, on a
# migrated copy of the demo database (run `make demo` first), this checkout only; and
# `objects get` / `relationships list` by the engine (the read-only path switched off)
# to compare. Run it under the benchmark lock:
#
#   flock /tmp/kgsearch-bench.lock scripts/bench_cli_light.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
unset PYTHONDONTWRITEBYTECODE
cp .demo/kgsearch.db "$WORK/after.db"
KG=.venv/bin/kgsearch
$KG --db "$WORK/after.db" init > /dev/null
REL=$($KG --db "$WORK/after.db" --json relationships list -n 1 | .venv/bin/python -c \
  'import json, sys; print(json.load(sys.stdin)["items"][0]["id"])')
# the CLI with the read-only path of objects/relationships switched off (the engine reads)
cat > "$WORK/engine.py" << 'EOF'
import sys
import kgsearch.cli.rows
from kgsearch.cli.root import main
kgsearch.cli.rows.rows_read_only = lambda state, read: None
sys.argv[0] = "kgsearch"
main()
EOF
ENGINE=".venv/bin/python $WORK/engine.py"
date -u; uptime
hyperfine -N --runs 20 --warmup 3 \
  -n 'python -c pass' '.venv/bin/python -c pass' \
  -n 'kgsearch --help' "$KG --help" \
  -n 'kgsearch stats' "$KG --db $WORK/after.db stats" \
  -n 'kgsearch embed status' "$KG --db $WORK/after.db embed status" \
  -n 'kgsearch --json stats' "$KG --db $WORK/after.db --json stats" \
  -n 'kgsearch --json embed status' "$KG --db $WORK/after.db --json embed status" \
  -n 'kgsearch objects get' "$KG --db $WORK/after.db objects get Movie/Casablanca" \
  -n 'kgsearch --json objects get' "$KG --db $WORK/after.db --json objects get Movie/Casablanca" \
  -n 'kgsearch objects list' "$KG --db $WORK/after.db objects list" \
  -n 'kgsearch --json objects list' "$KG --db $WORK/after.db --json objects list" \
  -n 'kgsearch relationships get' "$KG --db $WORK/after.db relationships get $REL" \
  -n 'kgsearch --json relationships get' "$KG --db $WORK/after.db --json relationships get $REL" \
  -n 'kgsearch relationships list' "$KG --db $WORK/after.db relationships list" \
  -n 'kgsearch --json relationships list' "$KG --db $WORK/after.db --json relationships list" \
  -n 'kgsearch objects get, by the engine' "$ENGINE --db $WORK/after.db objects get Movie/Casablanca" \
  -n 'kgsearch relationships list, by the engine' "$ENGINE --db $WORK/after.db relationships list"
uptime

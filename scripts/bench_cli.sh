#!/bin/bash
# CLI start-up before and after: hyperfine over `kgsearch --help`, `search --help`,
# `stats` and `search` on the demo database (run `make demo` first), in process and
# through a running `kgsearch serve`. Each side is an exported copy of src/ on
# PYTHONPATH in the same virtualenv. Run it under the benchmark lock:
#
#   flock /tmp/kgsearch-bench.lock scripts/bench_cli.sh [BEFORE_REF] [AFTER_REF]
#
# and copy the figures (with the load averages it prints) into docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE_REF=${1:-2b9ff89}
AFTER_REF=${2:-HEAD}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for side in before after; do
  ref=$([ $side = before ] && echo "$BEFORE_REF" || echo "$AFTER_REF")
  mkdir -p "$WORK/$side" && git archive "$ref" src | tar -x -C "$WORK/$side"
  echo "$side = $(git rev-parse --short "$ref")"
done
export KGSEARCH_RUNTIME_DIR="$WORK/run"
# Python writes and reuses bytecode, as for an installed package (the warm-up runs write
# it): with PYTHONDONTWRITEBYTECODE set, every run would compile each kgsearch module of
# the exported copies from source again, about a fifth of `stats`.
unset PYTHONDONTWRITEBYTECODE
DB=.demo/kgsearch.db
Q='who directed Jesse James'
B="PYTHONPATH=$WORK/before/src"
A="PYTHONPATH=$WORK/after/src"
KG=.venv/bin/kgsearch
date -u; uptime
hyperfine -N --runs 10 --warmup 2 \
  -n 'python -c pass' '.venv/bin/python -c pass' \
  -n 'before: kgsearch --help' "env $B $KG --help" \
  -n 'after: kgsearch --help' "env $A $KG --help" \
  -n 'before: kgsearch search --help' "env $B $KG search --help" \
  -n 'after: kgsearch search --help' "env $A $KG search --help" \
  -n 'before: kgsearch stats' "env $B $KG --db $DB stats" \
  -n 'after: kgsearch stats' "env $A $KG --db $DB stats"
uptime
hyperfine -N --runs 10 --warmup 2 \
  -n 'before: kgsearch search (in process)' "env $B $KG --db $DB search '$Q' --limit 5" \
  -n 'after: kgsearch search (in process, no server)' "env $A $KG --db $DB search '$Q' --limit 5"
uptime
env $A $KG --db $DB serve --no-auth --port 0 --no-worker > "$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 120); do ls "$KGSEARCH_RUNTIME_DIR"/server-*.json >/dev/null 2>&1 && break; sleep 0.5; done
env $A $KG --db $DB search "$Q" --limit 5 > /dev/null   # the server loads its model
hyperfine -N --runs 20 --warmup 2 \
  -n 'after: kgsearch search (through a running kgsearch serve)' "env $A $KG --db $DB search '$Q' --limit 5" \
  -n 'after: kgsearch --json search (through the server)' "env $A $KG --db $DB --json search '$Q' --limit 5"
uptime
kill -INT $SERVER; wait $SERVER || true
echo "searches answered by the server: $(grep -c 'POST /api/search/unified HTTP/1.1" 200' "$WORK/serve.log")"

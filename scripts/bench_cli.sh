#!/bin/bash
# CLI start-up before and after: hyperfine over `kgsearch --help`, `search --help`,
# `stats`, `embed status` and `search` on the demo database (run `make demo` first), in
# process (stats and embed status: read-only, without the engine) and through a running
# `kgsearch serve` (search, and stats with --server), and the first
# search through a server just started, with and without its warm-up. Each side is an exported copy of src/ on
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
# each side reads its own copy of the demo database, the after side's migrated by its
# code first (a newer schema is refused by older code)
cp .demo/kgsearch.db "$WORK/before.db" && cp .demo/kgsearch.db "$WORK/after.db"
Q='who directed Jesse James'
B="PYTHONPATH=$WORK/before/src"
A="PYTHONPATH=$WORK/after/src"
KG=.venv/bin/kgsearch
env $A $KG --db "$WORK/after.db" init > /dev/null
date -u; uptime
hyperfine -N --runs 10 --warmup 2 \
  -n 'python -c pass' '.venv/bin/python -c pass' \
  -n 'before: kgsearch --help' "env $B $KG --help" \
  -n 'after: kgsearch --help' "env $A $KG --help" \
  -n 'before: kgsearch search --help' "env $B $KG search --help" \
  -n 'after: kgsearch search --help' "env $A $KG search --help" \
  -n 'before: kgsearch stats' "env $B $KG --db $WORK/before.db stats" \
  -n 'after: kgsearch stats' "env $A $KG --db $WORK/after.db stats" \
  -n 'before: kgsearch embed status' "env $B $KG --db $WORK/before.db embed status" \
  -n 'after: kgsearch embed status' "env $A $KG --db $WORK/after.db embed status" \
  -n 'after: kgsearch --json stats' "env $A $KG --db $WORK/after.db --json stats" \
  -n 'after: kgsearch --json embed status' "env $A $KG --db $WORK/after.db --json embed status"
uptime
hyperfine -N --runs 10 --warmup 2 \
  -n 'before: kgsearch search (in process)' "env $B $KG --db $WORK/before.db search '$Q' --limit 5" \
  -n 'after: kgsearch search (in process, no server)' "env $A $KG --db $WORK/after.db search '$Q' --limit 5"
uptime
# wait for the server's discovery file; print its URL
serving() {
  for _ in $(seq 1 240); do
    ls "$KGSEARCH_RUNTIME_DIR"/server-*.json >/dev/null 2>&1 && break; sleep 0.25
  done
  .venv/bin/python -c 'import glob, json, sys; print(json.load(open(glob.glob(sys.argv[1])[0]))["url"])' \
    "$KGSEARCH_RUNTIME_DIR/server-*.json"
}
# The first search through a server just started (one run each): without the warm-up,
# then with it (searched once /health says warm = ready).
env $A $KG --db "$WORK/after.db" serve --no-auth --port 0 --no-worker --no-warm > "$WORK/cold.log" 2>&1 &
SERVER=$!
serving > /dev/null
hyperfine -N --runs 1 \
  -n 'after: first search through a server started with --no-warm' "env $A $KG --db $WORK/after.db search '$Q' --limit 5"
kill -INT $SERVER; wait $SERVER || true
env $A $KG --db "$WORK/after.db" serve --no-auth --port 0 --no-worker > "$WORK/serve.log" 2>&1 &
SERVER=$!
URL=$(serving)
STARTED=$(date +%s.%N)
for _ in $(seq 1 1200); do curl -s "$URL/health" | grep -q '"warm":"ready"' && break; sleep 0.05; done
echo "warm = ready $(echo "$(date +%s.%N) - $STARTED" | bc) s after the server answered"
hyperfine -N --runs 1 \
  -n 'after: first search through a warmed server' "env $A $KG --db $WORK/after.db search '$Q' --limit 5"
hyperfine -N --runs 20 --warmup 2 \
  -n 'after: kgsearch search (through a running kgsearch serve)' "env $A $KG --db $WORK/after.db search '$Q' --limit 5" \
  -n 'after: kgsearch --json search (through the server)' "env $A $KG --db $WORK/after.db --json search '$Q' --limit 5" \
  -n 'after: kgsearch stats (through the server)' "env $A $KG --db $WORK/after.db stats --server $URL" \
  -n 'after: kgsearch --json stats (through the server)' "env $A $KG --db $WORK/after.db --json stats --server $URL"
uptime
kill -INT $SERVER; wait $SERVER || true
echo "searches answered by the servers: $(cat "$WORK/cold.log" "$WORK/serve.log" | grep -c 'POST /api/search/unified HTTP/1.1" 200')"

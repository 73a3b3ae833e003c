#!/usr/bin/env bash
# remat's MILP against CBC on the same MILP (bench/cbc_bench.c): installs
# CBC (Debian's coinor-cbc) when `cbc` is missing, builds, and runs
# remat_bench_engine, writing the markdown to docs/bench/cbc.md (progress on
# stderr; with --format csv|json, stdout only). Arguments go to remat_bench_engine, e.g.
#
#   bench/cbc.sh                          # the full benchmark: hours
#   bench/cbc.sh --quick                  # a smoke run: seconds
#   bench/cbc.sh --only linear --out /tmp/linear.md
#
# CBC is only ever needed here: never by the build, the demo or the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cbc >/dev/null 2>&1; then
    echo "cbc.sh: cbc not found; installing coinor-cbc" >&2
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y coinor-cbc
fi
REMAT_BUILD_TARGET=remat_bench_engine ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}"
dir="${REMAT_BUILD_DIR:-build}"
# The document is the markdown: another --out, or csv / json (--format), leaves it alone.
out=(--out docs/bench/cbc.md)
prev=
for a in "$@"; do
    case "$a" in --out | --out=* | --format=csv | --format=json) out=() ;; esac
    [ "$prev" = --format ] && [ "$a" != md ] && out=()
    prev=$a
done
mkdir -p docs/bench
exec "$dir/bench/remat_bench_engine" "${out[@]}" "$@"

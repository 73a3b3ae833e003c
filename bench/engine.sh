#!/usr/bin/env bash
# The MILP's engines side by side (bench/engine_bench.c): makes the bench's
# own virtual environment (build/bench-venv, or $REMAT_BENCH_VENV) with
# HiGHS (PyPI highspy) for the reference column, builds, and runs
# remat_bench_engine, writing the markdown to docs/bench/engines.md
# (progress on stderr; with --format csv|json, stdout only). Arguments go to
# remat_bench_engine, e.g.
#
#   bench/engine.sh                          # every instance, 60 s each: many hours
#   bench/engine.sh --quick                  # a smoke run: a minute
#   bench/engine.sh --only linear --out /tmp/linear.md
#
# highspy is only ever needed here: never by the build, the demo or the
# tests. Where pip cannot install it (no network), the table's HiGHS column
# says "not installed" and the rest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${REMAT_BUILD_DIR:-build}"
venv="${REMAT_BENCH_VENV:-$dir/bench-venv}"
highs=()
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import highspy' 2>/dev/null; then
    echo "engine.sh: installing highspy into $venv" >&2
    { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet highspy; } >&2 ||
        echo "engine.sh: highspy could not be installed: HiGHS: not installed" >&2
fi
"$venv/bin/python" -c 'import highspy' 2>/dev/null && highs=(--highs "$venv/bin/python")
mkdir -p "$dir"
REMAT_BUILD_TARGET=remat_bench_engine ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}"
# The document is the markdown: another --out, or csv / json (--format), leaves it alone.
out=(--out docs/bench/engines.md)
prev=
for a in "$@"; do
    case "$a" in --out | --out=* | --format=csv | --format=json) out=() ;; esac
    [ "$prev" = --format ] && [ "$a" != md ] && out=()
    prev=$a
done
mkdir -p docs/bench
exec "$dir/bench/remat_bench_engine" "${highs[@]}" "${out[@]}" "$@"

#!/usr/bin/env bash
# Scale (issue 13): `remat plan` on problems of 100,000 nodes and on a wide
# fan-in, and `remat graph` of a 100,000-layer config, each timed with its
# peak memory (GNU time's maximum resident set), against the goals: every
# plan under 10 s and 1 GB, the fan-in of 2000 under ogc under 5 s, the
# graph under 10 s. The problems come from bench/scale_gen.c:
#   chain  a training chain of 100,001 nodes (50,000 forward)
#   dag    a random training DAG of 100,045 nodes (33,333 forward, each
#          reading its predecessor and up to 7 of the 256 values before it)
#   fanin  one node reading 2000 branches off the input (4005 nodes)
# checkpoint_all runs at 100% of the no-remat peak (it cannot go lower), the
# other strategies at 60% (on the fan-in at 100%: its lower bound is 98%).
# Each run is stopped after --limit seconds.
#
#   bench/scale.sh [--out FILE] [--limit S]
#
# --out: the markdown (default docs/bench/scale.md; '-' for stdout only).
# Builds remat and the generator first. About 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/bench/scale.md limit=120
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "scale.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
    esac
done
command -v /usr/bin/time >/dev/null || { echo "scale.sh: needs GNU time (Debian package 'time')" >&2; exit 1; }
REMAT_BUILD_TARGET="remat remat_bench_scale_gen" ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}"
dir="${REMAT_BUILD_DIR:-build}"
remat="$dir/remat" gen="$dir/bench/remat_bench_scale_gen"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" chain 100000 "$tmp/chain.txt" >&2
"$gen" dag 100000 8 1 "$tmp/dag.txt" >&2
"$gen" fanin 2000 "$tmp/fanin.txt" >&2
printf '[net]\nchannels=1\nheight=4\nwidth=4\n[repeat]\ncount=100000\n[relu]\n[end]\n[linear]\nout=2\n[softmax_xent]\n' \
    >"$tmp/layers.cfg"

# run NAME CMD...: one timed run; prints "seconds|MB|exit" and keeps stdout.
run() {
    local name=$1; shift
    local rc=0
    /usr/bin/time -f '%e %M' -o "$tmp/$name.time" timeout "$limit" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    local secs kb mb
    # GNU time writes "Command exited with non-zero status N" first on failure.
    read -r secs kb < <(tail -n 1 "$tmp/$name.time") || secs=? kb=0
    [ "$rc" -eq 124 ] && secs=">$limit"
    mb=$((kb / 1024))
    echo "$secs|$mb|$rc"
}

rows=()
for g in chain dag fanin; do
    for s in checkpoint_all chen_greedy griewank ogc; do
        budget=60%
        [ "$s" = checkpoint_all ] || [ "$g" = fanin ] && budget=100%
        echo "scale: $g $s ..." >&2
        res=$(run "$g-$s" "$remat" plan --problem "$tmp/$g.txt" --budget "$budget" --strategy "$s" --quiet \
            --format csv)
        IFS='|' read -r secs mb rc <<<"$res"
        # The csv row: strategy,status,overhead_pct,cost,peak_bytes,...
        row=$(sed -n 2p "$tmp/$g-$s.out")
        status=$(echo "$row" | cut -d, -f2) over=$(echo "$row" | cut -d, -f3) peak=$(echo "$row" | cut -d, -f5)
        [ "$rc" -eq 124 ] && status="stopped"
        if [ -z "$status" ]; then
            status="error: $(head -c 60 "$tmp/$g-$s.err")"
            grep -q "no schedule fits\|found no schedule" "$tmp/$g-$s.err" && status="nothing fits"
        fi
        goal=10
        [ "$g" = fanin ] && [ "$s" = ogc ] && goal=5
        verdict=yes
        if [ "$rc" -eq 124 ] || awk -v s="$secs" -v g="$goal" -v m="$mb" 'BEGIN { exit !(s > g || m > 1024) }'; then
            verdict=no
        fi
        over_s=$([ -n "$over" ] && printf '%+.1f%%' "$over" || echo "-")
        peak_s=$([ -n "$peak" ] && awk -v b="$peak" 'BEGIN { printf "%.2f GiB", b / 1073741824 }' || echo "-")
        rows+=("| $g | $s | $budget | $status | $over_s | $peak_s | $secs | $mb | < $goal s, < 1 GB: $verdict |")
    done
done
echo "scale: graph of 100,000 layers ..." >&2
res=$(run graph "$remat" graph --model "$tmp/layers.cfg" --batch 1)
IFS='|' read -r gsecs gmb grc <<<"$res"
gverdict=yes
awk -v s="$gsecs" 'BEGIN { exit !(s > 10) }' && gverdict=no
[ "$grc" -eq 0 ] || gverdict="no (exit $grc)"

{
    echo "# Scale: 100,000-node problems"
    echo
    echo "Produced by \`bench/scale.sh\` on $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d). Seconds are wall"
    echo "clock for the whole command (reading the problem included); MB is the peak resident set, of which about"
    echo "220 MB is the CUDA libraries \`remat\` links (\`remat --help\` alone takes as much)."
    echo
    echo "| graph | strategy | budget | status | compute overhead | peak | seconds | MB | goal |"
    echo "|---|---|---|---|---:|---:|---:|---:|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "\`remat graph\` of a config of 100,000 repeated layers (200,005 nodes traced): $gsecs s, $gmb MB"
    echo "(goal: under 10 s: $gverdict)."
} >"$tmp/table.md"
cat "$tmp/table.md"
if [ "$out" != - ]; then
    mkdir -p "$(dirname "$out")"
    cp "$tmp/table.md" "$out"
    echo "scale: wrote $out" >&2
fi

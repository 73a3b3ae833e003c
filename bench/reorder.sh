#!/usr/bin/env bash
# Beyond a fixed order (issue 29): on random layered DAGs in the style of
# Moccasin's benchmark (forward only: no checkpointing heuristic applies;
# lN: banded like Moccasin's own graphs, uN: every edge between two layers
# equally likely) and on remat's own training graphs, at 90%, 80% and 70% of
# the no-remat peak, the extra compute and peak of
#   milp     the fixed-order MILP route (coarsened above 80 nodes), with its bound
#   fixed    anneal --keep-order: the search, in the problem's order
#   anneal   the order-aware search (its answer may carry its own order)
#   best     the default
# each with its wall time and largest resident memory, under one time limit
# per run, one thread. l100000 (100,000 nodes, 400 layers of 250) is not in
# the default set: GRAPHS=l100000 runs it (about 8 minutes), and the report
# then checks that every run answered within its limit and 1 GiB.
#
#   bench/reorder.sh            # writes docs/bench/reorder.md
#
# Environment: TIME_LIMIT (seconds per run, default 40), BUDGETS (default
# "90 80 70"), GRAPHS (default: banded layered graphs of about 100 250 500
# 1000 nodes, uniform ones of 100 and 1000, resnet50 and unet at batch 8),
# SEEDS (layered graphs per size, default 2), OUT. Raw CSV in
# build-bench-reorder/. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build-bench-reorder
tlimit="${TIME_LIMIT:-40}" seeds="${SEEDS:-2}"
read -r -a budgets <<<"${BUDGETS:-90 80 70}"
read -r -a graphs <<<"${GRAPHS:-l100 l250 l500 l1000 u100 u1000 resnet50 unet}"
out="${OUT:-docs/bench/reorder.md}"
REMAT_BUILD_TARGET="remat remat_bench_scale_gen" ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}" >&2
dir="${REMAT_BUILD_DIR:-build}"
remat="$dir/remat" gen="$dir/bench/remat_bench_scale_gen"
mkdir -p "$work"
export REMAT_THREADS=1

# The problems: layered graphs (layers, width, edge density, skip density,
# band: remat_bench_scale_gen) and the models' training graphs.
declare -A shape=([l100]="10 10 0.5 0.15 SEED 2" [l250]="25 10 0.5 0.15 SEED 2" [l500]="25 20 0.5 0.15 SEED 2"
    [l1000]="40 25 0.5 0.15 SEED 2" [l100000]="400 250 0.5 0.15 SEED 2" [u100]="10 10 0.3 0.2 SEED 0"
    [u1000]="40 25 0.3 0.2 SEED 0")
files=()
for g in "${graphs[@]}"; do
    if [ -n "${shape[$g]:-}" ]; then
        for s in $(seq 1 "$seeds"); do
            f="$work/$g-s$s.txt"
            read -r -a sh <<<"${shape[$g]/SEED/$s}"
            [ -f "$f" ] || "$gen" layered "${sh[@]:0:5}" "$f" "${sh[5]}" >&2
            files+=("$f")
        done
    else
        f="$work/$g-b8.txt"
        [ -f "$f" ] || "$remat" graph --model "models/$g.cfg" --batch 8 --problem-out "$f" >/dev/null
        files+=("$f")
    fi
done

csv="$work/results.csv"
echo "graph,nodes,budget,run,strategy,status,overhead_pct,cost,peak_bytes,recomputed_nodes,recomputations,seconds,lp_bound_pct,bound,gap_pct,wall,rss_kib" >"$csv"
runs=(milp "fixed:anneal --keep-order" anneal best)
for f in "${files[@]}"; do
    name=$(basename "$f" .txt) nodes=$(sed -n 's/^problem \([0-9]*\) .*/\1/p' "$f")
    for b in "${budgets[@]}"; do
        for r in "${runs[@]}"; do
            label=${r%%:*} args=${r#*:}
            [ "$label" = "$r" ] && args=$r
            echo "reorder: $name at $b%: $label" >&2
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            row=$(python3 bench/maxrss.py "$work/rss" "$remat" plan --problem "$f" --budget "$b%" --strategy $args \
                --time-limit "$tlimit" --format csv --quiet 2>"$work/$name-$b-$label.err" | tail -n +2) || true
            t1=$(date +%s.%N)
            wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
            [ -n "$row" ] || row="$label,none,,,,,,,,,"
            echo "$name,$nodes,$b,$label,$row,$wall,$(cat "$work/rss")" >>"$csv"
        done
    done
done
/usr/bin/env python3 bench/reorder_report.py "$csv" "$out" "$tlimit"

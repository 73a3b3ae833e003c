#!/usr/bin/env bash
# Beyond a fixed order (issue 29): on Moccasin's published random layered
# DAGs (mN), on remat's random layered DAGs in their style (forward only: of
# the heuristics only DTR applies; lN: banded like Moccasin's graphs, uN:
# every edge between two layers equally likely) and on remat's own training
# graphs, at 90%, 80% and 70% of
# the no-remat peak, the extra compute and peak of
#   milp     the fixed-order MILP route (coarsened above 80 nodes), with its bound
#   fixed    anneal --keep-order: the search, in the problem's order
#   anneal   the order-aware search (its answer may carry its own order)
#   best     the default
#   heur     the cheapest heuristic that fits: the checkpointing ones (they
#            need a training graph's forward/backward split) and DTR (any DAG)
# each with its wall time and largest resident memory, under one time limit
# per run, one thread; and each graph's no-remat peak (checkpoint_all at 100%),
# against which the report gives every peak. l100000 (100,000 nodes, 400
# layers of 250) is not in the default set: GRAPHS=l100000 runs it (about 8
# minutes), and the report then checks that every run answered within its
# limit and 1 GiB.
#
#   bench/reorder.sh            # writes docs/bench/reorder.md
#
# Environment: TIME_LIMIT (seconds per run, default 40), BUDGETS (default
# "90 80 70"), GRAPHS (default: Moccasin's graphs of 100 250 500 1000 nodes,
# remat's banded layered graphs of about those sizes, uniform ones of 100
# and 1000, resnet50 and unet at batch 8), MOCCASIN_DIR (where Moccasin's
# graphs are, or are fetched to: build-bench-reorder/moccasin),
# SEEDS (layered graphs per size, default 2), OUT. Raw CSV in
# build-bench-reorder/results-<limit>s.csv; a run already there is not run
# again (an interrupted bench resumes; delete the file to measure afresh),
# and the report covers every run in it. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build-bench-reorder
tlimit="${TIME_LIMIT:-40}" seeds="${SEEDS:-2}"
read -r -a budgets <<<"${BUDGETS:-90 80 70}"
read -r -a graphs <<<"${GRAPHS:-m100 m250 m500 m1000 l100 l250 l500 l1000 u100 u1000 resnet50 unet}"
out="${OUT:-docs/bench/reorder.md}"
REMAT_BUILD_TARGET="remat remat_bench_scale_gen" ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}" >&2
dir="${REMAT_BUILD_DIR:-build}"
remat="$dir/remat" gen="$dir/bench/remat_bench_scale_gen"
mkdir -p "$work"
export REMAT_THREADS=1

# The problems: Moccasin's own random layered graphs (mN, as published with
# their paper, which FastSA's measures too: fetched from their repository at
# a fixed commit, or taken from MOCCASIN_DIR), remat's layered graphs
# (layers, width, edge density, skip density, band: remat_bench_scale_gen)
# and the models' training graphs.
moccasin_dir="${MOCCASIN_DIR:-$work/moccasin}"
moccasin_url=https://raw.githubusercontent.com/haoming-codes/moccasin/4da8878932a0fb7edee4ef71ac8719dfdf5d9a07/data
declare -A moccasin=([m100]=random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json
    [m250]=random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json
    [m500]=random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json
    [m1000]=random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json)
declare -A shape=([l100]="10 10 0.5 0.15 SEED 2" [l250]="25 10 0.5 0.15 SEED 2" [l500]="25 20 0.5 0.15 SEED 2"
    [l1000]="40 25 0.5 0.15 SEED 2" [l100000]="400 250 0.5 0.15 SEED 2" [u100]="10 10 0.3 0.2 SEED 0"
    [u1000]="40 25 0.3 0.2 SEED 0")
files=()
for g in "${graphs[@]}"; do
    if [ -n "${moccasin[$g]:-}" ]; then
        j="$moccasin_dir/${moccasin[$g]}" f="$work/$g.txt"
        if [ ! -f "$j" ]; then
            mkdir -p "$moccasin_dir"
            if ! curl -fsSL -o "$j.part" "$moccasin_url/${moccasin[$g]}"; then
                rm -f "$j.part"
                echo "bench/reorder.sh: $g is Moccasin's ${moccasin[$g]}: could not fetch it from $moccasin_url;" \
                    "put it in $moccasin_dir (MOCCASIN_DIR), or leave $g out of GRAPHS" >&2
                exit 1
            fi
            mv "$j.part" "$j"
        fi
        [ -f "$f" ] || python3 bench/moccasin_graph.py "$j" "$f"
        files+=("$f")
    elif [ -n "${shape[$g]:-}" ]; then
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

csv="$work/results-${tlimit}s.csv" peaks="$work/peaks.csv"
header="graph,nodes,budget,run,strategy,status,overhead_pct,cost,peak_bytes,recomputed_nodes,recomputations,seconds,lp_bound_pct,bound,gap_pct,wall,rss_kib,commit"
[ -f "$csv" ] || echo "$header" >"$csv"
# Each run records the commit it measured (rows from before that column
# have none): the report marks the cells of an earlier one.
[ "$(head -n 1 "$csv")" = "$header" ] || sed -i "1s/.*/$header/" "$csv"
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || rev="$rev+"
[ -f "$peaks" ] || echo "graph,no_remat_peak_bytes" >"$peaks"
heuristics=(chen_sqrtn chen_greedy griewank ap_sqrtn ap_greedy linearized_sqrtn linearized_greedy ogc dtr)

# The cheapest heuristic that fits, as one row: milliseconds each, so no
# time limit of their own and no memory column.
cheapest_heuristic() {
    local f=$1 b=$2 h row best="" applies=0
    for h in "${heuristics[@]}"; do
        row=$("$remat" plan --problem "$f" --budget "$b%" --strategy "$h" --format csv --quiet 2>/dev/null | tail -n +2) || true
        case "$row" in
        "$h,n/a,"* | "") continue ;;
        esac
        applies=1
        [ "$(cut -d, -f2 <<<"$row")" = ok ] || continue
        if [ -z "$best" ] || awk -v a="$(cut -d, -f4 <<<"$row")" -v b="$(cut -d, -f4 <<<"$best")" 'BEGIN { exit !(a < b) }'; then
            best=$row
        fi
    done
    if [ -n "$best" ]; then echo "$best"; elif [ $applies = 1 ]; then echo "heur,none,,,,,,,,,"; else echo "heur,n/a,,,,,,,,,"; fi
}

runs=(milp "fixed:anneal --keep-order" anneal best heur)
for f in "${files[@]}"; do
    name=$(basename "$f" .txt) nodes=$(sed -n 's/^problem \([0-9]*\) .*/\1/p' "$f")
    if ! grep -q "^$name," "$peaks"; then
        peak=$("$remat" plan --problem "$f" --budget 100% --strategy checkpoint_all --format csv --quiet | tail -n +2 | cut -d, -f5)
        echo "$name,$peak" >>"$peaks"
    fi
    for b in "${budgets[@]}"; do
        for r in "${runs[@]}"; do
            label=${r%%:*} args=${r#*:}
            [ "$label" = "$r" ] && args=$r
            grep -q "^$name,$nodes,$b,$label," "$csv" && continue
            echo "reorder: $name at $b%: $label" >&2
            if [ "$label" = heur ]; then
                echo "$name,$nodes,$b,$label,$(cheapest_heuristic "$f" "$b"),,,$rev" >>"$csv"
                continue
            fi
            # shellcheck disable=SC2086
            row=$(python3 bench/maxrss.py "$work/rss" "$remat" plan --problem "$f" --budget "$b%" --strategy $args \
                --time-limit "$tlimit" --format csv --quiet 2>"$work/$name-$b-$label.err" | tail -n +2) || true
            read -r rss wall <"$work/rss"
            [ -n "$row" ] || row="$label,none,,,,,,,,,"
            echo "$name,$nodes,$b,$label,$row,$wall,$rss,$rev" >>"$csv"
        done
    done
done
# What the binary holds before it reads anything (the libraries it maps): a
# share of every run's resident memory.
python3 bench/maxrss.py "$work/rss" "$remat" --help >/dev/null
read -r rss wall <"$work/rss"
/usr/bin/env python3 bench/reorder_report.py "$csv" "$peaks" "$out" "$tlimit" "$rss" "$rev"

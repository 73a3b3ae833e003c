#!/usr/bin/env bash
# Real max batch on the GPU under a memory budget (issue 5): for each model
# and strategy, the largest batch `remat maxbatch --device cuda` finds (the
# GPU's accounting: weights, gradients, SGD momentum, BN statistics, labels,
# the layers' CUDA workspace, the cuBLAS workspace, and the activations'
# simulated peak), then that batch actually trained for 3 steps on the GPU
# (bench/gpu_step.c: the trainer's own path, the cuDNN kernel library, one warm-up
# step) under the same budget, ending with one table:
#   model, strategy, max batch, ratio to checkpoint-all, extra FLOPs,
#   measured ms/step and images/s, time per image over checkpoint-all's at
#   its own max batch, remat's memory (fixed + arena high-water), the
#   device's measured use, OK or why not.
#
#   bench/gpu_maxbatch.sh [--budget 16GiB] [--time-limit S] [--milp-wall S]
#                         [--all-strategies] [--no-milp] [MODEL...]
#
# Models: vgg16, vgg19, resnet50 at 224x224, unet at 256x256 (models/*.cfg;
# default: all four, as many as the time allows). Strategies: checkpoint_all,
# chen_sqrtn, chen_greedy and milp (its search in its own `remat maxbatch`,
# under `timeout --milp-wall`, default 120 s, each solve --time-limit,
# default 10 s); --all-strategies adds griewank, ap_sqrtn, ap_greedy,
# linearized_sqrtn, linearized_greedy, ogc and lp_round.
# For reference, the Checkmate paper (VGG19, 224x224, V100 16 GB, simulated):
# checkpoint-all 167, Chen sqrt(n) 197, Chen greedy 266, its ILP 289.
#
# Time: a model takes 2 to 5 minutes on the H200 (the MILP search and its
# re-solve in the trainer dominate); the run stops starting models once
# 7 minutes are spent (--deadline S changes it) and says which it skipped, so
# one invocation stays under the device tool's 10 minutes. One or two models
# per call: `bench/gpu_maxbatch.sh vgg19`, `bench/gpu_maxbatch.sh vgg16 unet`.
#
# Memory columns. remat: fixed + the arena's measured high-water mark, what
# the budget governs. device: what cudaMemGetInfo says the process took
# beyond its CUDA context: library handles and cuDNN's loaded kernels are in
# it, remat's accounting does not see them (the trainer's evaluation runs in
# the idle training arena and adds nothing). A 16 GiB budget on the 139 GiB card is enforced by remat's own
# arena and accounting; these columns show what it really took.
# Needs build/ from `scripts/gpu-check --build` (REMAT_BUILD_DIR overrides).
# Without a GPU it says so and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/gpu-env
. scripts/gpu-env
dir="${REMAT_BUILD_DIR:-build}"
remat="$dir/remat"
step_bin="$dir/bench/remat_bench_gpu_step"

budget=16GiB tl=10 milp_wall=120 deadline=420 extra="" milp=1 models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget="$2"; shift ;;
    --time-limit) tl="$2"; shift ;;
    --milp-wall) milp_wall="$2"; shift ;;
    --deadline) deadline="$2"; shift ;;
    --all-strategies) extra=",griewank,ap_sqrtn,ap_greedy,linearized_sqrtn,linearized_greedy,ogc,lp_round" ;;
    --no-milp) milp=0 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_maxbatch: unknown option $1" >&2; exit 2 ;;
    *) models+=("$1") ;;
  esac
  shift
done
[ ${#models[@]} -gt 0 ] || models=(vgg19 vgg16 resnet50 unet)
for m in "${models[@]}"; do
  [ -f "models/$m.cfg" ] || { echo "gpu_maxbatch: no models/$m.cfg" >&2; exit 2; }
done

for b in "$remat" "$step_bin"; do
  if [ ! -x "$b" ]; then
    echo "gpu_maxbatch: $b not found (scripts/gpu-check --build first, then carry $dir)" >&2
    exit 1
  fi
done
if ! gpu_have_device; then
  echo "gpu_maxbatch: no GPU on this machine: nothing run"
  exit 0
fi
gpu_env "$dir" "$remat" "$step_bin" || exit 1

results="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$results" "$log"' EXIT
t_start=$SECONDS
skipped=()

# A key's value on the RESULT line of remat_bench_gpu_step ($line).
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }

# Rows of a `remat maxbatch` table: "strategy batch overhead" for each strategy that ran.
maxbatch_rows() {
  awk '/^strategy +max batch/ { on = 1; next } on && NF == 0 { exit } on && $2 ~ /^[0-9]+$/ { print $1, $2, $4 }' "$1"
}

for model in "${models[@]}"; do
  if [ $((SECONDS - t_start)) -gt "$deadline" ]; then
    skipped+=("$model")
    continue
  fi
  cfg="models/$model.cfg"
  echo "== $model: remat maxbatch --device cuda --budget $budget"
  timeout 180 "$remat" maxbatch --model "$cfg" --device cuda --budget "$budget" \
    --strategies "chen_sqrtn,chen_greedy$extra" --time-limit "$tl" --quiet 2>&1 | tee "$log"
  rows="$(maxbatch_rows "$log")"
  if [ "$milp" = 1 ]; then
    echo "== $model: milp (each solve $tl s, the search at most $milp_wall s)"
    timeout "$milp_wall" "$remat" maxbatch --model "$cfg" --device cuda --budget "$budget" --strategies milp \
      --time-limit "$tl" --quiet 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    mrow="$(maxbatch_rows "$log" | awk '$1 == "milp"')"
    if [ -n "$mrow" ]; then
      rows="$rows"$'\n'"$mrow"
    else
      why="exit_$rc"; [ "$rc" = 124 ] && why="search_over_${milp_wall}s"
      echo "$model milp - - - - - - FAIL($why)" >>"$results"
    fi
  fi
  # Train each strategy's max batch for 3 steps under the same budget.
  while read -r strat batch ovh; do
    [ -n "$strat" ] || continue
    if [ "$batch" = 0 ]; then
      echo "$model $strat 0 $ovh - - - - NONE" >>"$results"
      continue
    fi
    echo "== $model: $strat at batch $batch, 3 steps on the GPU"
    timeout 300 "$step_bin" --model "$cfg" --batch "$batch" --strategy "$strat" --budget "$budget" \
      --kernels cudnn --steps 3 --warmup 1 --max-seconds 60 --time-limit "$tl" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    line="$(grep '^RESULT ' "$log" | tail -1)"
    if [ -n "$line" ]; then
      # status: OK, or OOM / BUDGET / INFEASIBLE / ERROR (the reason is in the log above).
      echo "$model $strat $batch $ovh $(kv ms) $(kv images_s) $(kv remat_bytes) $(kv device_bytes) $(kv status)" \
        >>"$results"
    else
      why="exit_$rc"; [ "$rc" = 124 ] && why="timeout_300s"
      grep -q ': skipped$' "$log" && why="skipped"
      echo "$model $strat $batch $ovh - - - - FAIL($why)" >>"$results"
    fi
  done <<<"$rows"
done

echo
echo "==== real max batch on the GPU: budget $budget, 3 training steps each, cuDNN kernel library ($((SECONDS - t_start)) s) ===="
gpu_name
printf '%-9s %-18s %6s %6s %9s %9s %8s %10s %9s %9s  %s\n' model strategy batch vs_all flops_ovh ms/step img/s \
  time/img remat_GiB device_GiB status
awk '
  function gib(b) { return b ~ /^[0-9.e+-]+$/ && b != "-" ? sprintf("%.2f", b / 1073741824) : "-" }
  { n++; for (i = 1; i <= 9; i++) f[n, i] = $i
    if ($2 == "checkpoint_all" && $3 ~ /^[0-9]+$/) allb[$1] = $3
    if ($2 == "checkpoint_all" && $9 == "OK") allms[$1] = $5 }
  END {
    for (r = 1; r <= n; r++) {
      m = f[r, 1]; b = f[r, 3]; ms = f[r, 5]; st = f[r, 9]
      ratio = (m in allb) && b ~ /^[0-9]+$/ && allb[m] > 0 ? sprintf("%.2fx", b / allb[m]) : "-"
      per = "-"
      if (st == "OK" && (m in allms) && allms[m] > 0 && b > 0)
        per = sprintf("%+.1f%%", 100 * ((ms / b) / (allms[m] / allb[m]) - 1))
      printf "%-9s %-18s %6s %6s %9s %9s %8s %10s %9s %9s  %s\n", m, f[r, 2], b, ratio, f[r, 4], ms, f[r, 6],
        per, gib(f[r, 7]), gib(f[r, 8]), st
    }
  }' "$results"
echo "vs_all: max batch over checkpoint-all's; flops_ovh: extra compute (FLOPs) at that batch; time/img: measured"
echo "ms per image over checkpoint-all's at its own max batch; remat: fixed + arena high-water; device: cudaMemGetInfo"
echo "use beyond the CUDA context. Checkmate (VGG19, V100 16 GB, simulated): checkpoint-all 167, chen_sqrtn 197,"
echo "chen_greedy 266, ILP 289."
[ ${#skipped[@]} -eq 0 ] || echo "skipped for time (over ${deadline}s): ${skipped[*]}: run bench/gpu_maxbatch.sh ${skipped[*]}"
exit 0

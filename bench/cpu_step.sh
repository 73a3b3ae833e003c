#!/usr/bin/env bash
# remat's CPU training step beside PyTorch's, in one run (docs/bench/cpu.md):
# ResNet-18, ResNet-50 and VGG-16 at 3x224x224 and U-Net at 3x256x256,
# batch 8, SGD with momentum 0.9, on 1 and 2 threads. For each model and
# thread count PyTorch (bench/pytorch_step.py --device cpu) and remat
# (remat_bench_cpu_step: the fast CPU kernels, checkpoint-all, no
# recomputation) run one after the other, so both see the same machine.
# Reported: the median step time of each, their ratio, images/s, and each
# one's speed-up from 1 to 2 threads, against the goals of issue 15.
# Then the models of BUSY_MODELS again beside a competing busy process (a
# shell loop started by this script, one core's worth of work, as a solver
# run or another build would be; issue 23): both at 1 thread, and each at
# its default on the last thread count (PyTorch at that many threads, remat
# without --threads: up to that many, fewer while the cores are taken),
# against the goal that remat's default is no slower than its one thread.
#
#   bench/cpu_step.sh [MODEL...]       # default: resnet18 resnet50 vgg16 unet
#
# Environment: STEPS (timed steps, default 5), WARMUP (default 1), THREADS
# (default "1 2"), BATCH (default 8), BUSY_MODELS (default resnet18; empty:
# none), OUT (default: docs/bench/cpu.md for the full default run,
# build-bench-cpu/cpu.md for any other).
# PyTorch is installed for this bench only (never the build, the demo or the
# tests): from PyPI into the virtual environment REMAT_TORCH_VENV (default
# build-bench-cpu/venv), created when missing; PyPI's Linux wheels of torch
# bring CUDA libraries, several GB to download. Run it on an otherwise idle
# machine: the load average before the run is printed with the table.
# remat's step log (per-step times, losses) is build-bench-cpu/remat.log.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build-bench-cpu
# remat's default thread count is one of the things measured: the caller's
# REMAT_THREADS must not fix it.
unset REMAT_THREADS
venv="${REMAT_TORCH_VENV:-$work/venv}"
steps="${STEPS:-5}" warmup="${WARMUP:-1}" batch="${BATCH:-8}"
read -r -a threads <<<"${THREADS:-1 2}"
read -r -a busy_models <<<"${BUSY_MODELS-resnet18}"
models=("$@")
full=0
[ ${#models[@]} -eq 0 ] && models=(resnet18 resnet50 vgg16 unet) && [ "${THREADS:-1 2}" = "1 2" ] && full=1
out="${OUT:-$([ $full = 1 ] && echo docs/bench/cpu.md || echo "$work/cpu.md")}"
mkdir -p "$work" "$(dirname "$out")"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# A venv counts as ready once torch and torchvision import: an interrupted
# install is redone.
if ! "$venv/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
    echo "cpu bench: creating $venv and installing torch, torchvision from PyPI" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch torchvision
fi
: >"$work/remat.log"
REMAT_BUILD_TARGET="remat_bench_cpu_step" ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}" >&2
dir="${REMAT_BUILD_DIR:-build}"

field() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# result WHO LINE: LINE's ms= and steps=, or a message and exit 1.
result() {
    local ms st
    ms=$(field "$2" ms) st=$(field "$2" steps)
    if [ -z "$ms" ] || [ "$st" != "$steps" ]; then
        echo "cpu bench: $1 gave no timing of $steps steps (${2:-no RESULT line}); see $work/remat.log" >&2
        exit 1
    fi
}
# torch_step M T / remat_step M T [default]: one side's RESULT line, on T
# threads (remat with "default": no --threads, the backend's own choice).
torch_step() {
    OMP_NUM_THREADS=$2 MKL_NUM_THREADS=$2 "$venv/bin/python" bench/pytorch_step.py --device cpu --threads "$2" \
        --model "$1" --batch "$batch" --steps "$steps" --warmup "$warmup" | grep '^RESULT' || true
}
remat_step() {
    local opt=(--threads "$2")
    [ "${3:-}" = default ] && opt=()
    "$dir/bench/remat_bench_cpu_step" --model "$1" --batch "$batch" "${opt[@]}" --steps "$steps" --warmup "$warmup" \
        2>>"$work/remat.log" | grep '^RESULT' || true
}
declare -A ms
rows=""
for m in "${models[@]}"; do
    for t in "${threads[@]}"; do
        echo "cpu bench: $m, $t thread(s): PyTorch" >&2
        p=$(torch_step "$m" "$t")
        result "PyTorch ($m, $t threads)" "$p"
        echo "cpu bench: $m, $t thread(s): remat" >&2
        r=$(remat_step "$m" "$t")
        result "remat ($m, $t threads)" "$r"
        pm=$(field "$p" ms) rm=$(field "$r" ms)
        ms[$m,$t,torch]=$pm ms[$m,$t,remat]=$rm
        x=$(ratio "$rm" "$pm")
        verdict=$(awk -v a="$rm" -v b="$pm" 'BEGIN { print (a <= 1.2 * b ? "met" : "not met") }')
        rows+="| $m | $t | $(printf %.0f "$pm") | $(printf %.0f "$rm") | **$x** ($verdict) | $(field "$p" images_s) | $(field "$r" images_s) |"$'\n'
        echo "cpu bench: $m, $t thread(s): PyTorch $pm ms, remat $rm ms, ratio $x" >&2
    done
done

scaling=""
if [ ${#threads[@]} -ge 2 ]; then
    t1=${threads[0]} t2=${threads[1]}
    for m in "${models[@]}"; do
        ps=$(ratio "${ms[$m,$t1,torch]}" "${ms[$m,$t2,torch]}") rs=$(ratio "${ms[$m,$t1,remat]}" "${ms[$m,$t2,remat]}")
        verdict=$(awk -v p1="${ms[$m,$t1,torch]}" -v p2="${ms[$m,$t2,torch]}" -v r1="${ms[$m,$t1,remat]}" \
            -v r2="${ms[$m,$t2,remat]}" 'BEGIN { print (r1 / r2 >= p1 / p2 ? "met" : "not met") }')
        scaling+="| $m | ${ps}x | ${rs}x | $verdict |"$'\n'
    done
fi

# Beside a busy process: the loop runs from before the first of these steps
# to after the last, and is stopped however the script ends.
busy_rows=""
busy_pid=""
stop_busy() { [ -z "$busy_pid" ] || { kill "$busy_pid" 2>/dev/null || true; wait "$busy_pid" 2>/dev/null || true; }; }
trap stop_busy EXIT
tmax=${threads[${#threads[@]} - 1]}
for m in "${busy_models[@]}"; do
    sh -c 'while :; do :; done' &
    busy_pid=$!
    echo "cpu bench: $m beside a busy process (pid $busy_pid)" >&2
    p1=$(torch_step "$m" 1) r1=$(remat_step "$m" 1)
    result "PyTorch ($m, 1 thread, busy)" "$p1"
    result "remat ($m, 1 thread, busy)" "$r1"
    pt=$(torch_step "$m" "$tmax") rt=$(remat_step "$m" "$tmax" default)
    result "PyTorch ($m, $tmax threads, busy)" "$pt"
    result "remat ($m, default, busy)" "$rt"
    stop_busy
    busy_pid=""
    verdict=$(awk -v a="$(field "$rt" ms)" -v b="$(field "$r1" ms)" 'BEGIN { print (a <= b ? "met" : "not met") }')
    busy_rows+="| $m | $(printf %.0f "$(field "$p1" ms)") | $(printf %.0f "$(field "$r1" ms)") | $(printf %.0f "$(field "$pt" ms)") | $(printf %.0f "$(field "$rt" ms)") (ended on $(field "$rt" threads_end)) | **$(ratio "$(field "$rt" ms)" "$(field "$r1" ms)")** ($verdict) | $(ratio "$(field "$rt" ms)" "$(field "$pt" ms)") |"$'\n'
    echo "cpu bench: $m beside a busy process: remat 1 thread $(field "$r1" ms) ms, default $(field "$rt" ms) ms;" \
        "PyTorch 1 thread $(field "$p1" ms) ms, $tmax threads $(field "$pt" ms) ms" >&2
done

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
versions=$("$venv/bin/python" -c 'import torch; print(f"torch {torch.__version__}")')
{
    echo "# remat's CPU training step against PyTorch's"
    echo
    echo "Written by \`bench/cpu_step.sh\` ($(date -u '+%Y-%m-%d %H:%M UTC')) on $cpu, $(nproc) cores;"
    echo "load average before the run: $load_before. $versions (PyPI, its"
    echo "own CPU kernels); remat's fast CPU kernels (BLIS products around im2col, OpenMP loops), checkpoint-all."
    echo
    echo "One training step (forward, loss, backward, SGD with momentum 0.9) at batch $batch, float32, on"
    echo "random data; median of $steps steps after $warmup warm-up. ResNet-18, ResNet-50, VGG-16, MobileNet v2"
    echo "and ViT-B/16 are torchvision's at 3x224x224 with 1000 classes against models/<name>.cfg; U-Net is"
    echo "bench/pytorch_step.py's model of models/unet.cfg at 3x256x256 with 2 classes per pixel."
    echo
    echo "| model | threads | PyTorch ms | remat ms | remat / PyTorch (goal <= 1.2) | PyTorch images/s | remat images/s |"
    echo "|---|---|---|---|---|---|---|"
    printf "%s" "$rows"
    if [ -n "$scaling" ]; then
        echo
        echo "Speed-up from ${threads[0]} to ${threads[1]} threads (step time at ${threads[0]} over step time at ${threads[1]}; goal: remat's at least PyTorch's):"
        echo
        echo "| model | PyTorch | remat | goal |"
        echo "|---|---|---|---|"
        printf "%s" "$scaling"
    fi
    if [ -n "$busy_rows" ]; then
        echo
        echo "Beside a competing busy process (\`sh -c 'while :; do :; done'\`, started before and stopped after these"
        echo "steps): both at 1 thread, then PyTorch at $tmax threads and remat at its default (no \`--threads\`: up to"
        echo "$tmax, fewer while the cores are taken; with the thread count its last step ended on). Goal: remat's"
        echo "default no slower than its one thread on the same load."
        echo
        echo "| model | PyTorch, 1 thread | remat, 1 | PyTorch, $tmax threads | remat, default | remat default / remat 1 (goal <= 1) | remat default / PyTorch $tmax |"
        echo "|---|---|---|---|---|---|---|"
        printf "%s" "$busy_rows"
    fi
} >"$out"
cat "$out"

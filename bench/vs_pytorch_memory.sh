#!/usr/bin/env bash
# remat beside what a PyTorch user would pick when memory runs out, at the
# same measured memory, on the CPU (docs/bench/vs-pytorch-memory.md, issue
# 28). For each model, one fresh process per point:
#   PyTorch (bench/pytorch_memory.py): eager; torch.utils.checkpoint around
#     every block; torch.compile at activation_memory_budget 1.0 0.8 0.6 0.4
#     0.2 0.1 0.0. Each: its measured peak (parameters, buffers, momentum and
#     batch counted, plus the step's growth of the kernel's resident count
#     with the allocator told to return large frees) and its median step.
#   remat (`remat train`): its no-remat step (budget 100%); then each of
#     PyTorch's measured peaks given as its budget in bytes; then a sweep of
#     budgets from the no-remat peak down to its lower bound. Each: its
#     measured peak (the arena's high-water plus fixed bytes, and the kernel's
#     count of the process's growth from before the training memory to its
#     peak), its median step, its planned overhead.
# The report (bench/vs_pytorch_memory_report.py) writes the table and the
# figure (docs/img/vs-pytorch-memory.svg): measured peak against step time
# relative to each framework's own no-remat step, and checks the goals.
#
#   bench/vs_pytorch_memory.sh [MODEL...]   # default: resnet18 resnet50 vgg16 unet (also: vit_b_16)
#
# Models keep their raw results in build-bench-vsmem/<model>/; the report
# covers every model found there, so models can be run in separate calls.
# REUSE_TORCH=1 keeps a model's PyTorch results (points with a RESULT line)
# and reruns the rest and every remat point.
# Environment: THREADS (both sides, default 2), STEPS (timed steps, default
# 10), WARMUP (default 2), TIME_LIMIT (remat's solver, seconds, default 30:
# torch.compile takes about a minute a budget here), COSTS (profile, the
# default: remat schedules with the node times `remat profile` measures;
# flops: with the FLOP model),
# COMPILE_BUDGETS (default "1.0 0.8 0.6 0.4 0.2 0.1 0.0"), SWEEP (remat's
# extra budgets, default 6), OUT (default docs/bench/vs-pytorch-memory.md),
# FIG (default docs/img/vs-pytorch-memory.svg).
# Sizes (input height = width, batch) are set per model below, chosen so
# that activations dominate the memory and a step stays near a second.
# PyTorch is installed for this bench only (never the build, the demo or
# the tests): from PyPI into REMAT_TORCH_VENV (default build-bench-vsmem/venv),
# created when missing. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build-bench-vsmem
unset REMAT_THREADS
venv="${REMAT_TORCH_VENV:-$work/venv}"
threads="${THREADS:-2}" steps="${STEPS:-10}" warmup="${WARMUP:-2}" tlimit="${TIME_LIMIT:-30}" sweep="${SWEEP:-6}"
read -r -a budgets <<<"${COMPILE_BUDGETS:-1.0 0.8 0.6 0.4 0.2 0.1 0.0}"
out="${OUT:-docs/bench/vs-pytorch-memory.md}" fig="${FIG:-docs/img/vs-pytorch-memory.svg}"
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(resnet18 resnet50 vgg16 unet)
declare -A size=([resnet18]=112 [resnet50]=112 [vgg16]=112 [unet]=128 [vit_b_16]=112)
declare -A batch=([resnet18]=64 [resnet50]=32 [vgg16]=32 [unet]=8 [vit_b_16]=32)
for m in "${models[@]}"; do
    [ -n "${size[$m]:-}" ] || { echo "vs_pytorch_memory: unknown model $m (resnet18 resnet50 vgg16 unet vit_b_16)" >&2; exit 2; }
done
mkdir -p "$work"
if ! "$venv/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
    echo "vs_pytorch_memory: creating $venv and installing torch, torchvision from PyPI" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch torchvision
fi
REMAT_BUILD_TARGET=remat ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}" >&2
remat="${REMAT_BUILD_DIR:-build}/remat"

for m in "${models[@]}"; do
    s=${size[$m]} b=${batch[$m]} dir="$work/$m"
    if [ "${REUSE_TORCH:-0}" = 1 ]; then
        rm -f "$dir"/remat-*.log && mkdir -p "$dir"
    else
        rm -rf "$dir" && mkdir -p "$dir"
    fi
    # The config at the bench's input size: [net]'s height and width.
    cfg="$dir/$m.cfg"
    sed -E '0,/^height=/s/^height=.*/height='"$s"'/; 0,/^width=/s/^width=.*/width='"$s"'/' "models/$m.cfg" >"$cfg"
    printf 'model=%s size=%s batch=%s threads=%s steps=%s warmup=%s time_limit=%s costs=%s torch=%s cpu=%s\n' "$m" "$s" \
        "$b" "$threads" "$steps" "$warmup" "$tlimit" "${COSTS:-profile}" "$("$venv/bin/python" -c 'import torch; print(torch.__version__)')" \
        "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1 | tr ' ' _)" >"$dir/settings"
    # PyTorch's points.
    torch_point() { # NAME ARGS...
        local name=$1
        shift
        [ "${REUSE_TORCH:-0}" = 1 ] && grep -q '^RESULT' "$dir/torch-$name.log" 2>/dev/null && return
        echo "vs_pytorch_memory: $m: PyTorch $name" >&2
        OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads "$venv/bin/python" bench/pytorch_memory.py --model "$m" \
            --batch "$b" --size "$s" --threads "$threads" --steps "$steps" --warmup "$warmup" "$@" \
            >"$dir/torch-$name.log" 2>&1 || echo "vs_pytorch_memory: PyTorch $name failed (see $dir/torch-$name.log)" >&2
    }
    torch_point eager --mode eager
    torch_point checkpoint --mode checkpoint
    for x in "${budgets[@]}"; do torch_point "compile-$x" --mode compile --budget "$x"; done
    # remat's points: `remat train` on synthetic data, steps+1 steps in one
    # epoch (its median leaves the first out; the held-out evaluation comes
    # after the last and is not timed), no accuracy replays.
    remat_point() { # NAME BUDGET
        echo "vs_pytorch_memory: $m: remat $1 (budget $2)" >&2
        "$remat" train --model "$cfg" --data synthetic --samples $(((steps + 1) * b)) --batch "$b" --budget "$2" \
            --steps $((steps + 1)) --threads "$threads" --time-limit "$tlimit" --train-accuracy-every 0 --quiet "${costs[@]}" \
            >"$dir/remat-$1.log" 2>&1 || true
    }
    # The costs remat's schedules minimise: each node's measured time
    # (`remat profile`, the checkpoint-all step on this machine), as a user
    # who cares about the step's time would give them; COSTS=flops: the
    # FLOP model (batchnorm, ReLU and adds cost 10 to 90 times more per
    # FLOP than convolutions on this CPU, so it underprices recomputing them).
    costs=()
    if [ "${COSTS:-profile}" = profile ]; then
        echo "vs_pytorch_memory: $m: remat profile" >&2
        "$remat" profile --model "$cfg" --batch "$b" --threads "$threads" --reps 3 --warmup 1 --out "$dir/costs.txt" \
            --quiet >"$dir/profile.log" 2>&1
        costs=(--costs "$dir/costs.txt")
    fi
    remat_point noremat 100%
    for f in "$dir"/torch-*.log; do
        peak=$(sed -n 's/^RESULT .* peak=\([0-9]*\) .*/\1/p' "$f")
        name=$(basename "$f" .log)
        [ -n "$peak" ] && remat_point "at-${name#torch-}" "$peak"
    done
    # The sweep: from the no-remat peak to just above the lower bound, evenly.
    lb=$("$remat" plan --model "$cfg" --batch "$b" --budget 100% --strategy checkpoint_all 2>/dev/null |
        sed -n 's/^lower bound .*(\([0-9.]*\)%).*/\1/p')
    for i in $(seq 1 "$sweep"); do
        pct=$(awk -v lb="$lb" -v i="$i" -v n="$sweep" 'BEGIN { printf "%.1f", 100 - (100 - lb - 0.5) * i / n }')
        remat_point "sweep-$pct" "$pct%"
    done
done
/usr/bin/env python3 bench/vs_pytorch_memory_report.py "$work" "$out" "$fig"

#!/usr/bin/env bash
# Training throughput on the GPU (issue 5): images/s of one training step
# (forward, loss, backward, SGD-momentum update; float32) of ResNet-50, VGG-16
# and U-Net at fixed batches, for each remat CUDA kernel library, against PyTorch on
# the same GPU (bench/pytorch_step.py: same models, batch, optimizer, TF32
# off, cuDNN autotuning off), ending with one table:
#   model, batch, engine (the kernel library, or pytorch), median ms/step, images/s, remat / PyTorch time.
#
#   bench/gpu_throughput.sh [--quick] [--no-handwritten] [MODEL[:BATCH]...]
#
# Default: resnet50:32 vgg16:32 unet:8. Why these batches: 32 is the usual
# training batch of the two classifiers at 224x224, and U-Net at 256x256
# (models/unet.cfg) costs several times more per image, so 8 gives a step of
# the same order. Each fits comfortably: remat's no-remat peaks (fixed +
# checkpoint-all's activations, `remat plan --budget 100%`) are 2.8 GiB
# (resnet50 b32), 3.4 GiB (vgg16 b32) and 3.1 GiB (unet b8), far inside the
# 139 GiB card and a 16 GiB one, so no kernel library's workspace choice is squeezed
# and the comparison is of kernels, not of memory pressure; and each is large
# enough to fill the GPU, so launches do not dominate.
# Kernel libraries, each in its own process (a crash or a timeout costs one row):
#   cudnn      remat's default: cuDNN conv + BN, cuBLAS linear; deterministic
#   cudnn-nd   the same with REMAT_DETERMINISTIC=0: PyTorch's default also
#              allows non-deterministic algorithms, so this is the fair row
#              for the goal "cuDNN kernel library within 1.2x of PyTorch"
#   cublas     cuBLAS SGEMM (im2col convolutions)
#   handwritten  the exact hand-written kernels: capped at 20 s per model
#              (the steps done are reported), dropped with --no-handwritten
# --quick: 5 timed steps after 1 warm-up (default 20 after 3).
# Bounded: every command runs under `timeout`; the whole run takes about
# 4 minutes on an H200 (the hand-written library dominates) and stays under 9.
# Needs build/ from `scripts/gpu-check --build` (REMAT_BUILD_DIR overrides).
# Without a GPU it says so and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/gpu-env
. scripts/gpu-env
dir="${REMAT_BUILD_DIR:-build}"
step_bin="$dir/bench/remat_bench_gpu_step"

steps=20 warmup=3 hand=1 configs=()
for a in "$@"; do
  case "$a" in
    --quick) steps=5 warmup=1 ;;
    --no-handwritten) hand=0 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_throughput: unknown option $a" >&2; exit 2 ;;
    *) configs+=("$a") ;;
  esac
done
[ ${#configs[@]} -gt 0 ] || configs=(resnet50:32 vgg16:32 unet:8)

if [ ! -x "$step_bin" ]; then
  echo "gpu_throughput: $step_bin not found (scripts/gpu-check --build first, then carry $dir)" >&2
  exit 1
fi
if ! gpu_have_device; then
  echo "gpu_throughput: no GPU on this machine: nothing timed"
  exit 0
fi
gpu_env "$dir" "$step_bin" || exit 1

libs=(cudnn cudnn-nd cublas)
[ "$hand" = 1 ] && libs+=(handwritten)
results="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$results" "$log"' EXIT
t_start=$SECONDS

for cfg in "${configs[@]}"; do
  model="${cfg%%:*}" batch="${cfg#*:}"
  [ "$batch" = "$cfg" ] && batch=32
  for eng in "${libs[@]}"; do
    det=1 real="$eng" cap=60 lim=150
    [ "$eng" = cudnn-nd ] && det=0 real=cudnn
    # The hand-written library: one warm-up step and as many timed as fit in 20 s.
    [ "$eng" = handwritten ] && cap=20 lim=240
    echo "== $model b$batch $eng"
    REMAT_DETERMINISTIC=$det timeout "$lim" "$step_bin" --model "$model" --batch "$batch" --kernels "$real" \
      --steps "$steps" --warmup "$warmup" --max-seconds "$cap" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    line="$(grep '^RESULT ' "$log" | tail -1)"
    if [ -z "$line" ]; then
      # One word (the table splits on spaces): skipped, timeout_Ns or exit_N.
      why="exit_$rc"; [ "$rc" = 124 ] && why="timeout_${lim}s"
      grep -q ': skipped$' "$log" && why="skipped"
      line="RESULT model=$model batch=$batch engine=$real status=FAIL($why) ms=- images_s=- steps=0"
    fi
    echo "$eng ${line#RESULT }" >>"$results"
  done
done

echo "== PyTorch (bench/pytorch_step.py)"
for cfg in "${configs[@]}"; do
  model="${cfg%%:*}" batch="${cfg#*:}"
  [ "$batch" = "$cfg" ] && batch=32
  PYTHONUNBUFFERED=1 timeout 180 python3 bench/pytorch_step.py --model "$model" --batch "$batch" \
    --steps "$steps" --warmup "$((warmup + 2))" 2>&1 | tee "$log"
  # Its rows: model batch HxW median_ms min_ms images/s peak_GiB (or "out of memory").
  row="$(awk -v m="$model" '$1 == m && $3 ~ /x/ { print $4, $6 }' "$log" | tail -1)"
  if [ -n "$row" ]; then
    echo "pytorch model=$model batch=$batch engine=pytorch status=OK ms=${row% *} images_s=${row#* }" >>"$results"
  else
    echo "pytorch model=$model batch=$batch engine=pytorch status=FAIL ms=- images_s=-" >>"$results"
  fi
done

echo
echo "==== GPU throughput: one training step, float32, SGD momentum ($((SECONDS - t_start)) s) ===="
gpu_name
printf '%-9s %6s %-12s %10s %10s %11s  %s\n' model batch engine ms/step images/s vs_pytorch status
awk '
  { kv["row"] = $1; for (i = 2; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v); kv[k] = v }
    key = kv["model"] " " kv["batch"]; n++
    row[n] = $1; model[n] = kv["model"]; batch[n] = kv["batch"]; ms[n] = kv["ms"]; ips[n] = kv["images_s"]
    st[n] = kv["status"]; steps[n] = kv["steps"]
    if ($1 == "pytorch" && kv["status"] == "OK") torch[key] = kv["ms"] }
  END {
    for (i = 1; i <= n; i++) {
      key = model[i] " " batch[i]; ratio = "-"
      if (st[i] == "OK" && (key in torch) && torch[key] > 0) ratio = sprintf("%.2fx", ms[i] / torch[key])
      note = st[i]; if (row[i] != "pytorch" && st[i] == "OK" && steps[i] + 0 < '"$steps"') note = note " (" steps[i] " steps: capped)"
      printf "%-9s %6s %-12s %10s %10s %11s  %s\n", model[i], batch[i], row[i], ms[i], ips[i], ratio, note
    }
  }' "$results"
echo "vs_pytorch: remat ms/step over PyTorch ms/step at the same model and batch (goal: cudnn <= 1.20x)."
echo "cudnn is deterministic (remat's default); cudnn-nd allows non-deterministic algorithms, as PyTorch's default does."
exit 0

#!/usr/bin/env bash
# Real networks exported from PyTorch, imported by remat (docs/onnx.md):
# creates a virtual environment, pip-installs torch, torchvision, numpy and
# onnx from PyPI into it (for this bench only: never the build, the demo or
# the tests), exports torchvision's classification zoo (ResNet, VGG, AlexNet,
# SqueezeNet, GoogLeNet, Inception v3, DenseNet, MobileNet v2/v3, MnasNet,
# EfficientNet, ShuffleNet, RegNet, ResNeXt, Wide ResNet, ConvNeXt, ViT,
# Swin) and a small U-Net (bench/onnx_export.py), then checks each with remat:
#   - the parameter count equals PyTorch's,
#   - the forward output on the same batch of 2 matches PyTorch's
#     (bench/onnx_check.c: |d| <= 1e-4 max(1, max|ref|) + 1e-3 |ref|; the largest errors printed),
#   - 20 training steps (SGD with momentum and weight decay, and Adam) give
#     PyTorch's losses and final weights, as closely as PyTorch's own float32
#     run follows its float64 one (bench/train_parity.c says why that test),
#   - `remat maxbatch --onnx` runs (checkpoint_all, chen_sqrtn, chen_greedy
#     under a 8 GiB budget, as remat train accounts memory on the CPU),
# and writes docs/bench/onnx.md. Everything else goes to build-bench-onnx/.
#
#   bench/onnx_torchvision.sh [NET...]      # default: all of them
#
# REMAT_ONNX_REUSE=1 keeps the exports (and PyTorch's training runs) already
# in build-bench-onnx/ and runs only remat's side: after a change to remat.
#
# The virtual environment is REMAT_ONNX_VENV (default build-bench-onnx/venv);
# PyPI's Linux wheels of torch bring CUDA libraries: several GB to download.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build-bench-onnx
venv="${REMAT_ONNX_VENV:-$work/venv}"
nets=("$@")
[ ${#nets[@]} -eq 0 ] && nets=(resnet18 resnet50 vgg16 alexnet squeezenet1_1 googlenet inception_v3 densenet121
    mobilenet_v2 mobilenet_v3_small mnasnet0_5 efficientnet_b0 shufflenet_v2_x0_5 regnet_x_400mf resnext50_32x4d
    wide_resnet50_2 convnext_tiny vit_b_16 swin_t unet_small)
mkdir -p "$work" docs/bench
if [ ! -x "$venv/bin/python" ]; then
    echo "onnx bench: creating $venv and installing torch, torchvision, numpy, onnx from PyPI" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch torchvision numpy onnx
fi
REMAT_BUILD_TARGET="remat remat_bench_onnx_check remat_bench_train_parity" ./scripts/build "${REMAT_BUILD_ARGS:--DREMAT_WERROR=ON}"
dir="${REMAT_BUILD_DIR:-build}"

t0=$(date +%s)
todo=()
for n in "${nets[@]}"; do
    [ "${REMAT_ONNX_REUSE:-0}" = 1 ] && [ -f "$work/$n.json" ] && [ -f "$work/$n.adam.f64.final.onnx" ] && continue
    todo+=("$n")
done
if [ ${#todo[@]} -gt 0 ]; then
    "$venv/bin/python" bench/onnx_export.py "$work" "${todo[@]}" 2>"$work/export.log"
fi
versions=$("$venv/bin/python" -c 'import torch, torchvision; print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")')

json() { "$venv/bin/python" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
field() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1"; }
rows=""
train_rows=""
maxbatch_blocks=""
# remat_bench_train_parity's hyper-parameters: bench/onnx_export.py's OPTIMIZERS
parity() { # NET LOSS OPT LR MOMENTUM: "loss remat/torch, weights remat/torch, match"
    local p
    p=$("$dir/bench/remat_bench_train_parity" "$work/$1.onnx" "$work/$1.train_x.pb" "$work/$1.train_y.pb" \
        "$work/$1.$3" "$2" "$3" "$4" "$5" 1e-4 2 2>>"$work/$1.err" || true)
    [ -n "$p" ] || { echo "| failed (see $work/$1.err) | | |"; return; }
    echo "| $(field "$p" loss_rel) / $(field "$p" torch_loss_rel) | $(field "$p" param_rel) / $(field "$p" torch_param_rel) | $(field "$p" match) |"
}
for n in "${nets[@]}"; do
    f="$work/$n.onnx"
    if [ ! -f "$work/$n.json" ]; then
        why=$(grep "^$n: export failed" "$work/export.log" | head -1 | cut -c1-300 | sed 's/|/\\|/g')
        rows+="| $n | | not exported | | | | ${why:-see $work/export.log} |"$'\n'
        continue
    fi
    loss=$(json "$work/$n.json" loss)
    tp=$(json "$work/$n.json" params)
    tb=$(json "$work/$n.json" buffers)
    echo "onnx bench: $n" >&2
    s=$(date +%s)
    if line=$("$dir/bench/remat_bench_onnx_check" "$f" "$work/$n.input.pb" "$work/$n.output.pb" "$loss" 2>"$work/$n.err"); then
        ok=yes
    else
        ok=no
    fi
    secs=$(( $(date +%s) - s ))
    if [ -z "$line" ]; then
        why=$(tr '\n' ' ' <"$work/$n.err" | sed 's/|/\\|/g')
        rows+="| $n | $tp | not imported | | | | $why |"$'\n'
        continue
    fi
    rp=$(field "$line" params)
    rb=$(field "$line" buffers)
    same=$([ "$rp" = "$tp" ] && [ "$rb" = "$tb" ] && echo equal || echo DIFFERENT)
    rows+="| $n | $tp (+$tb statistics) | $rp (+$rb) $same | $(field "$line" nodes) -> $(field "$line" layers) ($(field "$line" folded) folded, $(field "$line" aliases) aliases) | $(field "$line" max_abs) / $(field "$line" max_rel) | $ok | forward at batch 2 in ${secs} s |"$'\n'
    [ "$ok" = yes ] || continue
    if [ -f "$work/$n.sgd.f64.losses.pb" ] && [ -f "$work/$n.adam.f64.losses.pb" ]; then
        echo "onnx bench: $n, 20 training steps" >&2
        s=$(date +%s)
        sgd=$(parity "$n" "$loss" sgd 1e-3 0.9)
        adam=$(parity "$n" "$loss" adam 1e-4 0)
        train_rows+="| $n | ${sgd#| }${adam#|} $(( $(date +%s) - s )) s |"$'\n'
    else
        why=$(grep "^$n: training failed" "$work/export.log" | head -1 | cut -c1-200 | sed 's/|/\\|/g')
        train_rows+="| $n | PyTorch did not train it: ${why:-see $work/export.log} | | | | | | |"$'\n'
    fi
    mb=$("$dir/remat" maxbatch --onnx "$f" --loss "$loss" --budget 8GiB \
        --strategies chen_sqrtn,chen_greedy --time-limit 10 --quiet 2>&1 | sed -n '/^strategy/,/^$/p' || true)
    maxbatch_blocks+=$'\n'"\`remat maxbatch --onnx $n.onnx --loss $loss --budget 8GiB --strategies chen_sqrtn,chen_greedy --time-limit 10\`:"$'\n\n```text\n'"$mb"$'\n```\n'
done
# The same networks from remat's own configs, where there is one: the ONNX
# import must give the same parameters and the same maximal batches.
cross=""
mb_rows() { "$dir/remat" maxbatch "$@" --budget 8GiB --strategies chen_greedy --time-limit 10 --quiet 2>/dev/null |
    awk '$1 == "checkpoint_all" || $1 == "chen_greedy" { printf "%s %s ", $1, $2 }'; }
for n in "${nets[@]}"; do
    [ -f "models/$n.cfg" ] && [ -f "$work/$n.onnx" ] || continue
    cp=$("$dir/remat" graph --model "models/$n.cfg" --batch 1 | awk '$1 == "parameters" { print $2 }')
    op=$("$dir/remat" graph --onnx "$work/$n.onnx" --batch 1 2>/dev/null | awk '$1 == "parameters" { print $2 }')
    cross+="| $n | $cp | $op | $(mb_rows --model "models/$n.cfg") | $(mb_rows --onnx "$work/$n.onnx") |"$'\n'
done
total=$(( $(date +%s) - t0 ))

cat >docs/bench/onnx.md <<EOF
# Networks exported from PyTorch, imported by remat

Produced on $(date -u +%Y-%m-%d) by \`bench/onnx_torchvision.sh\` ($versions from PyPI, in a virtual
environment of the bench's own; $total s on this project's 2-core machine$([ ${#todo[@]} -eq 0 ] && echo ", remat's side only: the exports and PyTorch's training runs are an earlier run's")). Each network is torchvision's (or
bench/onnx_export.py's U-Net) with its initialisation, random batchnorm affine parameters and running statistics measured on a random batch, exported with
\`torch.onnx.export(..., dynamo=False, opset_version=13, do_constant_folding=False)\` (opset 14 for the
transformers, whose attention needs it) in eval mode with a
symbolic batch, and imported with \`--onnx\`. Columns: PyTorch's parameter count (and batchnorm running
statistics); remat's; the import (ONNX nodes -> remat layers, the loss included); the largest absolute and
relative difference between remat's forward output and PyTorch's on the same batch of 2 (random normal
input, eval mode); match: every element within 1e-4 max(1, max|PyTorch|) + 1e-3 |PyTorch| (bench/onnx_check.c says why that
tolerance). A network remat refuses shows the importer's message.

| network | PyTorch parameters | remat parameters | import | max abs / rel difference | match | note |
|---|---|---|---|---|---|---|
$rows
A refused network's row quotes what remat lacks for it (docs/onnx.md lists what is supported).

## 20 training steps beside PyTorch's

Each network that matches above trains 20 steps in remat (\`bench/train_parity.c\`, under checkpoint-all:
a step under any schedule is bit-identical) and in PyTorch (\`train()\` in bench/onnx_export.py), from the
same weights, on the same 20 batches of 2 (random normal images, random labels), in train mode (batch
statistics; dropout and stochastic depth off, their masks being random draws two frameworks never share),
with SGD (lr 1e-3, momentum 0.9, weight decay 1e-4) and with Adam (lr 1e-4, betas 0.9 and 0.999, eps 1e-8,
weight decay 1e-4), both as torch.optim defines them, weight decay on every tensor as torch.optim's one
parameter group does. PyTorch trains in float32 and in float64. On random labels with batchnorm over 2
samples the trajectory is chaotic: float32 rounding alone moves PyTorch's losses 1e-3 to 1e-2 from the
float64 run's within 20 steps. So the float64 run is the reference, and each cell reads remat's difference
from it / PyTorch float32's: loss, the largest relative difference over the 20 steps; weights, the largest
difference of a parameter after the last step over the largest parameter. match: remat's loss and weight
differences (and those of the batchnorm statistics) are each within 4 times PyTorch float32's (plus 1e-5).

| network | SGD: loss | SGD: weights | SGD match | Adam: loss | Adam: weights | Adam match | time |
|---|---|---|---|---|---|---|---|
$train_rows
## The same networks from remat's configs

remat's models/*.cfg describe some of these networks by hand. Imported from PyTorch's export they must
train the same parameters and fit the same batches (\`remat maxbatch ... --budget 8GiB --strategies
chen_greedy\`; PyTorch's ResNets flatten before the classifier where the configs do not, so their imports
have one layer more, a copy of a few thousand floats per sample; efficientnet_b0's config has torchvision's
stochastic depth, 9 drop_path layers an eval-mode export leaves out, whose outputs cost memory):

| network | config parameters | ONNX parameters | config: max batch | ONNX: max batch |
|---|---|---|---|---|
$cross
## remat maxbatch on them
$maxbatch_blocks
chen_sqrtn finds nothing for the ResNets and MobileNet under the default overhead cap (one extra forward
pass) at any batch, imported or from a config alike: its segments recompute more than that on these graphs.
EOF
echo "onnx bench: docs/bench/onnx.md written ($total s)" >&2

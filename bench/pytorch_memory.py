#!/usr/bin/env python3
"""What a PyTorch user's memory options cost, measured on the CPU: one option, one model,
one fresh process (bench/vs_pytorch_memory.sh runs it once per point).

Options (--mode):
  eager       plain training, every activation kept
  checkpoint  torch.utils.checkpoint (non-reentrant) around every block: ResNet's
              residual blocks, VGG's stages between poolings, U-Net's double convs,
              ViT's encoder layers
  compile     torch.compile with torch._functorch.config.activation_memory_budget
              = --budget (1.0: save what the partitioner would; 0.0: recompute all
              it may)

A step is forward, cross-entropy, backward and SGD with momentum 0.9 (remat's default),
float32, on one random batch; optimizer.zero_grad() frees the gradients between steps
(PyTorch's default, set_to_none). The models are bench/pytorch_step.py's: torchvision's
ResNet-18/50, VGG-16 and ViT-B/16 (at --size), and the U-Net of models/unet.cfg.

Time: the median of --steps steps after --warmup (the compile happens in the warm-up),
with glibc's allocator as PyTorch users have it.

Memory: then the allocator is told to give large frees back at once
(mallopt M_MMAP_THRESHOLD 64 KiB and M_TRIM_THRESHOLD 128 KiB, malloc_trim(0)), one
step settles it, and over two more steps the kernel's peak resident size
(/proc/self/status VmHWM, restarted by writing 5 to /proc/self/clear_refs) less the
resident size just before them is the step's transient memory: activations, gradients,
the kernels' temporaries. Added to it, counted exactly, what persists between steps:
parameters, batchnorm buffers, the optimizer's momentum, and the batch (remat holds its
input and labels in its budget too). peak = persistent + transient is what
remat's --budget is compared with.

Prints one line "RESULT mode=... budget=... peak=BYTES transient=BYTES persistent=BYTES
ms=MEDIAN steps=N".
"""
import argparse
import ctypes
import gc
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_step  # noqa: E402  (the models, shared with the step-time bench)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise SystemExit(f"pytorch_memory: no {field} in /proc/self/status")


class Checkpointed(nn.Module):
    """A block whose activations are recomputed in backward (torch.utils.checkpoint)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return ckpt.checkpoint(self.block, x, use_reentrant=False)


def checkpoint_blocks(name, model):
    """Wraps the per-block units a PyTorch user would checkpoint; returns how many."""
    n = 0
    if name.startswith("resnet"):
        for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
            for i in range(len(stage)):
                stage[i] = Checkpointed(stage[i])
                n += 1
    elif name == "vgg16":
        layers, stage, out = list(model.features), [], []
        for m in layers:
            if isinstance(m, nn.MaxPool2d):
                out += [Checkpointed(nn.Sequential(*stage)), m]
                stage = []
                n += 1
            else:
                stage.append(m)
        model.features = nn.Sequential(*out, *stage)
    elif name == "unet":
        for mods in (model.enc, model.dec):
            for i in range(len(mods)):
                mods[i] = Checkpointed(mods[i])
                n += 1
        model.bottom = Checkpointed(model.bottom)
        n += 1
    elif name == "vit_b_16":
        layers = model.encoder.layers
        for i in range(len(layers)):
            layers[i] = Checkpointed(layers[i])
            n += 1
    else:
        raise SystemExit(f"pytorch_memory: no blocks known for {name}")
    return n


def tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=["resnet18", "resnet50", "vgg16", "unet", "vit_b_16"])
    p.add_argument("--mode", required=True, choices=["eager", "checkpoint", "compile"])
    p.add_argument("--budget", type=float, default=1.0, help="compile: activation_memory_budget in [0, 1]")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=0, help="input height = width (default: the model's)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    if a.steps < 1 or a.warmup < 1 or a.batch < 1 or a.threads < 1 or not 0.0 <= a.budget <= 1.0:
        p.error("--steps, --warmup, --batch, --threads at least 1; --budget in [0, 1]")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model, chw, classes, per_pixel = pytorch_step.build(a.model, a.size)
    model.train()
    if a.mode == "checkpoint":
        checkpoint_blocks(a.model, model)
    run = model
    if a.mode == "compile":
        import torch._functorch.config as fcfg
        fcfg.activation_memory_budget = a.budget
        run = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(a.batch, *chw, generator=gen)
    ys = (a.batch, chw[1], chw[2]) if per_pixel else (a.batch,)
    y = torch.randint(0, classes, ys, generator=gen)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    if not torch.isfinite(loss).item():
        raise SystemExit("pytorch_memory: the loss is not finite")

    libc = ctypes.CDLL("libc.so.6")
    if not (libc.mallopt(M_MMAP_THRESHOLD, 64 << 10) and libc.mallopt(M_TRIM_THRESHOLD, 128 << 10)):
        raise SystemExit("pytorch_memory: mallopt refused")
    step()
    opt.zero_grad()
    gc.collect()
    libc.malloc_trim(0)
    before = status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    for _ in range(2):
        step()
    transient = status_kb("VmHWM") - before
    state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    persistent = tensor_bytes(model.parameters()) + tensor_bytes(model.buffers()) + tensor_bytes(state) + \
        tensor_bytes([x, y])
    print(f"RESULT model={a.model} mode={a.mode} budget={a.budget:g} batch={a.batch} threads={a.threads} "
          f"peak={persistent + transient} transient={transient} persistent={persistent} "
          f"ms={statistics.median(times):.1f} steps={len(times)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

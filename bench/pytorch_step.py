#!/usr/bin/env python3
"""One PyTorch training step of ResNet-18 / ResNet-50 / VGG-16 / MobileNet v2 / U-Net, timed:
the reference remat's kernel libraries are compared with, on the GPU (the default) or
on the CPU (--device cpu, with --threads N).

Each step is forward, loss, backward and an SGD-with-momentum update (remat's
default optimizer: momentum 0.9), float32, NCHW, synthetic data that stays on
the device. Timing on the GPU: CUDA events around each step after a warm-up
(which also lets cuDNN's autotuner settle when --benchmark is given); on the
CPU: the monotonic clock around each step, torch.set_num_threads(--threads)
(intra-op threads; the driver also sets OMP_NUM_THREADS). Median of --steps
steps; prints median step time and images/s, one row per model, and one line
"RESULT model=... ms=... images_s=..." per model for the drivers.

    python3 bench/pytorch_step.py [--model resnet18|resnet50|vgg16|mobilenet_v2|vit_b_16|unet|all]
                                  (all: resnet50, vgg16 and unet, the GPU set)
                                  [--batch 32] [--steps 20] [--warmup 5]
                                  [--size 224] [--device cuda|cpu] [--threads N]
                                  [--tf32] [--benchmark] [--deterministic]

Defaults match remat's default kernel library settings: TF32 off (remat's precise
mode; --tf32 is PyTorch's own cuDNN default), cuDNN autotuning off
(cudnn.benchmark = False, heuristics like remat's cudnn kernel library),
non-deterministic algorithms allowed unless --deterministic.

U-Net is defined here to match models/unet.cfg: padded 3x3 conv (no bias) +
batchnorm + ReLU twice per stage, 64-128-256-512-1024 channels, 2x2 max pool
down, 2x2 stride-2 transposed convolution (with bias) up, concatenation
[encoder, upsampled] in that order, a final 1x1 convolution (with bias) to 2
classes and a per-pixel softmax cross-entropy. Its default size is 256
(as unet.cfg); ResNet-50 and VGG-16 use 224 and 1000 classes.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """models/unet.cfg."""

    def __init__(self, cin=3, classes=2, widths=(64, 128, 256, 512, 1024)):
        super().__init__()
        self.enc = nn.ModuleList()
        c = cin
        for w in widths[:-1]:
            self.enc.append(double_conv(c, w))
            c = w
        self.bottom = double_conv(c, widths[-1])
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        c = widths[-1]
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(c, w, 2, stride=2, bias=True))
            self.dec.append(double_conv(2 * w, w))  # concat(encoder w, upsampled w)
            c = w
        self.outc = nn.Conv2d(c, classes, 1, bias=True)

    def forward(self, x):
        skips = []
        for enc in self.enc:
            x = enc(x)
            skips.append(x)
            x = F.max_pool2d(x, 2, 2)
        x = self.bottom(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([skip, up(x)], dim=1))
        return self.outc(x)


def build(name, size):
    import torchvision
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None), (3, size or 224, size or 224), 1000, False
    if name == "resnet50":
        return torchvision.models.resnet50(weights=None), (3, size or 224, size or 224), 1000, False
    if name == "vgg16":
        vgg = torchvision.models.vgg16(weights=None)
        if size and size != 224:
            # models/vgg16.cfg flattens the last pooling's s/32 x s/32 map into
            # fc6; torchvision would first pool it up to 7x7 (fc6 of 25088
            # inputs: 138M parameters, not the config's 54M at 112x112).
            import torch.nn as nn
            vgg.avgpool = nn.Identity()
            vgg.classifier[0] = nn.Linear(512 * (size // 32) ** 2, 4096)
        return vgg, (3, size or 224, size or 224), 1000, False
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(weights=None), (3, size or 224, size or 224), 1000, False
    if name == "vit_b_16":
        # The position embedding is sized for the image: give torchvision the size.
        vit = torchvision.models.vit_b_16(weights=None, **({"image_size": size} if size else {}))
        return vit, (3, size or 224, size or 224), 1000, False
    if name == "unet":
        return UNet(), (3, size or 256, size or 256), 2, True
    raise SystemExit(f"unknown model {name}")


def time_model(name, args, dev):
    model, (c, h, w), classes, per_pixel = build(name, args.size)
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(args.batch, c, h, w, device=dev, generator=gen)
    if per_pixel:
        y = torch.randint(0, classes, (args.batch, h, w), device=dev, generator=gen)
    else:
        y = torch.randint(0, classes, (args.batch,), device=dev, generator=gen)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    cuda = dev.type == "cuda"
    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            loss = step()
            times.append((time.perf_counter() - t0) * 1e3)
    if not torch.isfinite(loss).item():
        print(f"{name}: loss is not finite", file=sys.stderr)
    med = statistics.median(times)
    peak = torch.cuda.max_memory_allocated(dev) / 2**30 if cuda else float("nan")
    print(f"{name:9s} {args.batch:6d} {h:4d}x{w:<4d} {med:10.2f} {min(times):10.2f} {args.batch / med * 1e3:10.1f} "
          f"{peak:9.2f}", flush=True)
    print(f"RESULT model={name} batch={args.batch} device={dev.type} threads={torch.get_num_threads()} "
          f"ms={med:.3f} min_ms={min(times):.3f} images_s={args.batch / med * 1e3:.3f} steps={len(times)}", flush=True)
    del model, opt, x, y
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all", choices=["resnet18", "resnet50", "vgg16", "mobilenet_v2", "vit_b_16", "unet", "all"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--size", type=int, default=0, help="input height = width (default 224, U-Net 256)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--threads", type=int, default=0, help="CPU: intra-op threads (default: PyTorch's own)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 in cuDNN and cuBLAS")
    p.add_argument("--benchmark", action="store_true", help="cudnn.benchmark = True (autotuning)")
    p.add_argument("--deterministic", action="store_true", help="deterministic algorithms only")
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch < 1 or args.threads < 0:
        p.error("--steps and --batch must be at least 1, --warmup and --threads at least 0")
    models = ["resnet50", "vgg16", "unet"] if args.model == "all" else [args.model]
    if args.device == "cpu":
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        print(f"# cpu, torch {torch.__version__}, {torch.get_num_threads()} threads, "
              f"median of {args.steps} steps after {args.warmup}")
        print(f"{'model':9s} {'batch':>6s} {'input':9s} {'median_ms':>10s} {'min_ms':>10s} {'images/s':>10s} {'peak_GiB':>9s}")
        for name in models:
            time_model(name, args, torch.device("cpu"))
        return 0
    if not torch.cuda.is_available():
        print("pytorch_step: no GPU: nothing timed")
        return 0
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = args.benchmark
    if args.deterministic:
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True, warn_only=True)
    print(f"# {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"tf32 {args.tf32}, benchmark {args.benchmark}, deterministic {args.deterministic}, "
          f"median of {args.steps} steps after {args.warmup}")
    print(f"{'model':9s} {'batch':>6s} {'input':9s} {'median_ms':>10s} {'min_ms':>10s} {'images/s':>10s} {'peak_GiB':>9s}")
    for name in models:
        try:
            time_model(name, args, dev)
        except torch.cuda.OutOfMemoryError:
            print(f"{name:9s} {args.batch:6d} out of memory")
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Exports the networks of bench/onnx_torchvision.sh with PyTorch's ONNX
exporter and writes, for each, NAME.onnx, NAME.input.pb (a batch of 2),
NAME.output.pb (PyTorch's output on it, eval mode) and NAME.json (PyTorch's
parameter count, the loss remat should add). Runs in the bench's venv
(torch, torchvision, numpy, onnx from PyPI); never part of the tests.

The weights are torchvision's initialisation (no pretrained download: the
bench machine reaches no model hub), with every batchnorm's affine
parameters randomised and its running statistics measured on a random
batch, so that eval-mode batchnorm is not the identity and a wrong mapping
of its four tensors would show.
Exported in eval mode without constant folding, so that batchnorm stays a
BatchNormalization node (folding would fuse it into the convolution, and
the parameters would no longer be PyTorch's) and PyTorch's shape
arithmetic stays in the graph for remat to fold.

    python onnx_export.py OUTDIR
"""
import copy
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import numpy_helper

torch.manual_seed(0)


def randomise_bn(model, shape):
    """Random affine parameters, and running statistics measured on a batch in train mode (as a trained network's
    are: every channel's own mean and variance). Made-up statistics let activations grow with depth: Inception
    v3's logits reached 1e10, where float rounding alone differs by more than the tolerance."""
    g = torch.Generator().manual_seed(1)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for m in bns:
        c = m.num_features
        m.weight.data = torch.rand(c, generator=g) + 0.5
        m.bias.data = torch.randn(c, generator=g) * 0.1
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
    model.train()
    with torch.no_grad():
        model(torch.randn((4,) + shape, generator=g))
    for m in bns:
        m.momentum = 0.1
    return model


def randomise_zeros(model):
    """ViT starts its head (and its class token) at zero, as torchvision initialises them: every logit would be 0
    and the forward check would compare nothing. Those start N(0, 0.02^2) here."""
    g = torch.Generator().manual_seed(3)
    for p in model.parameters():
        if not p.detach().abs().max() > 0:
            p.data = torch.randn(p.shape, generator=g) * 0.02
    return model


RANDOMISE_ZEROS = ("vit_b_16",)


class UNet(nn.Module):
    """A small U-Net: two down levels (conv-bn-relu x2, maxpool), a bottleneck,
    one up level by ConvTranspose2d(2, stride 2) and one by nn.Upsample(x2,
    nearest) followed by a conv, skip concatenations, a 1x1 conv to 4 classes."""

    def __init__(self, c=3, k=4, w=16):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

        self.d1, self.d2, self.mid = block(c, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.u2 = block(4 * w, 2 * w)
        self.up1 = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(2 * w, w, 3, padding=1))
        self.u1 = block(2 * w, w)
        self.head = nn.Conv2d(w, k, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(self.pool(a))
        m = self.mid(self.pool(b))
        b2 = self.u2(torch.cat([self.up2(m), b], 1))
        a2 = self.u1(torch.cat([self.up1(b2), a], 1))
        return self.head(a2)


def tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


IMAGE = (3, 224, 224)
# name: (constructor, input shape, loss, opset). torchvision's classification zoo (issue 27), and a U-Net.
# Attention exports at opset 14 and later only.
NETS = {
    "resnet18": (tv("resnet18"), IMAGE, "softmax_xent", 13),
    "resnet50": (tv("resnet50"), IMAGE, "softmax_xent", 13),
    "vgg16": (tv("vgg16"), IMAGE, "softmax_xent", 13),
    "alexnet": (tv("alexnet"), IMAGE, "softmax_xent", 13),
    "squeezenet1_1": (tv("squeezenet1_1"), IMAGE, "softmax_xent", 13),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), IMAGE, "softmax_xent", 13),
    "inception_v3": (tv("inception_v3", aux_logits=False, init_weights=True), (3, 299, 299), "softmax_xent", 13),
    "densenet121": (tv("densenet121"), IMAGE, "softmax_xent", 13),
    "mobilenet_v2": (tv("mobilenet_v2"), IMAGE, "softmax_xent", 13),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), IMAGE, "softmax_xent", 13),
    "mnasnet0_5": (tv("mnasnet0_5"), IMAGE, "softmax_xent", 13),
    "efficientnet_b0": (tv("efficientnet_b0"), IMAGE, "softmax_xent", 13),
    "shufflenet_v2_x0_5": (tv("shufflenet_v2_x0_5"), IMAGE, "softmax_xent", 13),
    "regnet_x_400mf": (tv("regnet_x_400mf"), IMAGE, "softmax_xent", 13),
    "resnext50_32x4d": (tv("resnext50_32x4d"), IMAGE, "softmax_xent", 13),
    "wide_resnet50_2": (tv("wide_resnet50_2"), IMAGE, "softmax_xent", 13),
    "convnext_tiny": (tv("convnext_tiny"), IMAGE, "softmax_xent", 13),
    "vit_b_16": (tv("vit_b_16"), IMAGE, "softmax_xent", 14),
    "swin_t": (tv("swin_t"), IMAGE, "softmax_xent", 14),
    "unet_small": (lambda: UNet(), (3, 64, 64), "pixel_softmax_xent", 13),
}


def export(name, out):
    make, shape, loss, opset = NETS[name]
    model = randomise_bn(make(), shape)
    if name in RANDOMISE_ZEROS:
        model = randomise_zeros(model)
    model = model.eval()
    x = torch.randn((2,) + shape)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=opset, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "input"), os.path.join(out, name + ".input.pb"))
    onnx.save_tensor(numpy_helper.from_array(y.numpy(), "logits"), os.path.join(out, name + ".output.pb"))
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked"))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"params": params, "buffers": buffers, "loss": loss, "opset": opset, "torch": torch.__version__,
                   "torchvision": torchvision.__version__}, f)
    print(f"{name}: exported, {params} parameters, {buffers} statistics", flush=True)
    return model


# 20 training steps beside remat's (bench/train_parity.c): batches of 2, random normal images and
# random labels, the same for both optimizers. Dropout and stochastic depth are off: their masks are
# random draws that two frameworks never share. PyTorch trains twice, in float32 and in float64: on
# random labels with batch-2 batchnorm the trajectory is chaotic enough that float32 rounding alone
# moves the losses by 1e-3 to 1e-2 within 20 steps, so the float64 run is the reference both float32
# runs (PyTorch's and remat's) are measured against.
TRAIN_STEPS, TRAIN_BATCH = 20, 2
OPTIMIZERS = {  # name: constructor; bench/onnx_torchvision.sh passes remat the same hyper-parameters
    "sgd": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, weight_decay=1e-4),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-4, weight_decay=1e-4),
}


def no_randomness(model):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return model


def train(name, model, out):
    """Writes NAME.train_x.pb, NAME.train_y.pb, and per optimizer and precision (f32, f64)
    NAME.OPT.PREC.losses.pb (the loss of every step) and NAME.OPT.PREC.final.onnx (the weights and batchnorm
    statistics after the last step, in float32, exported as the start was)."""
    make, shape, loss, opset = NETS[name]
    g = torch.Generator().manual_seed(2)
    x = torch.randn((TRAIN_STEPS * TRAIN_BATCH,) + shape, generator=g)
    if loss == "softmax_xent":
        y = torch.randint(0, 1000, (TRAIN_STEPS * TRAIN_BATCH,), generator=g)
    else:
        y = torch.randint(0, 4, (TRAIN_STEPS * TRAIN_BATCH,) + shape[1:], generator=g)
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "x"), os.path.join(out, name + ".train_x.pb"))
    onnx.save_tensor(numpy_helper.from_array(y.numpy().astype(np.int64), "y"), os.path.join(out, name + ".train_y.pb"))
    for opt_name, make_opt in OPTIMIZERS.items():
        for prec, dtype in (("f32", torch.float32), ("f64", torch.float64)):
            m = no_randomness(copy.deepcopy(model)).to(dtype).train()
            opt = make_opt(m.parameters())
            losses = []
            for s in range(TRAIN_STEPS):
                xb, yb = x[s * TRAIN_BATCH:(s + 1) * TRAIN_BATCH].to(dtype), y[s * TRAIN_BATCH:(s + 1) * TRAIN_BATCH]
                opt.zero_grad()
                l = nn.functional.cross_entropy(m(xb), yb)
                l.backward()
                opt.step()
                losses.append(l.item())
            stem = os.path.join(out, f"{name}.{opt_name}.{prec}")
            onnx.save_tensor(numpy_helper.from_array(np.array(losses, dtype=np.float32), "losses"), stem + ".losses.pb")
            m = m.float().eval()
            torch.onnx.export(m, (x[:TRAIN_BATCH],), stem + ".final.onnx", dynamo=False, opset_version=opset,
                              do_constant_folding=False, input_names=["input"], output_names=["logits"],
                              dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    print(f"{name}: trained {TRAIN_STEPS} steps with {', '.join(OPTIMIZERS)} in float32 and float64", flush=True)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or NETS:
        try:
            model = export(name, out)
        except Exception as e:  # one network's failure is its row of the table, not the end of the bench
            print(f"{name}: export failed: {e}", file=sys.stderr, flush=True)
            continue
        try:
            train(name, model, out)
        except Exception as e:
            print(f"{name}: training failed: {e}", file=sys.stderr, flush=True)

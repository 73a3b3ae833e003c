"""Exports the networks of bench/onnx_torchvision.sh with PyTorch's ONNX
exporter and writes, for each, NAME.onnx, NAME.input.pb (a batch of 2),
NAME.output.pb (PyTorch's output on it, eval mode) and NAME.json (PyTorch's
parameter count, the loss remat should add). Runs in the bench's venv
(torch, torchvision, numpy, onnx from PyPI); never part of the tests.

The weights are torchvision's initialisation (no pretrained download: the
bench machine reaches no model hub), with every batchnorm's affine
parameters and running statistics randomised, so that eval-mode batchnorm
is not the identity and a wrong mapping of its four tensors would show.
Exported in eval mode without constant folding, so that batchnorm stays a
BatchNormalization node (folding would fuse it into the convolution, and
the parameters would no longer be PyTorch's) and PyTorch's shape
arithmetic stays in the graph for remat to fold.

    python onnx_export.py OUTDIR
"""
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


def randomise_bn(model):
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.weight.data = torch.rand(c, generator=g) + 0.5
            m.bias.data = torch.randn(c, generator=g) * 0.1
            m.running_mean = torch.randn(c, generator=g) * 0.1
            m.running_var = torch.rand(c, generator=g) + 0.5
    return model


def relu6_to_relu(model):
    """MobileNetV2 with ReLU in place of ReLU6 (ReLU6 exports as Clip, which remat has no layer for)."""
    for name, child in model.named_children():
        if isinstance(child, nn.ReLU6):
            setattr(model, name, nn.ReLU(inplace=True))
        else:
            relu6_to_relu(child)
    return model


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


NETS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), (3, 224, 224), "softmax_xent"),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), (3, 224, 224), "softmax_xent"),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None), (3, 224, 224), "softmax_xent"),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (3, 224, 224), "softmax_xent"),
    "mobilenet_v2_relu": (lambda: relu6_to_relu(torchvision.models.mobilenet_v2(weights=None)), (3, 224, 224),
                          "softmax_xent"),
    "unet_small": (lambda: UNet(), (3, 64, 64), "pixel_softmax_xent"),
}


def export(name, out):
    make, shape, loss = NETS[name]
    model = randomise_bn(make()).eval()
    x = torch.randn((2,) + shape)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=13, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "input"), os.path.join(out, name + ".input.pb"))
    onnx.save_tensor(numpy_helper.from_array(y.numpy(), "logits"), os.path.join(out, name + ".output.pb"))
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked"))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"params": params, "buffers": buffers, "loss": loss, "torch": torch.__version__,
                   "torchvision": torchvision.__version__}, f)
    print(f"{name}: exported, {params} parameters, {buffers} statistics", flush=True)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or NETS:
        export(name, out)

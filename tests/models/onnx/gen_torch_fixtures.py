"""Writes the fixtures of tests/models/test_onnx.c that only PyTorch's
exporter can write faithfully: a tiny torchvision VisionTransformer, whose
nn.MultiheadAttention exports as some 150 nodes of reshapes, shape
arithmetic, MatMul and Softmax (gen_fixtures.py builds the others by hand
with onnx.helper). NAME.output.pb is PyTorch's float32 output on
NAME.input.pb, eval mode. Needs torch and torchvision (not the build or the
tests, which read the files):

    /work/torchenv/bin/python tests/models/onnx/gen_torch_fixtures.py

Deterministic for a given PyTorch: seeded weights and inputs.
"""
import os

import onnx
import torch
import torchvision
from onnx import numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))


def save(name, model, x, opset):
    model.eval()
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(OUT, name + ".onnx"), dynamo=False, opset_version=opset,
                      do_constant_folding=False, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    onnx.save_tensor(numpy_helper.from_array(x.numpy(), "input"), os.path.join(OUT, name + ".input.pb"))
    onnx.save_tensor(numpy_helper.from_array(y.numpy(), "logits"), os.path.join(OUT, name + ".output.pb"))


def tiny_vit():
    """ViT on 8x8 images in 4x4 patches (4 tokens and the class token), 1 encoder layer of 2 heads of 4 channels,
    MLP 16, 5 classes; every parameter random (torchvision starts the head and the class token at zero)."""
    torch.manual_seed(5)
    model = torchvision.models.VisionTransformer(image_size=8, patch_size=4, num_layers=1, num_heads=2, hidden_dim=8,
                                                 mlp_dim=16, num_classes=5)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    save("tiny_vit", model, torch.randn(2, 3, 8, 8), 14)


if __name__ == "__main__":
    tiny_vit()
    print("fixtures written to", OUT)

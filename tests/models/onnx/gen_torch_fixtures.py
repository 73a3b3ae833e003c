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


def save(name, model, x, opset, data=True):
    model.eval()
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(OUT, name + ".onnx"), dynamo=False, opset_version=opset,
                      do_constant_folding=False, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    if data:  # a network remat must refuse needs no input and output
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


class MaskedAttention(torch.nn.Module):
    """Causal self-attention (an attn_mask between the scores and the softmax), which remat refuses."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 8, 4, 4)
        self.ln = torch.nn.LayerNorm(8)
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        t = self.proj(x).flatten(2).transpose(1, 2)
        u = self.ln(t)  # as ViT's encoder layers: the attention reads a LayerNorm's tokens
        mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
        y, _ = self.attn(u, u, u, attn_mask=mask, need_weights=False)
        return self.head((t + y)[:, 0])


def bad_masked_attention():
    torch.manual_seed(6)
    save("bad_masked_attention", MaskedAttention(), torch.randn(2, 3, 8, 8), 14, data=False)


if __name__ == "__main__":
    tiny_vit()
    bad_masked_attention()
    print("fixtures written to", OUT)

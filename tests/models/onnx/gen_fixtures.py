#!/usr/bin/python3
"""Writes the ONNX fixtures of tests/models/test_onnx.c, with Debian's
python3-onnx (onnx.helper) and numpy only: no PyTorch.

Each network NAME.onnx comes with NAME.input.pb (a batch of 2) and
NAME.output.pb: its output, computed here with plain numpy in float64 (the
references below, written from the ONNX operator definitions, independent
of remat) and stored as float32. The graphs are built the way PyTorch's
exporter writes them (node names like "/layer1/conv1/Conv", the
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain of x.view(x.size(0),
-1), nn.Linear as MatMul + Add, Resize with constant scales), so the tests
exercise what an export contains. The broken ones each have one thing remat
must refuse. Deterministic: the same files on every run.

    /usr/bin/python3 tests/models/onnx/gen_fixtures.py   # rewrites the fixtures
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
rng = np.random.default_rng(20240611)


# ---- numpy references (float64) -------------------------------------------------

def pair(v):
    return (v, v) if np.isscalar(v) else tuple(v)


def conv(x, w, b=None, stride=1, pad=0, groups=1, dilation=1):
    """stride, pad (each side) and dilation: one number for both axes or (h, w)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(pad), pair(dilation)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    ho, wo = (h + 2 * ph - eh) // sh + 1, (wd + 2 * pw - ew) // sw + 1
    y = np.zeros((n, o, ho, wo))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(ho):
            for j in range(wo):
                win = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + eh:dh, j * sw:j * sw + ew:dw]
                y[:, oc, i, j] = (win * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        y += b[None, :, None, None]
    return y


def batchnorm(x, scale, bias, mean, var, eps):
    s = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(s)) / np.sqrt(var.reshape(s) + eps) * scale.reshape(s) + bias.reshape(s)


def relu(x):
    return np.maximum(x, 0)


def pool(x, k, stride, pad=0, mode="max"):
    n, c, h, w = x.shape
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    y = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            win = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            y[:, :, i, j] = win.max(axis=(2, 3)) if mode == "max" else win.sum(axis=(2, 3)) / (k * k)
    return y


def conv_transpose2x2(x, w, b):
    n, c, h, wd = x.shape
    o = w.shape[1]
    y = np.zeros((n, o, 2 * h, 2 * wd))
    for a in range(2):
        for bb in range(2):
            y[:, :, a::2, bb::2] = np.einsum("nchw,co->nohw", x, w[:, :, a, bb])
    return y + b[None, :, None, None]


def upsample2x(x):
    return x.repeat(2, axis=2).repeat(2, axis=3)


# ---- building graphs ------------------------------------------------------------

class Net:
    """A graph under construction: initializers (float32, kept in float64 for the references) and nodes."""

    def __init__(self, name):
        self.name, self.nodes, self.inits = name, [], []

    def weight(self, name, shape, scale=0.5, positive=False):
        v = rng.uniform(0.5, 1.5, shape) if positive else rng.normal(0.0, scale, shape)
        v = v.astype(np.float32)
        self.inits.append(numpy_helper.from_array(v, name))
        return name, v.astype(np.float64)

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, outputs, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0]

    def model(self, in_shape, out_name, out_shape, batch="N", opset=OPSET):
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch] + list(in_shape))
        y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, [batch] + list(out_shape))
        g = helper.make_graph(self.nodes, self.name, [x], [y], initializer=self.inits)
        m = helper.make_model(g, producer_name="remat gen_fixtures.py", producer_version="1",
                              opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(m)
        return m


def save(name, model, x=None, y=None):
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    if x is not None:
        onnx.save_tensor(numpy_helper.from_array(x.astype(np.float32), "input"), os.path.join(OUT, name + ".input.pb"))
        onnx.save_tensor(numpy_helper.from_array(y.astype(np.float32), "output"), os.path.join(OUT, name + ".output.pb"))


def batch(shape):
    return rng.normal(0.0, 1.0, (2,) + shape).astype(np.float32)


# ---- the networks ------------------------------------------------------------------

def conv_bn_relu(net, x_name, x, cin, cout, prefix, k=3, pad=1, stride=1, bias=True, groups=1):
    w, wv = net.weight(prefix + ".weight", (cout, cin // groups, k, k))
    ins = [x_name, w]
    bv = None
    if bias:
        b, bv = net.weight(prefix + ".bias", (cout,), 0.1)
        ins.append(b)
    attrs = dict(kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])
    if groups != 1:
        attrs["group"] = groups
    y = net.node("Conv", ins, [f"/{prefix}/Conv_output_0"], f"/{prefix}/Conv", **attrs)
    yv = conv(x, wv, bv, stride, pad, groups)
    s, sv = net.weight(prefix + ".bn.weight", (cout,), positive=True)
    b2, b2v = net.weight(prefix + ".bn.bias", (cout,), 0.1)
    m, mv = net.weight(prefix + ".bn.running_mean", (cout,), 0.1)
    v, vv = net.weight(prefix + ".bn.running_var", (cout,), positive=True)
    y = net.node("BatchNormalization", [y, s, b2, m, v], [f"/{prefix}/bn/BatchNormalization_output_0"],
                 f"/{prefix}/bn/BatchNormalization", epsilon=1e-5, momentum=0.9)
    yv = batchnorm(yv, sv, b2v, mv, vv, 1e-5)
    y = net.node("Relu", [y], [f"/{prefix}/relu/Relu_output_0"], f"/{prefix}/relu/Relu")
    return y, relu(yv)


def view_flatten(net, x_name, prefix):
    """x.view(x.size(0), -1) as PyTorch's TorchScript exporter writes it."""
    shape = net.node("Shape", [x_name], [f"/{prefix}/Shape_output_0"], f"/{prefix}/Shape")
    zero = net.node("Constant", [], [f"/{prefix}/Constant_output_0"], f"/{prefix}/Constant",
                    value=numpy_helper.from_array(np.array(0, dtype=np.int64)))
    n = net.node("Gather", [shape, zero], [f"/{prefix}/Gather_output_0"], f"/{prefix}/Gather", axis=0)
    axes = net.const(prefix + ".axes", np.array([0], dtype=np.int64))
    n1 = net.node("Unsqueeze", [n, axes], [f"/{prefix}/Unsqueeze_output_0"], f"/{prefix}/Unsqueeze")
    minus = net.const(prefix + ".minus_one", np.array([-1], dtype=np.int64))
    target = net.node("Concat", [n1, minus], [f"/{prefix}/Concat_output_0"], f"/{prefix}/Concat", axis=0)
    return net.node("Reshape", [x_name, target], [f"/{prefix}/Reshape_output_0"], f"/{prefix}/Reshape")


def cbr_pool_gemm():
    """conv-bn-relu, maxpool, x.view(N, -1), Gemm (nn.Linear): a small classifier."""
    net = Net("cbr_pool_gemm")
    x = batch((3, 8, 8))
    y, yv = conv_bn_relu(net, "input", x.astype(np.float64), 3, 4, "features.0")
    y = net.node("MaxPool", [y], ["/features.1/MaxPool_output_0"], "/features.1/MaxPool", kernel_shape=[2, 2],
                 strides=[2, 2])
    yv = pool(yv, 2, 2)
    y = view_flatten(net, y, "flatten")
    yv = yv.reshape(2, -1)
    w, wv = net.weight("classifier.weight", (5, 64), 0.2)
    b, bv = net.weight("classifier.bias", (5,), 0.1)
    y = net.node("Gemm", [y, w, b], ["logits"], "/classifier/Gemm", alpha=1.0, beta=1.0, transB=1)
    yv = yv @ wv.T + bv
    save("cbr_pool_gemm", net.model((3, 8, 8), "logits", (5,)), x, yv)


def residual():
    """A ResNet basic block (conv-bn-relu, conv-bn, the skip Add, relu), global
    average pooling, Flatten and nn.Linear exported as MatMul + Add."""
    net = Net("residual")
    x = batch((4, 6, 6))
    xv = x.astype(np.float64)
    a, av = conv_bn_relu(net, "input", xv, 4, 4, "layer1.0.conv1")
    w, wv = net.weight("layer1.0.conv2.weight", (4, 4, 3, 3))
    c = net.node("Conv", [a, w], ["/layer1/layer1.0/conv2/Conv_output_0"], "/layer1/layer1.0/conv2/Conv",
                 kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    cv = conv(av, wv, None, 1, 1)
    s, sv = net.weight("layer1.0.bn2.weight", (4,), positive=True)
    b, bv = net.weight("layer1.0.bn2.bias", (4,), 0.1)
    m, mv = net.weight("layer1.0.bn2.running_mean", (4,), 0.1)
    v, vv = net.weight("layer1.0.bn2.running_var", (4,), positive=True)
    c = net.node("BatchNormalization", [c, s, b, m, v], ["/layer1/layer1.0/bn2/BatchNormalization_output_0"],
                 "/layer1/layer1.0/bn2/BatchNormalization", epsilon=1e-5, momentum=0.9)
    cv = batchnorm(cv, sv, bv, mv, vv, 1e-5)
    s = net.node("Add", [c, "input"], ["/layer1/layer1.0/Add_output_0"], "/layer1/layer1.0/Add")
    s = net.node("Relu", [s], ["/layer1/layer1.0/relu_1/Relu_output_0"], "/layer1/layer1.0/relu_1/Relu")
    sv = relu(cv + xv)
    g = net.node("GlobalAveragePool", [s], ["/avgpool/GlobalAveragePool_output_0"], "/avgpool/GlobalAveragePool")
    gv = sv.mean(axis=(2, 3))
    f = net.node("Flatten", [g], ["/Flatten_output_0"], "/Flatten", axis=1)
    w, wv = net.weight("fc.weight_t", (4, 3), 0.5)  # MatMul's B is [in, out]
    b, bv = net.weight("fc.bias", (3,), 0.1)
    mm = net.node("MatMul", [f, w], ["/fc/MatMul_output_0"], "/fc/MatMul")
    net.node("Add", [mm, b], ["logits"], "/fc/Add")
    save("residual", net.model((4, 6, 6), "logits", (3,)), x, gv @ wv + bv)


def unet_tiny():
    """A two-level U-Net: down (conv, relu, maxpool), bottom conv, up by
    ConvTranspose 2x2 stride 2, Concat with the skip, conv, then Resize
    nearest x2 (asymmetric, floor: PyTorch's nn.Upsample) and a 1x1 conv to 3
    classes per pixel."""
    net = Net("unet_tiny")
    x = batch((2, 8, 8))
    xv = x.astype(np.float64)
    w, wv = net.weight("down.conv.weight", (4, 2, 3, 3))
    b, bv = net.weight("down.conv.bias", (4,), 0.1)
    d = net.node("Conv", ["input", w, b], ["/down/conv/Conv_output_0"], "/down/conv/Conv", kernel_shape=[3, 3],
                 pads=[1, 1, 1, 1])
    d = net.node("Relu", [d], ["/down/relu/Relu_output_0"], "/down/relu/Relu")
    dv = relu(conv(xv, wv, bv, 1, 1))
    p = net.node("MaxPool", [d], ["/down/pool/MaxPool_output_0"], "/down/pool/MaxPool", kernel_shape=[2, 2],
                 strides=[2, 2])
    pv = pool(dv, 2, 2)
    w, wv = net.weight("bottom.weight", (8, 4, 3, 3))
    b, bv = net.weight("bottom.bias", (8,), 0.1)
    m = net.node("Conv", [p, w, b], ["/bottom/Conv_output_0"], "/bottom/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    m = net.node("Relu", [m], ["/bottom/Relu_output_0"], "/bottom/Relu")
    mv = relu(conv(pv, wv, bv, 1, 1))
    w, wv = net.weight("up.weight", (8, 4, 2, 2))
    b, bv = net.weight("up.bias", (4,), 0.1)
    u = net.node("ConvTranspose", [m, w, b], ["/up/ConvTranspose_output_0"], "/up/ConvTranspose",
                 kernel_shape=[2, 2], strides=[2, 2])
    uv = conv_transpose2x2(mv, wv, bv)
    cat = net.node("Concat", [u, d], ["/Concat_output_0"], "/Concat", axis=1)
    catv = np.concatenate([uv, dv], axis=1)
    w, wv = net.weight("head.conv.weight", (4, 8, 3, 3), 0.3)
    b, bv = net.weight("head.conv.bias", (4,), 0.1)
    h = net.node("Conv", [cat, w, b], ["/head/conv/Conv_output_0"], "/head/conv/Conv", kernel_shape=[3, 3],
                 pads=[1, 1, 1, 1])
    hv = conv(catv, wv, bv, 1, 1)
    scales = net.node("Constant", [], ["/head/Constant_output_0"], "/head/Constant",
                      value=numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32)))
    r = net.node("Resize", [h, "", scales], ["/head/Resize_output_0"], "/head/Resize", mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    rv = upsample2x(hv)
    w, wv = net.weight("classes.weight", (3, 4, 1, 1))
    b, bv = net.weight("classes.bias", (3,), 0.1)
    net.node("Conv", [r, w, b], ["logits"], "/classes/Conv", kernel_shape=[1, 1])
    save("unet_tiny", net.model((2, 8, 8), "logits", (3, 16, 16)), x, conv(rv, wv, bv))


def depthwise():
    """A MobileNet block: depthwise conv (group = channels) -bn-relu, pointwise
    conv-bn-relu, Dropout (ratio 0.2: identity in inference), Identity,
    AveragePool 2x2, GlobalAveragePool, Flatten, Gemm with transB=0 and alpha."""
    net = Net("depthwise")
    x = batch((4, 8, 8))
    xv = x.astype(np.float64)
    y, yv = conv_bn_relu(net, "input", xv, 4, 4, "features.0.dw", groups=4, bias=False)
    y, yv = conv_bn_relu(net, y, yv, 4, 6, "features.0.pw", k=1, pad=0)
    ratio = net.const("dropout.ratio", np.array(0.2, dtype=np.float32))
    y = net.node("Dropout", [y, ratio], ["/dropout/Dropout_output_0"], "/dropout/Dropout")
    y = net.node("Identity", [y], ["/Identity_output_0"], "/Identity")
    y = net.node("AveragePool", [y], ["/pool/AveragePool_output_0"], "/pool/AveragePool", kernel_shape=[2, 2],
                 strides=[2, 2])
    yv = pool(yv, 2, 2, mode="avg")
    y = net.node("GlobalAveragePool", [y], ["/gap/GlobalAveragePool_output_0"], "/gap/GlobalAveragePool")
    yv = yv.mean(axis=(2, 3))
    y = net.node("Flatten", [y], ["/Flatten_output_0"], "/Flatten")
    w, wv = net.weight("head.weight_t", (6, 4), 0.5)
    b, bv = net.weight("head.bias", (4,), 0.1)
    net.node("Gemm", [y, w, b], ["logits"], "/head/Gemm", alpha=0.5, beta=1.0)
    save("depthwise", net.model((4, 8, 8), "logits", (4,)), x, 0.5 * (yv @ wv) + bv)


def fixed_batch():
    """An export with the batch fixed at 1 and folded into the Reshape's
    constant shape [1, 16]: the first dimension is still the batch."""
    net = Net("fixed_batch")
    x = batch((4, 2, 2))
    target = net.const("shape", np.array([1, 16], dtype=np.int64))
    y = net.node("Reshape", ["input", target], ["/Reshape_output_0"], "/Reshape")
    w, wv = net.weight("fc.weight", (3, 16), 0.3)
    b, bv = net.weight("fc.bias", (3,), 0.1)
    net.node("Gemm", [y, w, b], ["logits"], "/fc/Gemm", transB=1)
    save("fixed_batch", net.model((4, 2, 2), "logits", (3,), batch=1), x,
         x.astype(np.float64).reshape(2, -1) @ wv.T + bv)


def upsample_opset9():
    """Opset 9's Upsample (scales as an input), nearest x2, then a 1x1 conv to 2 classes per pixel."""
    net = Net("upsample_opset9")
    x = batch((3, 4, 5))
    scales = net.const("scales", np.array([1, 1, 2, 2], dtype=np.float32))
    u = net.node("Upsample", ["input", scales], ["/Upsample_output_0"], "/Upsample", mode="nearest")
    w, wv = net.weight("head.weight", (2, 3, 1, 1))
    b, bv = net.weight("head.bias", (2,), 0.1)
    net.node("Conv", [u, w, b], ["logits"], "/head/Conv", kernel_shape=[1, 1])
    save("upsample_opset9", net.model((3, 4, 5), "logits", (2, 8, 10), opset=9), x,
         conv(upsample2x(x.astype(np.float64)), wv, bv))


# ---- broken: each must be refused with a message naming the node -----------------------

def one_conv(name, **attrs):
    net = Net(name)
    w, wv = net.weight("conv.weight", (4, 2 if attrs.get("group", 1) == 2 else 4, 3, 3))
    attrs.setdefault("kernel_shape", [3, 3])
    y = net.node("Conv", ["input", w], ["/conv/Conv_output_0"], "/conv/Conv", **attrs)
    net.node("GlobalAveragePool", [y], ["/gap_output_0"], "/gap")
    f = net.node("Flatten", ["/gap_output_0"], ["logits"], "/flatten")
    return net, wv


def one_conv_ok(name, **attrs):
    """A dilated or grouped convolution, once refused, now a fixture with a reference; its input from an rng of
    its own, so the fixtures after it keep their draws."""
    net, wv = one_conv(name, **attrs)
    x = np.random.default_rng(len(name)).normal(0.0, 1.0, (2, 4, 8, 8)).astype(np.float32)
    y = conv(x.astype(np.float64), wv, groups=attrs.get("group", 1), dilation=attrs.get("dilations", [1, 1]))
    save(name, net.model((4, 8, 8), "logits", (4,)), x, y.mean(axis=(2, 3)))


def broken():
    one_conv_ok("conv_dilation", dilations=[2, 2])
    net, _ = one_conv("bad_autopad", auto_pad="SAME_UPPER")
    save("bad_autopad", net.model((4, 8, 8), "logits", (4,)))
    net, _ = one_conv("bad_asymmetric", pads=[1, 1, 0, 0])
    save("bad_asymmetric", net.model((4, 8, 8), "logits", (4,)))
    one_conv_ok("conv_group", group=2)
    # An operator remat has no layer for.
    net = Net("bad_op")
    w, _ = net.weight("fc.weight", (3, 4))
    y = net.node("LeakyRelu", ["input"], ["/act/LeakyRelu_output_0"], "/act/LeakyRelu", alpha=0.01)
    net.node("Gemm", [y, w], ["logits"], "/fc/Gemm", transB=1)
    save("bad_op", net.model((4,), "logits", (3,)))
    # A final softmax: remat's loss applies it.
    net = Net("bad_softmax")
    w, _ = net.weight("fc.weight", (3, 4))
    y = net.node("Gemm", ["input", w], ["/fc/Gemm_output_0"], "/fc/Gemm", transB=1)
    net.node("Softmax", [y], ["probs"], "/Softmax", axis=1)
    save("bad_softmax", net.model((4,), "probs", (3,)))
    # Hardtanh, a Clip to [-1, 1]: remat clips to [0, inf) (relu) and [0, 6] (relu6) only.
    net = Net("bad_clip")
    lo = net.const("min", np.array(-1.0, dtype=np.float32))
    hi = net.const("max", np.array(1.0, dtype=np.float32))
    net.node("Clip", ["input", lo, hi], ["logits"], "/features.0/Clip")
    save("bad_clip", net.model((4,), "logits", (4,)))
    # A file cut in the middle: protobuf-c must refuse it.
    data = open(os.path.join(OUT, "residual.onnx"), "rb").read()
    open(os.path.join(OUT, "truncated.onnx"), "wb").write(data[: len(data) // 2])


# ---- activations (after the others: their draws do not move the older fixtures') ----

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def activations():
    """Each activation as PyTorch's exporter writes it at opset 13: ReLU6 a
    Clip to [0, 6]; SiLU and Hardswish a gate times its input (the product's
    operands in either order); GELU the Div, Erf, Add, Mul, Mul chain with
    each constant from a Constant node right before its use; plus Tanh and the
    gates alone. The conv's outputs spread beyond -3, 3 and 6, so every region
    of every function is hit."""
    net = Net("activations")
    x = batch((3, 6, 6))
    w, wv = net.weight("conv.weight", (4, 3, 3, 3), 0.8)
    b, bv = net.weight("conv.bias", (4,), 0.5)
    y = net.node("Conv", ["input", w, b], ["/conv/Conv_output_0"], "/conv/Conv", kernel_shape=[3, 3], pads=[1] * 4)
    yv = conv(x.astype(np.float64), wv, bv, 1, 1)
    lo = net.const("clip.min", np.array(0.0, dtype=np.float32))
    hi = net.const("clip.max", np.array(6.0, dtype=np.float32))
    r6 = net.node("Clip", [y, lo, hi], ["/act1/Clip_output_0"], "/act1/Clip")
    r6v = np.clip(yv, 0.0, 6.0)
    s = net.node("Sigmoid", [y], ["/act2/Sigmoid_output_0"], "/act2/Sigmoid")
    silu = net.node("Mul", [y, s], ["/act2/Mul_output_0"], "/act2/Mul")
    siluv = yv * sigmoid(yv)
    hs = net.node("HardSigmoid", [silu], ["/act3/HardSigmoid_output_0"], "/act3/HardSigmoid", alpha=1.0 / 6.0,
                  beta=0.5)
    hsw = net.node("Mul", [hs, silu], ["/act3/Mul_output_0"], "/act3/Mul")
    hswv = siluv * np.clip(siluv + 3.0, 0.0, 6.0) / 6.0
    net.node("Constant", [], ["/act4/Constant_output_0"], "/act4/Constant",
             value=numpy_helper.from_array(np.array(np.sqrt(2.0), dtype=np.float32)))
    d = net.node("Div", [hsw, "/act4/Constant_output_0"], ["/act4/Div_output_0"], "/act4/Div")
    e = net.node("Erf", [d], ["/act4/Erf_output_0"], "/act4/Erf")
    net.node("Constant", [], ["/act4/Constant_1_output_0"], "/act4/Constant_1",
             value=numpy_helper.from_array(np.array(1.0, dtype=np.float32)))
    a = net.node("Add", ["/act4/Constant_1_output_0", e], ["/act4/Add_output_0"], "/act4/Add")
    m = net.node("Mul", [hsw, a], ["/act4/Mul_output_0"], "/act4/Mul")
    net.node("Constant", [], ["/act4/Constant_2_output_0"], "/act4/Constant_2",
             value=numpy_helper.from_array(np.array(0.5, dtype=np.float32)))
    g = net.node("Mul", [m, "/act4/Constant_2_output_0"], ["/act4/Mul_1_output_0"], "/act4/Mul_1")
    erf = np.vectorize(math.erf)
    gv = 0.5 * hswv * (1.0 + erf(hswv / np.sqrt(2.0)))
    t = net.node("Tanh", [g], ["/act5/Tanh_output_0"], "/act5/Tanh")
    tv = np.tanh(gv)
    sg = net.node("Sigmoid", [r6], ["/act6/Sigmoid_output_0"], "/act6/Sigmoid")
    sgv = sigmoid(r6v)
    hg = net.node("HardSigmoid", [y], ["/act7/HardSigmoid_output_0"], "/act7/HardSigmoid", alpha=1.0 / 6.0, beta=0.5)
    hgv = np.clip(yv / 6.0 + 0.5, 0.0, 1.0)
    cat = net.node("Concat", [t, sg, hg], ["/cat/Concat_output_0"], "/cat/Concat", axis=1)
    catv = np.concatenate([tv, sgv, hgv], axis=1)
    p = net.node("GlobalAveragePool", [cat], ["/gap/GlobalAveragePool_output_0"], "/gap/GlobalAveragePool")
    f = net.node("Flatten", [p], ["/Flatten_output_0"], "/Flatten")
    fw, fwv = net.weight("fc.weight", (5, 12))
    fb, fbv = net.weight("fc.bias", (5,), 0.1)
    net.node("Gemm", [f, fw, fb], ["logits"], "/fc/Gemm", transB=1)
    out = catv.mean(axis=(2, 3)) @ fwv.T + fbv
    save("activations", net.model((3, 6, 6), "logits", (5,)), x, out)


def maxpool_ceil(x, k, stride):
    """PyTorch's MaxPool2d(k, stride, ceil_mode=True), no padding: the last
    windows of each row and column may overhang the input and are cut."""
    n, c, h, w = x.shape
    size = lambda d: -(-(d - k) // stride) + 1 - (1 if (-(-(d - k) // stride)) * stride >= d else 0)
    ho, wo = size(h), size(w)
    y = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            y[:, :, i, j] = x[:, :, i * stride:i * stride + k, j * stride:j * stride + k].max(axis=(2, 3))
    return y


def training_export():
    """What a training-mode export of torchvision's classifiers holds that
    the older fixtures do not: MaxPool with ceil_mode (GoogLeNet,
    SqueezeNet), Dropout with training_mode true (AlexNet, every
    classifier), ReduceMean over H and W without keepdims (MnasNet)."""
    net = Net("training_export")
    x = batch((3, 8, 10))
    w, wv = net.weight("conv.weight", (6, 3, 3, 3))
    y = net.node("Conv", ["input", w], ["/conv/Conv_output_0"], "/conv/Conv", kernel_shape=[3, 3], pads=[1] * 4)
    yv = conv(x.astype(np.float64), wv, None, 1, 1)
    p = net.node("MaxPool", [y], ["/pool/MaxPool_output_0"], "/pool/MaxPool", kernel_shape=[3, 3], strides=[2, 2],
                 pads=[0] * 4, ceil_mode=1)
    pv = maxpool_ceil(yv, 3, 2)
    assert pv.shape[2:] == (4, 5), pv.shape
    # Squeeze-and-excitation (torchvision.ops.SqueezeExcitation, MobileNetV3's HardSigmoid gate): the
    # factors first in the Mul, as PyTorch writes it.
    g = net.node("GlobalAveragePool", [p], ["/se/avgpool/GlobalAveragePool_output_0"], "/se/avgpool/GlobalAveragePool")
    w1, w1v = net.weight("se.fc1.weight", (2, 6, 1, 1))
    b1, b1v = net.weight("se.fc1.bias", (2,), 0.1)
    f1 = net.node("Conv", [g, w1, b1], ["/se/fc1/Conv_output_0"], "/se/fc1/Conv", kernel_shape=[1, 1])
    r1 = net.node("Relu", [f1], ["/se/activation/Relu_output_0"], "/se/activation/Relu")
    w2, w2v = net.weight("se.fc2.weight", (6, 2, 1, 1))
    b2, b2v = net.weight("se.fc2.bias", (6,), 0.1)
    f2 = net.node("Conv", [r1, w2, b2], ["/se/fc2/Conv_output_0"], "/se/fc2/Conv", kernel_shape=[1, 1])
    hs = net.node("HardSigmoid", [f2], ["/se/scale_activation/HardSigmoid_output_0"],
                  "/se/scale_activation/HardSigmoid", alpha=1.0 / 6.0)
    p = net.node("Mul", [hs, p], ["/se/Mul_output_0"], "/se/Mul")
    gv = pv.mean(axis=(2, 3), keepdims=True)
    f1v = np.maximum(conv(gv, w1v, b1v), 0.0)
    sv = np.clip(conv(f1v, w2v, b2v) / 6.0 + 0.5, 0.0, 1.0)
    pv = pv * sv
    net.node("Constant", [], ["/drop/Constant_output_0"], "/drop/Constant",
             value=numpy_helper.from_array(np.array(0.5, dtype=np.float32)))
    net.node("Constant", [], ["/drop/Constant_1_output_0"], "/drop/Constant_1",
             value=numpy_helper.from_array(np.array(True)))
    d = net.node("Dropout", [p, "/drop/Constant_output_0", "/drop/Constant_1_output_0"],
                 ["/drop/Dropout_output_0", "/drop/Dropout_output_1"], "/drop/Dropout")
    r = net.node("ReduceMean", [d], ["/ReduceMean_output_0"], "/ReduceMean", axes=[2, 3], keepdims=0)
    fw, fwv = net.weight("fc.weight", (4, 6))
    fb, fbv = net.weight("fc.bias", (4,), 0.1)
    net.node("Gemm", [r, fw, fb], ["logits"], "/fc/Gemm", transB=1)
    out = pv.mean(axis=(2, 3)) @ fwv.T + fbv  # dropout passes everything in evaluation
    save("training_export", net.model((3, 8, 10), "logits", (4,)), x, out)


def gelu_tanh():
    """nn.GELU(approximate="tanh") as PyTorch exports it at opset 13: nine nodes, their four constants from
    Constant nodes, on either side of the Mul or Add that reads them."""
    net = Net("gelu_tanh")
    x = batch((6,)) * 2.0
    def const(name, v):
        net.node("Constant", [], [f"/{name}_output_0"], f"/{name}",
                 value=numpy_helper.from_array(np.array(v, dtype=np.float32)))
        return f"/{name}_output_0"
    sq = net.node("Mul", ["input", "input"], ["/Mul_output_0"], "/Mul")
    cube = net.node("Mul", ["input", sq], ["/Mul_1_output_0"], "/Mul_1")
    k = net.node("Mul", [const("Constant", 0.044715), cube], ["/Mul_2_output_0"], "/Mul_2")
    inner = net.node("Add", ["input", k], ["/Add_output_0"], "/Add")
    beta = net.node("Mul", [const("Constant_1", np.sqrt(2.0 / np.pi)), inner], ["/Mul_3_output_0"], "/Mul_3")
    t = net.node("Tanh", [beta], ["/Tanh_output_0"], "/Tanh")
    one = net.node("Add", [const("Constant_2", 1.0), t], ["/Add_1_output_0"], "/Add_1")
    mx = net.node("Mul", ["input", one], ["/Mul_4_output_0"], "/Mul_4")
    g = net.node("Mul", [const("Constant_3", 0.5), mx], ["/Mul_5_output_0"], "/Mul_5")
    w, wv = net.weight("fc.weight", (3, 6))
    net.node("Gemm", [g, w], ["logits"], "/fc/Gemm", transB=1)
    xv = x.astype(np.float64)
    gv = 0.5 * xv * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (xv + 0.044715 * xv ** 3)))
    save("gelu_tanh", net.model((6,), "logits", (3,)), x, gv @ wv.T)


def grouped():
    """What inception, resnext and regnet need of a convolution: 1x3 and 3x1 kernels with their per-axis padding,
    a grouped 3x3 with stride (2, 1), a dilated 3x3, and a depthwise one with two filters per channel (group =
    channels, twice as many outputs: a grouped convolution, not remat's dwconv)."""
    net = Net("grouped")
    x = batch((4, 7, 9))
    xv = x.astype(np.float64)
    def conv_node(name, x_name, xv, cout, cin_g, k, stride=(1, 1), pad=(0, 0), group=1, dil=(1, 1)):
        w, wv = net.weight(name + ".weight", (cout, cin_g) + tuple(k))
        b, bv = net.weight(name + ".bias", (cout,), 0.1)
        y = net.node("Conv", [x_name, w, b], [f"/{name}/Conv_output_0"], f"/{name}/Conv", kernel_shape=list(k),
                     strides=list(stride), pads=[pad[0], pad[1], pad[0], pad[1]], group=group, dilations=list(dil))
        return y, conv(xv, wv, bv, stride, pad, group, dil)
    y, yv = conv_node("a", "input", xv, 6, 4, (1, 3), pad=(0, 1))
    y, yv = conv_node("b", y, yv, 6, 6, (3, 1), pad=(1, 0))
    y, yv = conv_node("c", y, yv, 6, 2, (3, 3), stride=(2, 1), pad=(1, 1), group=3)
    y, yv = conv_node("d", y, yv, 8, 6, (3, 3), pad=(2, 2), dil=(2, 2))
    y, yv = conv_node("e", y, yv, 16, 1, (3, 3), pad=(1, 1), group=8)
    net.node("GlobalAveragePool", [y], ["/gap_output_0"], "/gap")
    net.node("Flatten", ["/gap_output_0"], ["logits"], "/flatten")
    save("grouped", net.model((4, 7, 9), "logits", (16,)), x, yv.mean(axis=(2, 3)))


def batch_shape(net, x_name, prefix, rest):
    """[N] + rest as PyTorch's exporter builds a shape with a symbolic batch: Shape, Gather 0, Unsqueeze, and a
    Concat with the constant dimensions."""
    shape = net.node("Shape", [x_name], [f"/{prefix}/Shape_output_0"], f"/{prefix}/Shape")
    zero = net.const(prefix + ".zero", np.array(0, dtype=np.int64))
    n = net.node("Gather", [shape, zero], [f"/{prefix}/Gather_output_0"], f"/{prefix}/Gather", axis=0)
    axes = net.const(prefix + ".axes", np.array([0], dtype=np.int64))
    n1 = net.node("Unsqueeze", [n, axes], [f"/{prefix}/Unsqueeze_output_0"], f"/{prefix}/Unsqueeze")
    dims = net.const(prefix + ".dims", np.array(rest, dtype=np.int64))
    return net.node("Concat", [n1, dims], [f"/{prefix}/Concat_output_0"], f"/{prefix}/Concat", axis=0)


def shuffle():
    """ShuffleNet v2's basic block: chunk (two Slices of the channels), a branch, Concat, and the channel shuffle
    as PyTorch exports it (Reshape to N x 2 x C/2 x H x W, Transpose (0, 2, 1, 3, 4), Reshape back), then a
    shuffle of 3 groups and a Slice to the end with a negative start."""
    net = Net("shuffle")
    x = batch((6, 3, 4))
    xv = x.astype(np.float64)
    lo, hi, mid, end, ax = (net.const(n, np.array([v], dtype=np.int64)) for n, v in
                            (("lo", 0), ("hi", 3), ("mid", 3), ("end", 6), ("ax", 1)))
    a = net.node("Slice", ["input", lo, hi, ax], ["/Slice_output_0"], "/Slice")
    b = net.node("Slice", ["input", mid, end, ax], ["/Slice_1_output_0"], "/Slice_1")
    w, wv = net.weight("branch.weight", (3, 3, 1, 1))
    b2 = net.node("Conv", [b, w], ["/branch/Conv_output_0"], "/branch/Conv", kernel_shape=[1, 1])
    bv = conv(xv[:, 3:], wv)
    cat = net.node("Concat", [a, b2], ["/Concat_output_0"], "/Concat", axis=1)
    yv = np.concatenate([xv[:, :3], bv], axis=1)
    def channel_shuffle(x_name, yv, g, prefix):
        n, ch, h, w_ = yv.shape
        r = net.node("Reshape", [x_name, batch_shape(net, x_name, prefix + "_in", [g, ch // g, h, w_])],
                     [f"/{prefix}/Reshape_output_0"], f"/{prefix}/Reshape")
        t = net.node("Transpose", [r], [f"/{prefix}/Transpose_output_0"], f"/{prefix}/Transpose", perm=[0, 2, 1, 3, 4])
        out = net.node("Reshape", [t, batch_shape(net, x_name, prefix + "_out", [ch, h, w_])],
                       [f"/{prefix}/Reshape_1_output_0"], f"/{prefix}/Reshape_1")
        return out, yv.reshape(n, g, ch // g, h, w_).transpose(0, 2, 1, 3, 4).reshape(n, ch, h, w_)
    y, yv = channel_shuffle(cat, yv, 2, "shuffle2")
    y, yv = channel_shuffle(y, yv, 3, "shuffle3")
    neg, big = net.const("neg", np.array([-4], dtype=np.int64)), net.const("big", np.array([2 ** 62], dtype=np.int64))
    y = net.node("Slice", [y, neg, big, ax], ["/Slice_2_output_0"], "/Slice_2")
    yv = yv[:, 2:]
    net.node("GlobalAveragePool", [y], ["/gap_output_0"], "/gap")
    net.node("Flatten", ["/gap_output_0"], ["logits"], "/flatten")
    save("shuffle", net.model((6, 3, 4), "logits", (4,)), x, yv.mean(axis=(2, 3)))
    # A view read by something else than the shuffle's next step: refused.
    net = Net("bad_view")
    r = net.node("Reshape", ["input", batch_shape(net, "input", "v", [2, 3, 3, 4])], ["/Reshape_output_0"], "/Reshape")
    net.node("Relu", [r], ["/Relu_output_0"], "/Relu")
    net.node("Reshape", ["/Relu_output_0", batch_shape(net, "/Relu_output_0", "f", [72])], ["logits"], "/Flatten")
    save("bad_view", net.model((6, 3, 4), "logits", (72,)))


def convnext():
    """A tiny ConvNeXt as torchvision's exports at opset 13: a 2x2 stride-2 stem and LayerNorm2d (Transpose to
    channels last, LayerNorm decomposed into ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul, Add,
    Transpose back); a block: depthwise 3x3, Transpose, LayerNorm, nn.Linear as Transpose(weight) + MatMul +
    Add(bias, y), GELU (erf), Linear, Transpose back, the layer scale Mul(gamma[C, 1, 1], y) and the residual
    Add; then global pooling, LayerNorm2d on N x C x 1 x 1, Flatten, Gemm. Plus the refusals: a Transpose that
    is no move of the channels, and a convolution reading a channels-last view."""
    net = Net("convnext")
    erf = np.vectorize(math.erf)
    x = batch((3, 8, 8))
    k = [0]

    def constant(v):
        k[0] += 1
        return net.node("Constant", [], [f"/Constant_{k[0]}_output_0"], f"/Constant_{k[0]}",
                        value=numpy_helper.from_array(np.array(v, dtype=np.float32)))

    def layernorm(y, yv, c, prefix, eps):
        """nn.LayerNorm(c) over the last axis, as decomposed at opset 13; yv channels last."""
        g, gv = net.weight(prefix + ".weight", (c,), positive=True)
        b, bv = net.weight(prefix + ".bias", (c,), 0.1)
        m = net.node("ReduceMean", [y], [f"/{prefix}/ReduceMean_output_0"], f"/{prefix}/ReduceMean", axes=[-1])
        d = net.node("Sub", [y, m], [f"/{prefix}/Sub_output_0"], f"/{prefix}/Sub")
        p = net.node("Pow", [d, constant(2.0)], [f"/{prefix}/Pow_output_0"], f"/{prefix}/Pow")
        v = net.node("ReduceMean", [p], [f"/{prefix}/ReduceMean_1_output_0"], f"/{prefix}/ReduceMean_1", axes=[-1])
        a = net.node("Add", [v, constant(eps)], [f"/{prefix}/Add_output_0"], f"/{prefix}/Add")
        r = net.node("Sqrt", [a], [f"/{prefix}/Sqrt_output_0"], f"/{prefix}/Sqrt")
        q = net.node("Div", [d, r], [f"/{prefix}/Div_output_0"], f"/{prefix}/Div")
        s = net.node("Mul", [q, g], [f"/{prefix}/Mul_output_0"], f"/{prefix}/Mul")
        out = net.node("Add", [s, b], [f"/{prefix}/Add_1_output_0"], f"/{prefix}/Add_1")
        mv = yv.mean(axis=-1, keepdims=True)
        vv = ((yv - mv) ** 2).mean(axis=-1, keepdims=True)
        return out, (yv - mv) / np.sqrt(vv + eps) * gv + bv

    def transpose(y, perm, prefix):
        return net.node("Transpose", [y], [f"/{prefix}/Transpose_output_0"], f"/{prefix}/Transpose", perm=perm)

    def layernorm2d(y, yv, c, prefix):
        t = transpose(y, [0, 2, 3, 1], prefix + "_in")
        out, ov = layernorm(t, yv.transpose(0, 2, 3, 1), c, prefix, 1e-6)
        return transpose(out, [0, 3, 1, 2], prefix + "_out"), ov.transpose(0, 3, 1, 2)

    def linear(y, yv, cin, cout, prefix):
        w, wv = net.weight(prefix + ".weight", (cout, cin))
        b, bv = net.weight(prefix + ".bias", (cout,), 0.1)
        wt = transpose(w, [1, 0], prefix + "_w")
        mm = net.node("MatMul", [y, wt], [f"/{prefix}/MatMul_output_0"], f"/{prefix}/MatMul")
        return net.node("Add", [b, mm], [f"/{prefix}/Add_output_0"], f"/{prefix}/Add"), yv @ wv.T + bv

    w, wv = net.weight("stem.weight", (8, 3, 2, 2))
    b, bv = net.weight("stem.bias", (8,), 0.1)
    y = net.node("Conv", ["input", w, b], ["/stem/Conv_output_0"], "/stem/Conv", kernel_shape=[2, 2], strides=[2, 2])
    y, yv = layernorm2d(y, conv(x.astype(np.float64), wv, bv, 2, 0), 8, "stem_norm")
    w, wv = net.weight("dw.weight", (8, 1, 3, 3))
    b, bv = net.weight("dw.bias", (8,), 0.1)
    h = net.node("Conv", [y, w, b], ["/dw/Conv_output_0"], "/dw/Conv", kernel_shape=[3, 3], pads=[1] * 4, group=8)
    hv = conv(yv, wv, bv, 1, 1, 8)
    h = transpose(h, [0, 2, 3, 1], "block_in")
    h, hv = layernorm(h, hv.transpose(0, 2, 3, 1), 8, "block_norm", 1e-6)
    h, hv = linear(h, hv, 8, 32, "fc1")
    d = net.node("Div", [h, constant(np.sqrt(2.0))], ["/gelu/Div_output_0"], "/gelu/Div")
    e = net.node("Erf", [d], ["/gelu/Erf_output_0"], "/gelu/Erf")
    a = net.node("Add", [e, constant(1.0)], ["/gelu/Add_output_0"], "/gelu/Add")
    m = net.node("Mul", [h, a], ["/gelu/Mul_output_0"], "/gelu/Mul")
    h = net.node("Mul", [m, constant(0.5)], ["/gelu/Mul_1_output_0"], "/gelu/Mul_1")
    hv = 0.5 * hv * (1.0 + erf(hv / np.sqrt(2.0)))
    h, hv = linear(h, hv, 32, 8, "fc2")
    h = transpose(h, [0, 3, 1, 2], "block_out")
    hv = hv.transpose(0, 3, 1, 2)
    ls, lsv = net.weight("layer_scale", (8, 1, 1))
    h = net.node("Mul", [ls, h], ["/block/Mul_output_0"], "/block/Mul")
    y = net.node("Add", [h, y], ["/block/Add_output_0"], "/block/Add")
    yv = lsv * hv + yv
    p = net.node("GlobalAveragePool", [y], ["/gap/GlobalAveragePool_output_0"], "/gap/GlobalAveragePool")
    p, pv = layernorm2d(p, yv.mean(axis=(2, 3), keepdims=True), 8, "head_norm")
    f = net.node("Flatten", [p], ["/Flatten_output_0"], "/Flatten")
    fw, fwv = net.weight("fc.weight", (5, 8))
    fb, fbv = net.weight("fc.bias", (5,), 0.1)
    net.node("Gemm", [f, fw, fb], ["logits"], "/fc/Gemm", transB=1)
    save("convnext", net.model((3, 8, 8), "logits", (5,)), x, pv.reshape(2, 8) @ fwv.T + fbv)
    # A transpose that moves no channel to the end: refused.
    net = Net("bad_transpose")
    t = transpose("input", [0, 1, 3, 2], "t")
    net.node("Flatten", [t], ["logits"], "/Flatten")
    save("bad_transpose", net.model((3, 4, 4), "logits", (48,)))
    # A convolution reading the channels-last view: refused.
    net = Net("bad_channels_last")
    t = transpose("input", [0, 2, 3, 1], "t")
    w, _ = net.weight("conv.weight", (2, 4, 1, 1))
    c2 = net.node("Conv", [t, w], ["/conv/Conv_output_0"], "/conv/Conv", kernel_shape=[1, 1])
    net.node("Flatten", [c2], ["logits"], "/Flatten")
    save("bad_channels_last", net.model((3, 4, 4), "logits", (24,)))


def layernorm17():
    """nn.LayerNorm on a channels-last view as PyTorch exports it from opset 17: one LayerNormalization node
    (its scale and bias initializers, axis -1)."""
    net = Net("layernorm17")
    x = batch((5, 3, 2))
    t = net.node("Transpose", ["input"], ["/in/Transpose_output_0"], "/in/Transpose", perm=[0, 2, 3, 1])
    g, gv = net.weight("norm.weight", (5,), positive=True)
    b, bv = net.weight("norm.bias", (5,), 0.1)
    y = net.node("LayerNormalization", [t, g, b], ["/norm/LayerNormalization_output_0"], "/norm/LayerNormalization",
                 axis=-1, epsilon=1e-5)
    y = net.node("Transpose", [y], ["/out/Transpose_output_0"], "/out/Transpose", perm=[0, 3, 1, 2])
    p = net.node("GlobalAveragePool", [y], ["/gap_output_0"], "/gap")
    net.node("Flatten", [p], ["logits"], "/flatten")
    xv = x.astype(np.float64).transpose(0, 2, 3, 1)
    m = xv.mean(axis=-1, keepdims=True)
    v = ((xv - m) ** 2).mean(axis=-1, keepdims=True)
    yv = ((xv - m) / np.sqrt(v + 1e-5) * gv + bv).transpose(0, 3, 1, 2)
    save("layernorm17", net.model((5, 3, 2), "logits", (5,), opset=17), x, yv.mean(axis=(2, 3)))


def stochastic_depth():
    """A residual block's branch under torchvision's StochasticDepth(0.25, "row") as a training-mode export writes
    it: RandomUniformLike of a constant [2, 1, 1, 1] (the export's batch), Less than 0.75, Cast, Div by 0.75, Mul by
    the branch, then the residual Add. Its forward (evaluation) is the block without it."""
    net = Net("stochastic_depth")
    x = batch((3, 4, 4))
    w, wv = net.weight("branch.weight", (3, 3, 1, 1))
    b = net.node("Conv", ["input", w], ["/branch/Conv_output_0"], "/branch/Conv", kernel_shape=[1, 1])
    zeros = net.node("Constant", [], ["/sd/Constant_output_0"], "/sd/Constant",
                     value=numpy_helper.from_array(np.zeros((2, 1, 1, 1), dtype=np.float32)))
    u = net.node("RandomUniformLike", [zeros], ["/sd/RandomUniformLike_output_0"], "/sd/RandomUniformLike",
                 dtype=1, high=1.0, low=0.0)
    keep = net.node("Constant", [], ["/sd/Constant_1_output_0"], "/sd/Constant_1",
                    value=numpy_helper.from_array(np.array(0.75, dtype=np.float32)))
    less = net.node("Less", [u, keep], ["/sd/Less_output_0"], "/sd/Less")
    cast = net.node("Cast", [less], ["/sd/Cast_output_0"], "/sd/Cast", to=1)
    keep2 = net.node("Constant", [], ["/sd/Constant_2_output_0"], "/sd/Constant_2",
                     value=numpy_helper.from_array(np.array(0.75, dtype=np.float32)))
    div = net.node("Div", [cast, keep2], ["/sd/Div_output_0"], "/sd/Div")
    mul = net.node("Mul", [b, div], ["/sd/Mul_output_0"], "/sd/Mul")
    y = net.node("Add", [mul, "input"], ["/Add_output_0"], "/Add")
    net.node("GlobalAveragePool", [y], ["/gap_output_0"], "/gap")
    net.node("Flatten", ["/gap_output_0"], ["logits"], "/flatten")
    yv = conv(x.astype(np.float64), wv) + x
    save("stochastic_depth", net.model((3, 4, 4), "logits", (3,)), x, yv.mean(axis=(2, 3)))


if __name__ == "__main__":
    cbr_pool_gemm()
    residual()
    unet_tiny()
    depthwise()
    fixed_batch()
    upsample_opset9()
    broken()
    activations()
    training_export()
    gelu_tanh()
    grouped()
    shuffle()
    convnext()
    layernorm17()
    stochastic_depth()
    print("fixtures written to", OUT)

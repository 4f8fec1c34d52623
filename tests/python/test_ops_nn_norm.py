"""BatchNormalization (inference), InstanceNormalization, LayerNormalization, LRN,
MeanVarianceNormalization, and the later RMSNormalization, GroupNormalization, LpNormalization and
Gelu through the ONNX importer, against numpy: ranks 2 to 5, negative axes,
sizes the vector width does not divide, float16/float32/float64."""
import numpy as np
import pytest

import tessera
from nn_testing import assert_close, load, model, run

FLOATS = ["float32", "float16", "float64"]


def tol(dtype):
    return {"float16": 2e-2, "float32": 1e-4, "float64": 1e-9}[dtype]


@pytest.mark.parametrize("shape", [(2, 3), (2, 5, 7, 9), (1, 17, 3, 2, 4), (3, 1, 20)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm(rng, shape, dtype):
    c = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    scale, bias, mean = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    var = rng.random(c).astype(dtype) + 0.5
    (y,) = run("BatchNormalization", [x, scale, bias, mean, var], {"epsilon": 1e-3}, opset=15)
    b = (1, c) + (1,) * (len(shape) - 2)
    want = (x.astype("float64") - mean.reshape(b)) / np.sqrt(var.reshape(b).astype("float64") + 1e-3) * scale.reshape(b) + bias.reshape(b)
    assert_close(y, want, dtype, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("opset", [7, 9, 14])
def test_batch_norm_old_opsets(rng, opset):
    x = rng.standard_normal((2, 4, 3, 3)).astype("float32")
    p = [rng.standard_normal(4).astype("float32") for _ in range(3)] + [rng.random(4).astype("float32") + 1]
    (y,) = run("BatchNormalization", [x] + p, opset=opset)
    b = (1, 4, 1, 1)
    want = (x - p[2].reshape(b)) / np.sqrt(p[3].reshape(b) + 1e-5) * p[0].reshape(b) + p[1].reshape(b)
    assert_close(y, want, "float32")


def test_batch_norm_training_mode(rng):
    # Batch statistics (biased variance) and ONNX's running-statistics updates.
    x = rng.standard_normal((3, 4, 2, 5)).astype("float32")
    p = [rng.standard_normal(4).astype("float32") for _ in range(3)] + [rng.random(4).astype("float32") + 1]
    y, mean, var = run("BatchNormalization", [x] + p, {"training_mode": 1, "momentum": 0.8}, opset=15, outputs=3)
    b = (1, 4, 1, 1)
    m, v = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    assert_close(y, (x - m.reshape(b)) / np.sqrt(v.reshape(b) + 1e-5) * p[0].reshape(b) + p[1].reshape(b), "float32")
    assert_close(mean, 0.8 * p[2] + 0.2 * m, "float32")
    assert_close(var, 0.8 * p[3] + 0.2 * v, "float32")


def test_batch_norm_training_outputs_of_old_opsets_are_rejected(rng):
    x = rng.standard_normal((2, 4, 3, 3)).astype("float32")
    p = [np.ones(4, "float32")] * 4
    with pytest.raises(tessera.Error, match="training_mode=1"):
        run("BatchNormalization", [x] + p, opset=9, outputs=3)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 7, 9), (1, 2, 3, 4, 5), (1, 3, 1, 1)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_instance_norm(rng, shape, dtype):
    c = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    scale, bias = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    (y,) = run("InstanceNormalization", [x, scale, bias], {"epsilon": 1e-4}, opset=7)
    axes = tuple(range(2, len(shape)))
    xd = x.astype("float64")
    b = (1, c) + (1,) * (len(shape) - 2)
    want = (xd - xd.mean(axis=axes, keepdims=True)) / np.sqrt(xd.var(axis=axes, keepdims=True) + 1e-4) * scale.reshape(b) + bias.reshape(b)
    assert_close(y, want, dtype, rtol=tol(dtype) * 5, atol=tol(dtype) * 5)


@pytest.mark.parametrize("shape,axis", [((4, 37), -1), ((2, 3, 17), 1), ((2, 3, 4, 5), -2), ((3, 8), 0), ((5,), 0), ((2, 3, 33), 2)])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(rng, shape, axis, with_bias, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    norm_shape = shape[axis:] if axis >= 0 else shape[len(shape) + axis:]
    scale = rng.standard_normal(norm_shape).astype(dtype)
    bias = rng.standard_normal(norm_shape).astype(dtype) if with_bias else None
    y, mean, inv = run("LayerNormalization", [x, scale, bias], {"axis": axis, "epsilon": 1e-3}, outputs=3)
    a = axis % len(shape)
    axes = tuple(range(a, len(shape)))
    xd = x.astype("float64")
    m = xd.mean(axis=axes, keepdims=True)
    i = 1 / np.sqrt(((xd - m) ** 2).mean(axis=axes, keepdims=True) + 1e-3)
    want = (xd - m) * i * scale + (bias if with_bias else 0)
    assert_close(y, want, dtype, rtol=tol(dtype) * 5, atol=tol(dtype) * 5)
    assert_close(mean, m, "float32", rtol=1e-3 if dtype == "float16" else 1e-5, atol=1e-3 if dtype == "float16" else 1e-5)
    assert_close(inv, i, "float32", rtol=1e-3 if dtype == "float16" else 1e-5)


@pytest.mark.parametrize("target", ["llvm", "c", "opencl"])
@pytest.mark.parametrize("shape,axis", [((3, 20), -1), ((37, 256), -1), ((2, 5, 33), -1), ((4, 1), -1), ((6, 3, 17), 1),
                                        ((1, 1), 0)])
def test_layer_norm_only_y(rng, target, shape, axis):
    """Without its statistics read, a layer_norm returns y alone and its kernel computes a row's
    mean and deviation inside the row's loop (one parallel loop over the rows), with values far
    from zero so that a one-pass variance would cancel."""
    if target == "opencl" and not tessera.device("opencl").exists:
        pytest.skip("no OpenCL device")
    x = (rng.standard_normal(shape) + 1000).astype("float32")
    norm_shape = shape[axis % len(shape):]
    scale = rng.standard_normal(norm_shape).astype("float32")
    lib = tessera.build(load(model("LayerNormalization", [x, scale], {"axis": axis}, outputs=["y0", "", ""], constants=(1,))),
                        target=target)
    axes = tuple(range(axis % len(shape), len(shape)))
    xd = x.astype("float64")
    m = xd.mean(axis=axes, keepdims=True)
    want = (xd - m) / np.sqrt(((xd - m) ** 2).mean(axis=axes, keepdims=True) + 1e-5) * scale
    assert_close(lib.run([x])[0], want, "float32", rtol=1e-3, atol=1e-3)
    (kernel,) = lib.kernels
    assert "layer_norm_mean" not in kernel["signature"], kernel["signature"]
    if target == "llvm" and np.prod(shape[:axis % len(shape)]) > 1:
        assert kernel["lowered"].count("parallel (") <= 1, kernel["lowered"]


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", FLOATS)
def test_lrn(rng, size, dtype):
    x = rng.standard_normal((2, 7, 4, 5)).astype(dtype)
    attrs = {"size": size, "alpha": 2e-3, "beta": 0.6, "bias": 1.5}
    (y,) = run("LRN", [x], attrs, opset=13)
    xd = x.astype("float64")
    sq = np.zeros_like(xd)
    for c in range(7):
        lo, hi = max(0, c - (size - 1) // 2), min(6, c + size // 2)
        sq[:, c] = (xd[:, lo:hi + 1] ** 2).sum(axis=1)
    alpha, beta = float(np.float32(2e-3)), float(np.float32(0.6))  # ONNX float attributes are float32
    want = xd / (1.5 + alpha / size * sq) ** beta
    assert_close(y, want, dtype, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [-1, -2], [0, 1, 2, 3]])
def test_mean_variance_normalization(rng, axes):
    x = rng.standard_normal((3, 4, 5, 6)).astype("float32")
    attrs = {} if axes is None else {"axes": axes}
    (y,) = run("MeanVarianceNormalization", [x], attrs, opset=13)
    ax = tuple(a % 4 for a in (axes or [0, 2, 3]))
    xd = x.astype("float64")
    m = xd.mean(axis=ax, keepdims=True)
    want = (xd - m) / (np.sqrt((xd ** 2).mean(axis=ax, keepdims=True) - m ** 2) + 1e-9)
    assert_close(y, want, "float32", rtol=1e-4, atol=1e-4)


def test_norm_errors(rng):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    with pytest.raises(tessera.Error, match="scale must have shape \\[3\\]"):
        run("InstanceNormalization", [x, np.ones(4, "float32"), np.ones(3, "float32")], opset=7)
    with pytest.raises(tessera.Error, match="axis 3 is out of range"):
        run("LayerNormalization", [x, np.ones(4, "float32")], {"axis": 3})
    with pytest.raises(tessera.Error, match="x must be float"):
        run("LRN", [x.astype("int32")], {"size": 3})


def test_norms_empty():
    (y,) = run("BatchNormalization", [np.zeros((0, 3, 4, 4), "float32")] + [np.ones(3, "float32")] * 4, opset=15)
    assert y.shape == (0, 3, 4, 4)
    y, mean, inv = run("LayerNormalization", [np.zeros((0, 7), "float32"), np.ones(7, "float32")], outputs=3)
    assert y.shape == (0, 7) and mean.shape == (0, 1) and inv.shape == (0, 1)


# The later normalizations and Gelu, as compositions of elementwise ops and reductions.

@pytest.mark.parametrize("shape,axis", [((2, 3), -1), ((2, 5, 7, 9), 1), ((3, 1, 20), -2), ((4, 33), 0)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_normalization(rng, shape, axis, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    axes = tuple(range(axis % len(shape), len(shape)))
    scale = rng.standard_normal(shape[axis % len(shape):]).astype(dtype)
    # float64 computes in float64 only when stash_type says so (the default is float32).
    attrs = {"axis": axis, "epsilon": 1e-3, **({"stash_type": 11} if dtype == "float64" else {})}
    (y,) = run("RMSNormalization", [x, scale], attrs, opset=23)
    x64 = x.astype("float64")
    want = x64 / np.sqrt((x64 ** 2).mean(axis=axes, keepdims=True) + 1e-3) * scale
    assert_close(y, want, dtype, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("opset,per", [(18, "group"), (21, "channel")])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 3), 3), ((1, 4, 7), 2), ((3, 8), 8), ((2, 5, 2, 2, 3), 1)])
def test_group_normalization(rng, opset, per, shape, groups):
    x = rng.standard_normal(shape).astype("float32")
    params = groups if per == "group" else shape[1]
    scale, bias = (rng.standard_normal(params).astype("float32") for _ in range(2))
    (y,) = run("GroupNormalization", [x, scale, bias], {"num_groups": groups, "epsilon": 1e-4}, opset=opset)
    g = x.astype("float64").reshape(shape[0], groups, -1)
    normed = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-4))
    if per == "group":
        want = (normed * scale[:, None] + bias[:, None]).reshape(shape)
    else:
        b = (1, shape[1]) + (1,) * (len(shape) - 2)
        want = normed.reshape(shape) * scale.reshape(b) + bias.reshape(b)
    assert_close(y, want, "float32", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_lp_normalization(rng, p, axis):
    x = rng.standard_normal((4, 6, 5)).astype("float32")
    x[1] = 0  # a zero norm gives zeros, not NaN
    (y,) = run("LpNormalization", [x], {"axis": axis, "p": p}, opset=22)
    norm = (np.abs(x.astype("float64")) ** p).sum(axis=axis, keepdims=True) ** (1 / p)
    want = np.where(norm == 0, 0, x / np.where(norm == 0, 1, norm))
    assert_close(y, want, "float32")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu(rng, approximate, dtype):
    from math import erf, pi, sqrt
    x = (rng.standard_normal((3, 37)) * 3).astype(dtype)
    (y,) = run("Gelu", [x], {"approximate": approximate}, opset=20)
    x64 = x.astype("float64")
    if approximate == "none":
        want = 0.5 * x64 * (1 + np.vectorize(erf)(x64 / sqrt(2)))
    else:
        want = 0.5 * x64 * (1 + np.tanh(sqrt(2 / pi) * (x64 + 0.044715 * x64 ** 3)))
    assert_close(y, want, dtype, rtol=tol(dtype), atol=tol(dtype))


def test_later_normalization_errors(rng):
    x = rng.standard_normal((2, 6, 3)).astype("float32")
    with pytest.raises(tessera.Error, match="num_groups 4 must divide the 6 channels"):
        run("GroupNormalization", [x, np.ones(4, "float32"), np.zeros(4, "float32")], {"num_groups": 4}, opset=21)
    with pytest.raises(tessera.Error, match=r"scale must be \[6\] \(one per channel at opset 21\)"):
        run("GroupNormalization", [x, np.ones(3, "float32"), np.zeros(3, "float32")], {"num_groups": 3}, opset=21)
    with pytest.raises(tessera.Error, match="p must be 1 or 2, got 3"):
        run("LpNormalization", [x], {"p": 3}, opset=22)
    with pytest.raises(tessera.Error, match='approximate must be "none" or "tanh"'):
        run("Gelu", [x], {"approximate": "fast"}, opset=20)

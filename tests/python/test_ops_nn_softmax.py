"""Softmax, LogSoftmax, Hardmax (opset 11 coerces to 2-D at the axis, opset 13 works along one
axis), NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss through the ONNX importer, against
numpy: every axis including negative ones, rows the vector width does not divide, large values,
weights, ignore_index (also negative and out of the class range), every reduction."""
import numpy as np
import pytest

import tessera
from nn_testing import assert_close, run


def softmax_ref(x, axes):
    m = x.max(axis=axes, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axes, keepdims=True)


def log_softmax_ref(x, axes):
    m = x.max(axis=axes, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axes, keepdims=True))


def hardmax_ref(x, axes):
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    flat = moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,))
    out = np.zeros_like(flat)
    np.put_along_axis(out, flat.argmax(axis=-1)[..., None], 1, axis=-1)
    return np.moveaxis(out.reshape(moved.shape), list(range(x.ndim - len(axes), x.ndim)), axes)


REFS = {"Softmax": softmax_ref, "LogSoftmax": log_softmax_ref, "Hardmax": hardmax_ref}


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("shape,axis", [((3, 37), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 17), -1), ((5,), 0), ((2, 1, 33), -2)])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_family(rng, op, shape, axis, opset):
    x = (rng.standard_normal(shape) * 4).astype("float32")
    if op == "Hardmax":
        x = np.round(x)  # ties: the first maximum wins
    (y,) = run(op, [x], {"axis": axis}, opset=opset)
    a = axis % len(shape)
    axes = tuple(range(a, len(shape))) if opset < 13 else (a,)
    assert_close(y, REFS[op](x.astype("float64"), axes), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_softmax_dtypes(rng, op, dtype):
    x = rng.standard_normal((4, 21)).astype(dtype)
    (y,) = run(op, [x])
    tol = 2e-2 if dtype == "float16" else 1e-9
    assert_close(y, REFS[op](x.astype("float64"), (1,)), dtype, rtol=tol, atol=tol)


def test_default_axis_per_opset(rng):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    (old,) = run("Softmax", [x], opset=11)
    (new,) = run("Softmax", [x], opset=13)
    assert_close(old, softmax_ref(x.astype("float64"), (1, 2)), "float32", rtol=1e-5, atol=1e-6)
    assert_close(new, softmax_ref(x.astype("float64"), (2,)), "float32", rtol=1e-5, atol=1e-6)


def test_softmax_large_values_and_hardmax_integers(rng):
    x = np.array([[1000, 1001, 1002], [-1000, 0, 1000]], "float32")
    (y,) = run("Softmax", [x])
    assert_close(y, softmax_ref(x.astype("float64"), (1,)), "float32", atol=1e-6)
    xi = np.array([[3, 7, 7, 1], [-2, -2, -5, -9]], "int32")
    (h,) = run("Hardmax", [xi])
    assert_close(h, np.array([[0, 1, 0, 0], [1, 0, 0, 0]], "int32"), "int32")


def test_softmax_axis_errors(rng):
    with pytest.raises(tessera.Error, match="axis 2 is out of range"):
        run("Softmax", [rng.standard_normal((2, 3)).astype("float32")], {"axis": 2})


def nll_ref(x, target, weight, reduction, ignore_index):
    n, c = x.shape[:2]
    t = np.moveaxis(x, 1, -1).reshape(-1, c)
    tgt = target.reshape(-1)
    w = weight[np.clip(tgt, 0, c - 1)] if weight is not None else np.ones(len(tgt))
    if ignore_index is not None:
        w = np.where(tgt == ignore_index, 0, w)
    loss = -t[np.arange(len(tgt)), np.clip(tgt, 0, c - 1)] * w
    if reduction == "none":
        return loss.reshape(target.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


CASES = [((5, 4), None), ((3, 5, 2), 2), ((2, 3, 4, 5), -1), ((4, 6), 7), ((2, 3, 2, 2, 3), 0)]


@pytest.mark.parametrize("shape,ignore_index", CASES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(rng, shape, ignore_index, reduction, weighted):
    c = shape[1]
    x = rng.standard_normal(shape).astype("float32")
    target = rng.integers(0, c, size=(shape[0],) + shape[2:]).astype("int64")
    if ignore_index is not None:
        target.reshape(-1)[::3] = ignore_index
    weight = rng.random(c).astype("float32") if weighted else None
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    (y,) = run("NegativeLogLikelihoodLoss", [x, target] + ([weight] if weighted else []), attrs, opset=13)
    assert_close(y, nll_ref(x.astype("float64"), target, weight, reduction, ignore_index), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,ignore_index", CASES[:3])
@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("log_prob", [False, True])
def test_softmax_cross_entropy(rng, shape, ignore_index, reduction, log_prob):
    c = shape[1]
    x = rng.standard_normal(shape).astype("float32")
    target = rng.integers(0, c, size=(shape[0],) + shape[2:]).astype("int32")
    if ignore_index is not None:
        target.reshape(-1)[::2] = ignore_index
    weight = rng.random(c).astype("float32")
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    outs = run("SoftmaxCrossEntropyLoss", [x, target, weight], attrs, opset=13, outputs=2 if log_prob else 1)
    lp = log_softmax_ref(x.astype("float64"), (1,))
    assert_close(outs[0], nll_ref(lp, target, weight, reduction, ignore_index), "float32", rtol=1e-5, atol=1e-5)
    if log_prob:
        assert_close(outs[1], lp, "float32", rtol=1e-5, atol=1e-5)


def test_nll_loss_errors(rng):
    x = rng.standard_normal((3, 4)).astype("float32")
    with pytest.raises(tessera.Error, match=r"target must have shape \(3,\)"):
        run("NegativeLogLikelihoodLoss", [x, np.zeros(4, "int64")], opset=13)
    with pytest.raises(tessera.Error, match="reduction must be none, sum or mean"):
        run("NegativeLogLikelihoodLoss", [x, np.zeros(3, "int64")], {"reduction": "avg"}, opset=13)


@pytest.mark.parametrize("shape", [(0, 7), (3, 0)])
def test_softmax_empty(shape):
    for op in REFS:
        (y,) = run(op, [np.zeros(shape, "float32")])
        assert y.shape == shape and y.dtype == np.float32


def test_nll_loss_empty_sum_is_zero():
    (y,) = run("NegativeLogLikelihoodLoss", [np.zeros((0, 3), "float32"), np.zeros((0,), "int64")], {"reduction": "sum"}, opset=13)
    assert_close(y, np.float32(0), "float32")

"""MaxPool (with Indices), AveragePool, LpPool, the global pools and MaxUnpool through the ONNX
importer, against numpy: 1-D to 3-D, strides, dilations, asymmetric pads, auto_pad, ceil_mode,
count_include_pad, integer dtypes for MaxPool."""
import numpy as np
import pytest

import tessera
from nn_testing import assert_close, run, windows


def pads_for(auto_pad, size, kernel, stride):
    if auto_pad == "VALID":
        return 0, 0
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + kernel - size)
    small, big = total // 2, total - total // 2
    return (small, big) if auto_pad == "SAME_UPPER" else (big, small)


def ceil_extra(size, kernel, stride, dilation, pads, ceil_mode):
    """End padding that makes floor division give the ceil-mode size (dropping a last window that
    would start past the input and its left padding)."""
    span = size + pads[0] + pads[1] - (kernel - 1) * dilation - 1
    out = (span + stride - 1) // stride + 1 if ceil_mode else span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pads[0]:
        out -= 1
    return (out - 1) * stride + (kernel - 1) * dilation + 1 - (size + pads[0] + pads[1])


def pool_reference(x, kind, kernel, strides, dilations, pads, ceil_mode=0, count_include_pad=0, p=2):
    rank = len(kernel)
    extra = [max(0, ceil_extra(x.shape[2 + d], kernel[d], strides[d], dilations[d], (pads[d], pads[d + rank]), ceil_mode))
             for d in range(rank)]
    full = list(pads[:rank]) + [pads[rank + d] + extra[d] for d in range(rank)]
    kernel_axes = tuple(range(2 + rank, 2 + 2 * rank))
    if kind == "max":
        return windows(x, kernel, strides, dilations, full, fill=-np.inf).max(axis=kernel_axes)
    if kind == "lp":
        return (windows(np.abs(x), kernel, strides, dilations, full) ** p).sum(axis=kernel_axes) ** (1.0 / p)
    total = windows(x, kernel, strides, dilations, full).sum(axis=kernel_axes)
    if count_include_pad:
        # the padding counts; what lies past it (ceil mode) does not
        region = np.ones(x.shape[:2] + tuple(x.shape[2 + d] + pads[d] + pads[rank + d] for d in range(rank)))
        count = windows(region, kernel, strides, dilations, [0] * rank + extra).sum(axis=kernel_axes)
    else:
        count = windows(np.ones(x.shape), kernel, strides, dilations, full).sum(axis=kernel_axes)
    return total / count


CASES = [
    # spatial, kernel, strides, dilations, pads
    ((11, 13), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((8, 5), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),
    ((1, 9), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    ((12, 12), (3, 2), (1, 2), (2, 1), (2, 0, 1, 1)),
    ((40, 37), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((17,), (4,), (3,), (1,), (1, 2)),
    ((5, 6, 7), (2, 3, 2), (2, 1, 2), (1, 1, 1), (1, 1, 0, 0, 1, 1)),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_max_pool(rng, case, ceil_mode):
    spatial, kernel, strides, dilations, pads = case
    x = rng.standard_normal((2, 3) + spatial).astype("float32")
    (y,) = run("MaxPool", [x], {"kernel_shape": list(kernel), "strides": list(strides), "dilations": list(dilations),
                                "pads": list(pads), "ceil_mode": ceil_mode})
    assert_close(y, pool_reference(x, "max", kernel, strides, dilations, pads, ceil_mode), "float32")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "float16", "float64"])
def test_max_pool_dtypes(rng, dtype):
    x = (rng.standard_normal((1, 2, 9, 10)) * 50).astype(dtype)
    (y,) = run("MaxPool", [x], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    want = pool_reference(x.astype("float64"), "max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    assert_close(y, want.astype(dtype), dtype)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(rng, storage_order):
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6).astype("float32")
    y, idx = run("MaxPool", [x], {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
                                  "storage_order": storage_order}, outputs=2)
    assert idx.dtype == np.int64
    flat = x.reshape(-1)
    if storage_order == 0:
        np.testing.assert_array_equal(flat[idx], y)
    else:
        # column-major over the spatial dimensions within each (n, c) plane
        plane, h, w = idx // (7 * 6), (idx % (7 * 6)) % 7, (idx % (7 * 6)) // 7
        np.testing.assert_array_equal(x.reshape(-1, 7, 6)[plane, h, w], y)


@pytest.mark.parametrize("case", [c for c in CASES if c[3] == (1,) * len(c[1])])  # dilations: opset 19
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_pool(rng, case, count_include_pad, ceil_mode):
    spatial, kernel, strides, dilations, pads = case
    x = rng.standard_normal((2, 3) + spatial).astype("float32")
    attrs = {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads), "ceil_mode": ceil_mode,
             "count_include_pad": count_include_pad}
    (y,) = run("AveragePool", [x], attrs)
    want = pool_reference(x, "avg", kernel, strides, dilations, pads, ceil_mode, count_include_pad)
    assert_close(y, want, "float32")


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_auto_pad(rng, auto_pad, op):
    x = rng.standard_normal((1, 2, 10, 7)).astype("float32")
    (y,) = run(op, [x], {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": auto_pad})
    ph, pw = pads_for(auto_pad, 10, 3, 2), pads_for(auto_pad, 7, 2, 3)
    pads = (ph[0], pw[0], ph[1], pw[1])
    want = pool_reference(x, "max" if op == "MaxPool" else "avg", (3, 2), (2, 3), (1, 1), pads)
    assert_close(y, want, "float32")


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(rng, p):
    x = rng.standard_normal((2, 3, 9, 8)).astype("float32")
    (y,) = run("LpPool", [x], {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "p": p}, opset=11)
    assert_close(y, pool_reference(x, "lp", (3, 2), (2, 1), (1, 1), (1, 0, 1, 1), p=p), "float32", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 17, 5), (2, 2, 3, 4, 5), (1, 1, 1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_global_pools(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    axes = tuple(range(2, len(shape)))
    (avg,) = run("GlobalAveragePool", [x])
    (mx,) = run("GlobalMaxPool", [x])
    (lp,) = run("GlobalLpPool", [x], {"p": 3})
    xd = x.astype("float64")
    tol = 2e-2 if dtype == "float16" else None
    assert_close(avg, xd.mean(axis=axes, keepdims=True), dtype, rtol=tol, atol=tol)
    assert_close(mx, xd.max(axis=axes, keepdims=True), dtype)
    assert_close(lp, (np.abs(xd) ** 3).sum(axis=axes, keepdims=True) ** (1 / 3), dtype, rtol=tol or 1e-4, atol=tol or 1e-4)


def test_max_unpool_inverts_max_pool(rng):
    x = rng.permutation(2 * 3 * 8 * 6).reshape(2, 3, 8, 6).astype("float32")
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    y, idx = run("MaxPool", [x], attrs, outputs=2)
    (u,) = run("MaxUnpool", [y, idx], attrs, opset=11)
    want = np.zeros(x.size, "float32")
    want[idx.reshape(-1)] = y.reshape(-1)
    assert_close(u, want.reshape(x.shape), "float32")


def test_max_unpool_output_shape():
    y = np.array([[[[5, 6], [7, 8]]]], "float32")
    idx = np.array([[[[5, 7], [13, 15]]]], "int64")
    (u,) = run("MaxUnpool", [y, idx, np.array([1, 1, 5, 5], "int64")], {"kernel_shape": [2, 2], "strides": [2, 2]},
               opset=11, constants=(2,))
    want = np.zeros((1, 1, 5, 5), "float32")
    want[0, 0, 1, 1], want[0, 0, 1, 3], want[0, 0, 3, 1], want[0, 0, 3, 3] = 5, 6, 7, 8
    assert_close(u, want, "float32")


@pytest.mark.parametrize("attrs,message", [
    ({"kernel_shape": [3]}, "kernel_shape must have 2 entries"),
    ({"kernel_shape": [3, 3], "pads": [3, 3, 3, 3]}, "smaller than the window"),
    ({"kernel_shape": [3, 3], "storage_order": 2}, "storage_order"),
])
def test_pool_errors(rng, attrs, message):
    x = rng.standard_normal((1, 1, 5, 5)).astype("float32")
    with pytest.raises(tessera.Error, match=message):
        run("MaxPool", [x], attrs, outputs=2 if "storage_order" in attrs else 1)


@pytest.mark.parametrize("op,shape", [("MaxPool", (0, 3, 5, 5)), ("AveragePool", (2, 0, 5, 5)), ("GlobalAveragePool", (0, 3, 4, 4)),
                                      ("GlobalMaxPool", (2, 0, 3))])
def test_pool_empty(op, shape):
    attrs = {"kernel_shape": [2, 2]} if not op.startswith("Global") else {}
    (y,) = run(op, [np.zeros(shape, "float32")], attrs)
    spatial = (4, 4) if not op.startswith("Global") else (1,) * (len(shape) - 2)
    assert y.shape == shape[:2] + spatial and y.dtype == np.float32

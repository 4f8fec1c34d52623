"""Index-driven ONNX operators (Gather, GatherElements, GatherND, Scatter, ScatterElements,
ScatterND) against numpy: negative indices, batch dimensions, reductions, duplicate indices,
every dtype, and out-of-range indices, which Tessera clamps (never reading or writing outside
a buffer)."""
import numpy as np
import pytest

import tessera
from test_ops_transform import ALL_DTYPES, I64, check, make_data, run_node


def clamp_index(idx, n):
    idx = np.where(idx < 0, idx + n, idx)
    return np.clip(idx, 0, n - 1)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather_dtypes(tmp_path, rng, dtype):
    x = make_data(rng, (5, 37), dtype)
    idx = np.array([[0, -1], [4, 2], [-5, 3]], dtype=np.int64)
    (y,) = run_node(tmp_path, "Gather", {"x": x, "i": idx}, {"axis": 0})
    check(y, np.take(x, clamp_index(idx, 5), axis=0))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("idx_shape", [(), (4,), (2, 3)])
@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_gather_axes(tmp_path, rng, axis, idx_shape, idtype):
    x = make_data(rng, (3, 4, 17), "float32")
    n = x.shape[axis]
    idx = rng.integers(-n, n, idx_shape).astype(idtype)
    (y,) = run_node(tmp_path, "Gather", {"x": x, "i": idx}, {"axis": axis})
    check(y, np.take(x, clamp_index(idx.astype(np.int64), n), axis=axis))


def test_gather_out_of_range_is_clamped(tmp_path, rng):
    x = make_data(rng, (6, 3), "float32")
    idx = np.array([100, -100, 6, -7, 2**40], dtype=np.int64)
    (y,) = run_node(tmp_path, "Gather", {"x": x, "i": idx})
    check(y, x[[5, 0, 5, 0, 5]])


def test_gather_empty(tmp_path, rng):
    x = make_data(rng, (4, 3), "float32")
    (y,) = run_node(tmp_path, "Gather", {"x": x, "i": np.zeros((0, 2), np.int64)}, {"axis": 1})
    check(y, np.zeros((4, 0, 2), np.float32))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "float16"])
def test_gather_elements(tmp_path, rng, axis, dtype):
    x = make_data(rng, (4, 19), dtype)
    ishape = [3, 19]
    ishape[axis] = 5
    n = x.shape[axis]
    idx = rng.integers(-n, n, ishape).astype(np.int64)
    idx.flat[0] = 1000  # clamped
    (y,) = run_node(tmp_path, "GatherElements", {"x": x, "i": idx}, {"axis": axis})
    check(y, np.take_along_axis(x[tuple(slice(0, s) if d != axis % 2 else slice(None) for d, s in enumerate(ishape))],
                                clamp_index(idx, n), axis=axis))


def gather_nd_ref(data, indices, b):
    batch = int(np.prod(indices.shape[:b])) if b else 1
    data_b = data.reshape((batch,) + data.shape[b:])
    idx_b = indices.reshape((batch, -1, indices.shape[-1]))
    out = []
    for i in range(batch):
        for row in idx_b[i]:
            key = tuple(clamp_index(np.array(row[j]), data.shape[b + j]) for j in range(len(row)))
            out.append(data_b[i][key])
    return np.array(out, dtype=data.dtype).reshape(indices.shape[:-1] + data.shape[b + indices.shape[-1]:])


@pytest.mark.parametrize("dshape,ishape,b", [
    ((2, 3, 17), (4, 2), 0), ((2, 3, 17), (4, 1), 0), ((2, 3, 17), (2, 3), 0), ((2, 3, 17), (2, 5, 1), 1),
    ((2, 3, 4, 5), (2, 3, 1), 2), ((5,), (3, 1), 0), ((2, 3), (0, 1), 0),
])
def test_gather_nd(tmp_path, rng, dshape, ishape, b):
    x = make_data(rng, dshape, "float32")
    bound = min(dshape[b:b + ishape[-1]] or [1])
    idx = rng.integers(-bound, bound, ishape).astype(np.int64)
    (y,) = run_node(tmp_path, "GatherND", {"x": x, "i": idx}, {"batch_dims": b}, opset=12)
    check(y, gather_nd_ref(x, idx, b))


def scatter_elements_ref(data, indices, updates, axis, reduction="none"):
    out = data.copy()
    axis %= data.ndim
    for pos in np.ndindex(*indices.shape):
        target = list(pos)
        target[axis] = clamp_index(np.array(indices[pos]), data.shape[axis])
        target = tuple(target)
        if reduction == "add":
            out[target] += updates[pos]
        elif reduction == "mul":
            out[target] *= updates[pos]
        else:
            out[target] = updates[pos]
    return out


@pytest.mark.parametrize("op,opset", [("Scatter", 9), ("ScatterElements", 11), ("ScatterElements", 16)])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(tmp_path, rng, op, opset, axis):
    x = make_data(rng, (5, 21), "float32")
    ishape = [3, 21]
    ishape[axis] = 4
    n = x.shape[axis]
    # Distinct targets along each line (some negative), so the order of duplicates does not matter.
    a = axis % 2
    lines = np.stack([rng.permutation(n)[:4] - n * rng.integers(0, 2, 4) for _ in range(ishape[1 - a])])
    idx = np.ascontiguousarray(np.moveaxis(lines, 1, a)).astype(np.int64)
    upd = make_data(rng, ishape, "float32")
    (y,) = run_node(tmp_path, op, {"x": x, "i": idx, "u": upd}, {"axis": axis}, opset=opset)
    check(y, scatter_elements_ref(x, idx, upd, axis))


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float64", "uint8"])
def test_scatter_elements_duplicates_and_reductions(tmp_path, rng, reduction, dtype):
    x = make_data(rng, (3, 6), dtype) if dtype != "uint8" else rng.integers(0, 4, (3, 6)).astype(dtype)
    idx = np.array([[1, 1, -5, 7], [0, 5, 5, 5], [2, 3, 4, -1]], dtype=np.int64)  # duplicates; 7 is clamped to 5
    upd = make_data(rng, (3, 4), dtype) if dtype != "uint8" else rng.integers(0, 4, (3, 4)).astype(dtype)
    (y,) = run_node(tmp_path, "ScatterElements", {"x": x, "i": idx, "u": upd}, {"axis": 1, "reduction": reduction}, opset=16)
    want = scatter_elements_ref(x, idx, upd, 1, reduction)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(y, want, rtol=1e-6)
    else:
        check(y, want)


def test_scatter_elements_bool_and_empty(tmp_path, rng):
    x = make_data(rng, (4, 5), "bool")
    idx = np.array([[0], [4], [-1], [2]], dtype=np.int32)
    upd = np.array([[True], [False], [True], [False]])
    (y,) = run_node(tmp_path, "ScatterElements", {"x": x, "i": idx, "u": upd}, {"axis": 1})
    check(y, scatter_elements_ref(x, idx, upd, 1))
    (z,) = run_node(tmp_path, "ScatterElements", {"x": x, "i": np.zeros((0, 5), np.int64), "u": np.zeros((0, 5), bool)})
    check(z, x)


def scatter_nd_ref(data, indices, updates, reduction="none"):
    out = data.copy()
    q = indices.shape[-1]
    for pos in np.ndindex(*indices.shape[:-1]):
        key = tuple(clamp_index(np.array(indices[pos][j]), data.shape[j]) for j in range(q))
        if reduction == "add":
            out[key] += updates[pos]
        elif reduction == "mul":
            out[key] *= updates[pos]
        else:
            out[key] = updates[pos]
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
@pytest.mark.parametrize("dshape,ishape", [((4, 4, 17), (2, 1)), ((4, 4, 17), (3, 2)), ((4, 5), (2, 2, 2)), ((6,), (7, 1)),
                                            ((3, 4), (2,)), ((3, 4), (0,))])
def test_scatter_nd(tmp_path, rng, reduction, dshape, ishape):
    x = make_data(rng, dshape, "float32")
    q = ishape[-1]
    idx = np.zeros(ishape, np.int64)
    for j in range(q):
        idx[..., j] = rng.integers(-dshape[j], dshape[j], ishape[:-1])
    upd = make_data(rng, ishape[:-1] + dshape[q:], "float32")
    (y,) = run_node(tmp_path, "ScatterND", {"x": x, "i": idx, "u": upd}, {"reduction": reduction}, opset=16)
    np.testing.assert_allclose(y, scatter_nd_ref(x, idx, upd, reduction), rtol=1e-5)


def test_scatter_nd_last_duplicate_wins_and_clamps(tmp_path, rng):
    x = np.zeros((5, 2), np.int16)
    idx = np.array([[1], [9], [1], [-7]], dtype=np.int64)
    upd = np.array([[1, 1], [2, 2], [3, 3], [4, 4]], np.int16)
    (y,) = run_node(tmp_path, "ScatterND", {"x": x, "i": idx, "u": upd})
    check(y, scatter_nd_ref(x, idx, upd))


def test_scatter_errors(tmp_path):
    x = np.zeros((3, 3), np.float32)
    with pytest.raises(tessera.Error, match="ScatterElements.*reduction 'max'"):
        run_node(tmp_path, "ScatterElements", {"x": x, "i": np.zeros((1, 1), np.int64), "u": np.zeros((1, 1), np.float32)},
                 {"reduction": "max"}, opset=16)
    with pytest.raises(tessera.Error, match="ScatterND.*updates must have shape"):
        run_node(tmp_path, "ScatterND", {"x": x, "i": np.zeros((2, 1), np.int64), "u": np.zeros((2, 2), np.float32)})
    with pytest.raises(tessera.Error, match="Gather.*indices must be an integer"):
        run_node(tmp_path, "Gather", {"x": x, "i": np.zeros((2,), np.float32)})
    with pytest.raises(tessera.Error, match="GatherND.*batch_dims"):
        run_node(tmp_path, "GatherND", {"x": x, "i": I64(0, 1).reshape(1, 2)}, {"batch_dims": 2}, opset=12)

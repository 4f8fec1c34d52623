"""ONNX reductions, ArgMax/ArgMin, CumSum and CumProd against numpy: every axes pattern (all, one,
negative, several, the innermost or not), keepdims, empty reductions, float16 (which
accumulates in float32), integers, sizes that exercise the vectorized, parallel and partial-sum
(rfactor) schedules."""
import numpy as np
import pytest

import tessera
from math_onnx import FLOATS, build, check, run, sample


def logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


REDUCTIONS = {
    "ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min, "ReduceProd": np.prod,
    "ReduceL1": lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims),
    "ReduceL2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
    "ReduceSumSquare": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
    "ReduceLogSum": lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)),
    "ReduceLogSumExp": logsumexp,
}

CASES = [((3, 4, 5), None), ((3, 4, 5), [1]), ((3, 4, 5), [-1]), ((3, 4, 5), [0, 2]), ((2, 33, 17), [0, 1, 2]),
         ((2, 33, 17), [2]), ((2, 33, 17), [0]), ((1, 37), [0]), ((37,), [0]), ((5, 1, 3), [1]), ((64, 300), [1]),
         ((300, 64), [0]), ((3, 50000), [1]), ((100000,), None), ((2, 3, 50, 60), [2, 3]), ((7, 3, 40), [0, 2])]


def reference(op, x, axes, keepdims):
    axis = None if axes is None else tuple(axes)
    x64 = x.astype(np.float64) if x.dtype.kind == "f" else x
    with np.errstate(divide="ignore", invalid="ignore"):
        return REDUCTIONS[op](x64, axis=axis, keepdims=bool(keepdims)).astype(x.dtype)


def reduce(op, x, axes, keepdims, opset=13):
    attrs = {"keepdims": keepdims}
    if op == "ReduceSum" and opset >= 13:
        return run(op, [x], attrs, opset=opset, constants={1: np.array(axes, np.int64)} if axes is not None else None)
    if axes is not None:
        attrs["axes"] = axes
    return run(op, [x], attrs, opset=opset)


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_float32(op, shape, axes, keepdims, rng):
    lo = 0.5 if op == "ReduceLogSum" else -2
    x = sample(rng, shape, np.float32, lo, 2)
    if op == "ReduceProd":
        x = sample(rng, shape, np.float32, 0.99, 1.01)
    check(reduce(op, x, axes, keepdims), reference(op, x, axes, keepdims), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_reduce_other_floats(op, dtype, rng):
    x = sample(rng, (4, 300), dtype, 0.5 if op == "ReduceLogSum" else -2, 2)
    if op == "ReduceProd":
        x = sample(rng, (4, 300), dtype, 0.99, 1.01)
    for axes in ([1], [0], None):
        # float16 accumulates in float32: the sums are rounded once, at the end.
        want = reference(op, x, axes, 1)
        check(reduce(op, x, axes, 1), want, rtol=2e-3 if dtype == np.float16 else 1e-12)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean", "ReduceL1",
                                "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64, np.int8, np.uint8])
def test_reduce_integers(op, dtype, rng):
    if dtype in (np.int8, np.uint8) and op not in ("ReduceMax", "ReduceMin"):
        pytest.skip("ONNX takes 8-bit integers in ReduceMax/ReduceMin only")
    x = sample(rng, (3, 5, 19), dtype, -3 if op == "ReduceProd" else -100, 3 if op == "ReduceProd" else 100)
    for axes in ([2], [0, 1], None):
        axis = tuple(axes) if axes else None
        if op == "ReduceMean":
            want = np.trunc(np.mean(x.astype(np.float64), axis=axis, keepdims=True)).astype(dtype)
        else:
            want = reference(op, x, axes, 1)
        check(reduce(op, x, axes, 1), want)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32])
def test_reduce_min_max_at_the_type_limits(dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, info.max - 1, info.max], [info.min, info.min + 1, 0]], dtype)
    check(reduce("ReduceMin", x, [1], 0), x.min(axis=1))
    check(reduce("ReduceMax", x, [1], 0), x.max(axis=1))
    check(run("ArgMin", [x], {"axis": 1}), np.argmin(x, axis=1)[:, None])


def test_reduce_sum_axes_input_and_noop(rng):
    x = sample(rng, (3, 4, 5), np.float32)
    check(run("ReduceSum", [x], {"keepdims": 0}), np.sum(x), rtol=1e-5)
    check(run("ReduceSum", [x], {"keepdims": 0}, constants={1: np.array([], np.int64)}), np.sum(x), rtol=1e-5)
    check(run("ReduceSum", [x], {"noop_with_empty_axes": 1}, constants={1: np.array([], np.int64)}), x)
    check(run("ReduceSum", [x], {"noop_with_empty_axes": 1}), x)
    check(run("ReduceSum", [x], {"keepdims": 1}, constants={1: np.array([-1, 0], np.int64)}),
          np.sum(x, axis=(0, 2), keepdims=True), rtol=1e-5)


def test_reduce_sum_opset_11_axes_attribute(rng):
    x = sample(rng, (3, 4, 5), np.float32)
    check(run("ReduceSum", [x], {"axes": [1], "keepdims": 0}, opset=11), np.sum(x, axis=1), rtol=1e-5)


def test_reduce_opset_18_axes_input(rng):
    x = sample(rng, (3, 4, 5), np.float32)
    check(run("ReduceMax", [x], {"keepdims": 0}, opset=18, constants={1: np.array([2], np.int64)}), np.max(x, axis=2))


def test_reduce_max_and_min_of_bools_are_any_and_all(rng):
    """Opset 20: bool inputs; an empty reduction gives the identities, false and true."""
    x = rng.random((4, 5, 3)) < 0.3
    for axes in ([1], [0, 2], [-1]):
        check(run("ReduceMax", [x], {"keepdims": 0}, opset=20, constants={1: np.array(axes, np.int64)}),
              np.any(x, axis=tuple(axes)))
        check(run("ReduceMin", [x], {"keepdims": 1}, opset=20, constants={1: np.array(axes, np.int64)}),
              np.all(x, axis=tuple(axes), keepdims=True))
    empty = np.zeros((2, 0), bool)
    check(run("ReduceMax", [empty], {"keepdims": 0}, opset=20, constants={1: np.array([1], np.int64)}), np.zeros(2, bool))
    check(run("ReduceMin", [empty], {"keepdims": 0}, opset=20, constants={1: np.array([1], np.int64)}), np.ones(2, bool))


def test_empty_reductions():
    x = np.zeros((3, 0), np.float32)
    check(reduce("ReduceSum", x, [1], 0), np.zeros(3, np.float32))
    check(reduce("ReduceProd", x, [1], 0), np.ones(3, np.float32))
    check(reduce("ReduceMax", x, [1], 0), np.full(3, -np.inf, np.float32))
    check(reduce("ReduceSum", x, [0], 1), np.zeros((1, 0), np.float32))


def test_reduce_rejects_bad_axes():
    with pytest.raises(tessera.Error, match="ReduceMax.*axis 3 is out of range"):
        build("ReduceMax", [np.ones((2, 3, 4), np.float32)], {"axes": [3]})
    with pytest.raises(tessera.Error, match="repeated"):
        build("ReduceMax", [np.ones((2, 3, 4), np.float32)], {"axes": [1, -2]})


def test_reduce_log_sum_exp_large_values():
    x = np.array([[1000, 1000, 999], [-np.inf, -np.inf, -np.inf], [-1000, 0, 1]], np.float32)
    with np.errstate(divide="ignore"):
        want = logsumexp(x.astype(np.float64), (1,), False).astype(np.float32)
    check(reduce("ReduceLogSumExp", x, [1], 0), want)


ARG_CASES = [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 33, 17), 1), ((2, 33, 17), 2), ((2, 33, 17), 0), ((50,), 0),
             ((1, 1), 1), ((3, 5000), 1)]


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,axis", ARG_CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.uint8])
def test_arg_reduce(op, shape, axis, keepdims, last, dtype, rng):
    x = sample(rng, shape, dtype, -4, 4)  # few distinct values: many ties
    f = np.argmax if op == "ArgMax" else np.argmin
    want = f(np.flip(x, axis), axis=axis) if last else f(x, axis=axis)
    if last:
        want = x.shape[axis] - 1 - want
    if keepdims:
        want = np.expand_dims(want, axis)
    check(run(op, [x], {"axis": axis, "keepdims": keepdims, "select_last_index": last}), want.astype(np.int64))


def test_arg_reduce_default_axis(rng):
    x = sample(rng, (4, 3), np.float64)
    check(run("ArgMax", [x], opset=11), np.argmax(x, axis=0)[None, :])


@pytest.mark.parametrize("shape,axis", [((17,), 0), ((3, 40), 1), ((3, 40), 0), ((2, 3, 5), -2), ((1, 0), 1),
                                        ((4, 1000), 1)])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_cumsum(shape, axis, exclusive, reverse, dtype, rng):
    x = sample(rng, shape, dtype, -5, 5)
    y = np.flip(x, axis) if reverse else x
    wide = y.astype(np.float64) if np.dtype(dtype).kind == "f" else y
    acc = np.cumsum(wide, axis=axis)
    if exclusive:
        acc = acc - wide
    if reverse:
        acc = np.flip(acc, axis)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    # Floats: sums run in another order than numpy's, so errors grow with the number of terms.
    atol = {np.float16: 1e-2, np.float32: 1e-6 * x.size, np.float64: 1e-12}.get(dtype, 0)
    check(run("CumSum", [x], attrs, opset=14, constants={1: np.array(axis, np.int32)}), acc.astype(dtype),
          rtol=2e-3 if dtype == np.float16 else 1e-5, atol=atol)


@pytest.mark.parametrize("shape,axis", [((17,), 0), ((3, 40), 1), ((2, 3, 5), -2), ((1, 0), 1), ((2, 300), 1)])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_cumprod(shape, axis, exclusive, reverse, dtype, rng):
    """Factors near 1 (and some exact 1s and 0s for the integers), so that products over 300
    terms stay finite; 300 takes the blocked scan."""
    if np.dtype(dtype).kind == "f":
        x = (1 + 0.05 * sample(rng, shape, np.float64, -1, 1)).astype(dtype)
    else:
        x = rng.choice(np.array([1, 1, 1, -1, 2, 0], dtype), size=shape)
        if x.size > 40:
            x = np.where(rng.random(shape) < 0.97, 1, x).astype(dtype)
    y = np.flip(x, axis) if reverse else x
    acc = np.cumprod(y.astype(np.float64) if np.dtype(dtype).kind == "f" else y, axis=axis)
    if exclusive:
        acc = np.concatenate([np.ones_like(np.take(acc, [0], axis)), np.delete(acc, -1, axis)], axis) if y.size else acc
    if reverse:
        acc = np.flip(acc, axis)
    check(run("CumProd", [x], {"exclusive": exclusive, "reverse": reverse}, opset=26,
              constants={1: np.array(axis, np.int64)}), acc.astype(dtype), rtol=1e-5)


def test_cumsum_axis_from_a_graph_input_is_taken_at_run_time(rng):
    x = sample(rng, (3, 4), "float32")
    lib = build("CumSum", [x, np.array(0, np.int64)], opset=14)
    assert isinstance(lib, tessera.ProgramLibrary)
    for axis in [0, 1, -1, 0]:
        check(lib.run([x, np.array(axis, np.int64)])[0], np.cumsum(x, axis), rtol=1e-5)
    assert lib.builds == []  # a step of the program, run on the host: no build per axis

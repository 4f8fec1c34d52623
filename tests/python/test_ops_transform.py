"""Shape and data-movement ONNX operators (Reshape, Transpose, Concat, Slice, Pad, ...) through
tessera.onnx.load + tessera.build, against numpy on awkward shapes (sizes the 16-float vector
width does not divide, size-1 and empty dimensions), every dtype the operators take, and every
opset variant (attributes that became inputs)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from math_onnx import onnx_type

ALL_DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


def make_data(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run_node(tmp_path, op, inputs, attrs=None, consts=None, outputs=1, opset=17, input_order=None):
    """Builds a one-node model: `inputs` (name -> array) are graph inputs, `consts` (name ->
    array) initializers; `input_order` lists the node's inputs ("" for an omitted one)."""
    inputs, consts = dict(inputs), dict(consts or {})
    order = input_order if input_order is not None else list(inputs) + list(consts)
    out_names = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, order, out_names, **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, onnx_type(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in out_names],
        [numpy_helper.from_array(a, n) for n, a in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / f"{op}.onnx"
    onnx.save(model, str(path))
    lib = tessera.build(tessera.onnx.load(str(path)))
    return lib.run(list(inputs.values()))


def check(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


I64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731


# --- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reshape_dtypes(tmp_path, rng, dtype):
    x = make_data(rng, (3, 37, 2), dtype)
    (y,) = run_node(tmp_path, "Reshape", {"x": x}, consts={"s": I64(2, -1, 37)})
    check(y, x.reshape(2, -1, 37))


@pytest.mark.parametrize("shape,target,allowzero,want", [
    ((2, 3, 4), (0, -1), 0, (2, 12)),
    ((2, 3, 4), (4, 0, 2), 0, (4, 3, 2)),
    ((2, 3, 4), (24,), 0, (24,)),
    ((6, 1, 5), (1, 30, 1), 0, (1, 30, 1)),
    ((4, 6), (2, 2, 3, 2), 0, (2, 2, 3, 2)),
    ((0, 3), (3, 0), 1, (3, 0)),
    ((0, 3), (-1, 3), 0, (0, 3)),
    ((1,), (), 0, ()),
])
def test_reshape_shapes(tmp_path, rng, shape, target, allowzero, want):
    x = make_data(rng, shape, "float32")
    (y,) = run_node(tmp_path, "Reshape", {"x": x}, {"allowzero": allowzero}, consts={"s": np.array(target, dtype=np.int64)}, opset=14)
    check(y, x.reshape(want))


def test_reshape_errors(tmp_path, rng):
    x = make_data(rng, (2, 3), "float32")
    with pytest.raises(tessera.Error, match="Reshape.*more than one -1"):
        run_node(tmp_path, "Reshape", {"x": x}, consts={"s": I64(-1, -1)})
    with pytest.raises(tessera.Error, match="cannot infer"):
        run_node(tmp_path, "Reshape", {"x": x}, consts={"s": I64(4, -1)})
    with pytest.raises(tessera.Error, match="cannot infer"):
        run_node(tmp_path, "Reshape", {"x": np.zeros((0, 3), np.float32)}, consts={"s": I64(0, -1)})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(tmp_path, rng, axis):
    x = make_data(rng, (2, 3, 1, 17), "float32")
    (y,) = run_node(tmp_path, "Flatten", {"x": x}, {"axis": axis})
    a = axis % 4 if axis < 0 else axis
    check(y, x.reshape(int(np.prod(x.shape[:a])), -1))


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_opsets(tmp_path, rng, opset):
    x = make_data(rng, (1, 3, 1, 19), "int32")
    axes = I64(0, -2)
    if opset < 13:
        (y,) = run_node(tmp_path, "Squeeze", {"x": x}, {"axes": [0, -2]}, opset=opset)
        (z,) = run_node(tmp_path, "Unsqueeze", {"x": x}, {"axes": [-1, 1]}, opset=opset)
    else:
        (y,) = run_node(tmp_path, "Squeeze", {"x": x}, consts={"a": axes}, opset=opset)
        (z,) = run_node(tmp_path, "Unsqueeze", {"x": x}, consts={"a": I64(-1, 1)}, opset=opset)
    check(y, x.reshape(3, 19))
    check(z, x.reshape(1, 1, 3, 1, 19, 1))


def test_squeeze_all_and_errors(tmp_path, rng):
    x = make_data(rng, (1, 5, 1), "float16")
    (y,) = run_node(tmp_path, "Squeeze", {"x": x})
    check(y, x.reshape(5))
    with pytest.raises(tessera.Error, match="Squeeze.*dimension 1 .* is 5, not 1"):
        run_node(tmp_path, "Squeeze", {"x": x}, consts={"a": I64(1)})
    with pytest.raises(tessera.Error, match="repeat"):
        run_node(tmp_path, "Unsqueeze", {"x": x}, consts={"a": I64(0, -5)})


# --- Transpose -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,perm", [
    ((37, 45), None), ((37, 45), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((5, 33, 17, 3), (0, 2, 3, 1)),
    ((5, 33, 17, 3), (0, 3, 1, 2)), ((1, 64, 48), (0, 2, 1)), ((130, 129), (1, 0)), ((3, 0, 2), (2, 1, 0)),
])
def test_transpose(tmp_path, rng, shape, perm):
    x = make_data(rng, shape, "float32")
    (y,) = run_node(tmp_path, "Transpose", {"x": x}, {"perm": list(perm)} if perm else None)
    check(y, np.ascontiguousarray(np.transpose(x, perm)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_transpose_dtypes(tmp_path, rng, dtype):
    x = make_data(rng, (20, 35, 3), dtype)
    (y,) = run_node(tmp_path, "Transpose", {"x": x}, {"perm": [1, 0, 2]})
    check(y, np.ascontiguousarray(x.transpose(1, 0, 2)))


# --- Expand, Tile, Concat, Split -------------------------------------------------------------

@pytest.mark.parametrize("shape,target", [((3, 1), (2, 1, 6)), ((3, 1), (1,)), ((1, 17), (5, 1)), ((4,), (3, 4)), ((1,), (0, 1))])
def test_expand(tmp_path, rng, shape, target):
    x = make_data(rng, shape, "float32")
    (y,) = run_node(tmp_path, "Expand", {"x": x}, consts={"s": np.array(target, dtype=np.int64)})
    check(y, x * np.ones(target, dtype=np.float32))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float16", "int64"])
def test_expand_tile_dtypes(tmp_path, rng, dtype):
    x = make_data(rng, (3, 1, 5), dtype)
    (y,) = run_node(tmp_path, "Expand", {"x": x}, consts={"s": I64(2, 3, 4, 5)})
    check(y, np.broadcast_to(x, (2, 3, 4, 5)))
    (t,) = run_node(tmp_path, "Tile", {"x": x}, consts={"r": I64(2, 3, 1)})
    check(t, np.tile(x, (2, 3, 1)))


def test_tile_shapes(tmp_path, rng):
    x = make_data(rng, (3, 17), "float32")
    for reps in [(1, 1), (4, 3), (0, 2)]:
        (t,) = run_node(tmp_path, "Tile", {"x": x}, consts={"r": np.array(reps, dtype=np.int64)})
        check(t, np.tile(x, reps))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "float64"])
def test_concat(tmp_path, rng, axis, dtype):
    shapes = [(2, 3, 17), (2, 3, 17), (2, 3, 17)]
    a = axis % 3
    xs = []
    for i, s in enumerate(shapes):
        s = list(s)
        s[a] = [1, 0, 20][i]
        xs.append(make_data(rng, s, dtype))
    (y,) = run_node(tmp_path, "Concat", {f"x{i}": x for i, x in enumerate(xs)}, {"axis": axis})
    check(y, np.concatenate(xs, axis=a))


@pytest.mark.parametrize("axis", [0, 1])
def test_concat_of_many_computed_inputs(tmp_path, rng, axis):
    """The steps of an unrolled recurrence joined: 100 inputs, each a tanh fused into the concat;
    each vector computes only the input it lies in (a branch on the outer index, not a mask)."""
    n = 100
    x = rng.standard_normal((n, 8, 37) if axis == 0 else (8, n, 37)).astype("float32")
    nodes = [helper.make_node("Split", ["x"], [f"s{i}" for i in range(n)], axis=axis, num_outputs=n)]
    nodes += [helper.make_node("Tanh", [f"s{i}"], [f"t{i}"]) for i in range(n)]
    nodes += [helper.make_node("Concat", [f"t{i}" for i in range(n)], ["y"], axis=axis)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "m.onnx"))
    lib = tessera.build(tessera.onnx.load(str(tmp_path / "m.onnx")), db=False)
    assert any("concat" in k["op"] and "tanh" in k["op"] for k in lib.kernels)
    np.testing.assert_allclose(lib.run([x])[0], np.tanh(x), rtol=1e-6, atol=1e-6)


def test_concat_errors(tmp_path, rng):
    with pytest.raises(tessera.Error, match="Concat.*agree in every dimension"):
        run_node(tmp_path, "Concat", {"a": np.zeros((2, 3), np.float32), "b": np.zeros((3, 3), np.float32)}, {"axis": 1})


@pytest.mark.parametrize("opset", [11, 13])
def test_split_variants(tmp_path, rng, opset):
    x = make_data(rng, (4, 37), "float32")
    if opset < 13:
        outs = run_node(tmp_path, "Split", {"x": x}, {"axis": 1, "split": [5, 0, 32]}, outputs=3, opset=opset)
    else:
        outs = run_node(tmp_path, "Split", {"x": x}, {"axis": -1}, consts={"s": I64(5, 0, 32)}, outputs=3, opset=opset)
    for got, want in zip(outs, np.split(x, [5, 5], axis=1)):
        check(got, want)
    outs = run_node(tmp_path, "Split", {"x": x}, {"axis": 0}, outputs=2, opset=opset)
    for got, want in zip(outs, np.split(x, 2, axis=0)):
        check(got, want)


def test_split_uneven_equal_parts(tmp_path, rng):
    x = make_data(rng, (7, 3), "int16")
    outs = run_node(tmp_path, "Split", {"x": x}, outputs=3)
    for got, want in zip(outs, [x[0:3], x[3:6], x[6:7]]):
        check(got, want)


# --- Slice -----------------------------------------------------------------------------------

def onnx_slice(x, starts, ends, axes=None, steps=None):
    """The ONNX specification's clamping, written independently of the implementation."""
    axes = list(range(len(starts))) if axes is None else [a % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[a]
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
            index[a] = list(range(s, e, st))
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            index[a] = list(range(s, e, st)) if n > 0 else []
    out = x
    for a, ix in enumerate(index):
        if isinstance(ix, list):
            out = np.take(out, np.array(ix, dtype=np.int64), axis=a)
    return out


BIG, SMALL = 2**63 - 1, -2**63


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1, 0], [3, 37], None, None),
    ([-3], [BIG], [1], None),
    ([BIG], [SMALL], [1], [-1]),
    ([-1, 20], [SMALL, 2], [0, -1], [-2, -3]),
    ([100], [200], [1], [1]),
    ([-100], [-200], [1], [1]),
    ([5], [5], [1], [1]),
    ([0, 1], [-1, 36], [1, 0], [7, 1]),
    ([36], [-100], [1], [-5]),
])
def test_slice(tmp_path, rng, starts, ends, axes, steps):
    x = make_data(rng, (5, 37), "float32")
    consts = {"s": np.array(starts, dtype=np.int64), "e": np.array(ends, dtype=np.int64)}
    order = ["x", "s", "e"]
    if axes is not None:
        consts["a"] = np.array(axes, dtype=np.int64)
        order.append("a")
    if steps is not None:
        if axes is None:
            order.append("")
        consts["t"] = np.array(steps, dtype=np.int64)
        order.append("t")
    (y,) = run_node(tmp_path, "Slice", {"x": x}, consts=consts, input_order=order)
    check(y, onnx_slice(x, starts, ends, axes, steps))


def test_slice_opset9_attributes_and_dtypes(tmp_path, rng):
    for dtype in ["bool", "uint16", "float16", "int32"]:
        x = make_data(rng, (4, 6, 5), dtype)
        (y,) = run_node(tmp_path, "Slice", {"x": x}, {"starts": [1, -4], "ends": [1000, -1], "axes": [0, 2]}, opset=9)
        check(y, x[1:, :, 1:4])


def test_slice_empty_axis_negative_step(tmp_path):
    x = np.zeros((0, 3), np.float32)
    (y,) = run_node(tmp_path, "Slice", {"x": x}, consts={"s": I64(-1), "e": I64(SMALL), "a": I64(0), "t": I64(-1)})
    check(y, np.zeros((0, 3), np.float32))


def test_slice_step_zero_is_an_error(tmp_path):
    with pytest.raises(tessera.Error, match="step 0"):
        run_node(tmp_path, "Slice", {"x": np.zeros((3,), np.float32)}, consts={"s": I64(0), "e": I64(2), "a": I64(0), "t": I64(0)})


# --- Pad -----------------------------------------------------------------------------------

def np_pad(x, pads, mode, value=0):
    r = x.ndim
    begins, ends = pads[:r], pads[r:]
    crop = tuple(slice(-b if b < 0 else 0, x.shape[d] + e if e < 0 else None) for d, (b, e) in enumerate(zip(begins, ends)))
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    return np.pad(x, width, mode=mode, constant_values=value) if mode == "constant" else np.pad(x, width, mode=mode)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 1, 2, 3, 0, 4], [1, 0, 0, 0, 2, 17], [0, -1, 3, 0, 2, -2], [2, 6, 0, 2, 9, 1]])
def test_pad_modes(tmp_path, rng, mode, pads):
    x = make_data(rng, (3, 5, 17), "float32")
    consts = {"p": np.array(pads, dtype=np.int64)}
    if mode == "constant":
        consts["v"] = np.array(1.5, dtype=np.float32)
    (y,) = run_node(tmp_path, "Pad", {"x": x}, {"mode": mode}, consts=consts)
    check(y, np_pad(x, pads, mode, 1.5))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_pad_dtypes_and_opset10(tmp_path, rng, dtype):
    x = make_data(rng, (2, 19), dtype)
    (y,) = run_node(tmp_path, "Pad", {"x": x}, {"pads": [1, 0, 0, 3], "value": 1.0}, opset=10)
    check(y, np_pad(x, [1, 0, 0, 3], "constant", 1))
    (z,) = run_node(tmp_path, "Pad", {"x": x}, {"mode": "edge"}, consts={"p": I64(0, 2, 1, 1)})
    check(z, np_pad(x, [0, 2, 1, 1], "edge"))


def build_graph(tmp_path, graph, opset, target, exported):
    """The graph's model built for `target`, or exported as a module and loaded back."""
    if exported and target != "llvm":
        pytest.skip("modules are exported for llvm")
    path = str(tmp_path / "model.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    lib = tessera.build(tessera.onnx.load(path), target=target)
    if not exported:
        return lib
    lib.export(str(tmp_path / "m.so"))
    return tessera.load(str(tmp_path / "m.so"))


@pytest.mark.parametrize("target", ["llvm", "c", "opencl"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_pad_reads_a_value_the_data_gives_as_it_runs(tmp_path, rng, target, exported):
    """Pad's constant_value from an input: one build, every value read by the kernel (a module
    holds it), beside a convolution the padding may fuse into; the other modes ignore it."""
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["y"]),
             helper.make_node("Pad", ["x", "pads", "v"], ["e"], mode="edge"),
             helper.make_node("Conv", ["y", "w"], ["c"])]
    w = make_data(rng, (4, 3, 3, 3), "float32")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", 11]),
                     helper.make_tensor_value_info("v", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "e", "c")],
        [numpy_helper.from_array(I64(0, 0, 1, 2, 0, 0, 2, 1), "pads"), numpy_helper.from_array(w, "w")])
    lib = build_graph(tmp_path, graph, 18, target, exported)
    for shape in [(2, 3, 7, 11), (1, 3, 1, 11)]:
        x = make_data(rng, shape, "float32")
        for v in [0.0, -3.5, np.inf]:
            y, e, c = lib.run([x, np.float32(v)])
            want = np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], constant_values=v)
            np.testing.assert_array_equal(y, want)
            np.testing.assert_array_equal(e, np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode="edge"))
            if np.isfinite(v):
                windows = np.lib.stride_tricks.sliding_window_view(want.astype(np.float64), (3, 3), axis=(2, 3))
                np.testing.assert_allclose(c, np.einsum("nchwij,ocij->nohw", windows, w), rtol=1e-4, atol=1e-4)
    if not exported:
        assert lib.symbolic
    with pytest.raises(tessera.Error, match="the value must be of the input's type float32, got float64"):
        tessera.build(tessera.relay.parse("def @main(%x: float32[2, 3], %v: float64[]) { pad(%x, %v, pads=[1, 0, 0, 0]) }"))


def test_pad_errors(tmp_path):
    x = np.zeros((0, 2), np.float32)
    with pytest.raises(tessera.Error, match="Pad.*edge padding of the empty dimension"):
        run_node(tmp_path, "Pad", {"x": x}, {"mode": "edge"}, consts={"p": I64(1, 0, 0, 0)})
    with pytest.raises(tessera.Error, match="mode 'mirror' is not one of constant, reflect, edge, wrap"):
        run_node(tmp_path, "Pad", {"x": np.zeros((2, 2), np.float32)}, {"mode": "mirror"}, consts={"p": I64(1, 0, 0, 0)})


# --- DepthToSpace, SpaceToDepth, Trilu, OneHot, ReverseSequence ------------------------------

@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_space_round_trip(tmp_path, rng, mode):
    b = 3
    x = make_data(rng, (2, 18, 5, 7), "float32")
    (y,) = run_node(tmp_path, "DepthToSpace", {"x": x}, {"blocksize": b, "mode": mode})
    n, c, h, w = x.shape
    if mode == "DCR":
        want = x.reshape(n, b, b, c // 9, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // 9, h * b, w * b)
    else:
        want = x.reshape(n, c // 9, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // 9, h * b, w * b)
    check(y, want)
    (z,) = run_node(tmp_path, "SpaceToDepth", {"x": want}, {"blocksize": b})
    want2 = want.reshape(n, c // 9, h, b, w, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c, h, w)
    check(z, want2)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -3, 40])
def test_trilu(tmp_path, rng, upper, k):
    x = make_data(rng, (2, 5, 19), "int64")
    consts = {} if k is None else {"k": np.array(k, dtype=np.int64)}
    (y,) = run_node(tmp_path, "Trilu", {"x": x}, {"upper": upper}, consts=consts, opset=14)
    kk = k or 0
    check(y, np.triu(x, kk) if upper else np.tril(x, kk))


@pytest.mark.parametrize("target", ["llvm", "c", "opencl"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_trilu_reads_a_k_the_data_gives_as_it_runs(tmp_path, rng, target, exported):
    """Trilu's k from an input: one build, every k (negative, past either corner, int64's extremes,
    int32) read by the kernel, in process and in a module; no build per value."""
    nodes = [helper.make_node("Trilu", ["x", "k"], ["lo"], upper=0), helper.make_node("Trilu", ["x", "k32"], ["up"])]
    graph = helper.make_graph(
        [helper.make_node("Cast", ["k"], ["k32"], to=TensorProto.INT32)] + nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "R", "C"]), helper.make_tensor_value_info("k", TensorProto.INT64, [])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", "R", "C"]) for n in ("lo", "up")])
    lib = build_graph(tmp_path, graph, 14, target, exported)
    for shape in [(2, 5, 19), (1, 1, 1), (3, 17, 4), (0, 3, 3)]:
        x = make_data(rng, shape, "float32")
        for k in [0, 2, -3, 40, -40, -(2**63), 2**63 - 1]:
            lo, up = lib.run([x, np.array(k, np.int64)])
            k32 = int(np.array(k).astype(np.int32))  # Cast to int32 wraps as numpy does
            np.testing.assert_array_equal(lo, np.tril(x, np.clip(k, -99, 99)))  # numpy's own overflows
            np.testing.assert_array_equal(up, np.triu(x, k32))
    if not exported:
        assert lib.symbolic  # every size and every k by one build
    with pytest.raises(tessera.Error, match="k must hold one value"):
        tessera.build(tessera.relay.parse("def @main(%x: float32[2, 3], %k: int64[2]) { trilu(%x, %k) }"))


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("idtype", ["int64", "int32", "float32"])
def test_one_hot(tmp_path, axis, idtype):
    indices = np.array([[0, -1, 9], [3, -10, 12]], dtype=idtype)
    values = np.array([-2, 5], dtype=np.float16)
    (y,) = run_node(tmp_path, "OneHot", {"i": indices, "v": values}, {"axis": axis}, consts={"d": np.array(10.0, np.float32)},
                    input_order=["i", "d", "v"])
    idx = indices.astype(np.int64)
    wrapped = np.where(idx < 0, idx + 10, idx)
    hot = (np.arange(10).reshape(10, 1, 1) == wrapped[None])  # [depth, 2, 3]
    want = np.where(hot, values[1], values[0]).astype(np.float16)
    a = axis % 3
    check(y, np.moveaxis(want, 0, a))


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(tmp_path, rng, batch_axis, time_axis):
    shape = [6, 4, 3]
    shape[batch_axis], shape[time_axis] = 4, 6
    x = make_data(rng, shape, "float32")
    lens = np.array([6, 0, 3, 99], dtype=np.int64)
    (y,) = run_node(tmp_path, "ReverseSequence", {"x": x, "l": lens}, {"batch_axis": batch_axis, "time_axis": time_axis})
    want = x.copy()
    for b, n in enumerate(np.minimum(lens, 6)):
        src = [slice(None)] * 3
        src[batch_axis], src[time_axis] = b, slice(0, n)
        want[tuple(src)] = np.flip(x[tuple(src)], axis=0)
    check(y, want)


# --- Constant, Shape, Size, ConstantOfShape, Range, EyeLike ----------------------------------

def test_constant_variants(tmp_path):
    t = numpy_helper.from_array(np.arange(6, dtype=np.int8).reshape(2, 3))
    for attrs, want in [({"value": t}, np.arange(6, dtype=np.int8).reshape(2, 3)),
                        ({"value_float": 2.5}, np.array(2.5, np.float32)),
                        ({"value_floats": [1.0, 2.0]}, np.array([1, 2], np.float32)),
                        ({"value_int": -4}, np.array(-4, np.int64)),
                        ({"value_ints": [3, 4, 5]}, np.array([3, 4, 5], np.int64))]:
        (y,) = run_node(tmp_path, "Constant", {}, attrs, opset=13)
        check(y, want)


def test_constant_unsupported(tmp_path):
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], np.float32)), numpy_helper.from_array(I64(0)), [3])
    with pytest.raises(tessera.Error, match="Constant.*sparse_value"):
        run_node(tmp_path, "Constant", {}, {"sparse_value": sparse}, opset=13)
    with pytest.raises(tessera.Error, match="string"):
        run_node(tmp_path, "Constant", {}, {"value_string": "a"}, opset=13)


@pytest.mark.parametrize("start,end", [(None, None), (1, None), (None, -1), (-10, 10), (2, 1), (-2, None)])
def test_shape_and_size(tmp_path, rng, start, end):
    x = make_data(rng, (2, 0, 5, 7), "uint8")
    attrs = {k: v for k, v in [("start", start), ("end", end)] if v is not None}
    (y,) = run_node(tmp_path, "Shape", {"x": x}, attrs, opset=15)
    check(y, np.array(x.shape[slice(start, end)], dtype=np.int64))
    (s,) = run_node(tmp_path, "Size", {"x": x})
    check(s, np.array(0, dtype=np.int64))


def test_constant_of_shape(tmp_path):
    (y,) = run_node(tmp_path, "ConstantOfShape", {}, {"value": numpy_helper.from_array(np.array([7], np.int32))}, consts={"s": I64(2, 0, 3)})
    check(y, np.full((2, 0, 3), 7, np.int32))
    (z,) = run_node(tmp_path, "ConstantOfShape", {}, consts={"s": I64(3, 17)})
    check(z, np.zeros((3, 17), np.float32))
    (h,) = run_node(tmp_path, "ConstantOfShape", {}, {"value": numpy_helper.from_array(np.array([1.5], np.float16))},
                    consts={"s": np.zeros((0,), np.int64)})
    check(h, np.array(1.5, np.float16))


@pytest.mark.parametrize("dtype,start,limit,delta", [
    ("float32", 1.0, 5.0, 0.3), ("float64", 10.0, -3.0, -2.5), ("int32", 10, 2, -3), ("int64", -5, 40, 7),
    ("int16", 3, 3, 1), ("int64", 0, 5, -1),
])
def test_range(tmp_path, dtype, start, limit, delta):
    consts = {k: np.array(v, dtype=dtype) for k, v in [("s", start), ("l", limit), ("d", delta)]}
    (y,) = run_node(tmp_path, "Range", {}, consts=consts)
    want = np.arange(start, limit, delta, dtype=dtype)
    assert y.dtype == want.dtype and y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("k", [0, 1, -2, 5])
def test_eye_like(tmp_path, k):
    x = np.zeros((3, 4), np.int32)
    (y,) = run_node(tmp_path, "EyeLike", {"x": x}, {"k": k})
    check(y, np.eye(3, 4, k, dtype=np.int32))
    (z,) = run_node(tmp_path, "EyeLike", {"x": x}, {"k": k, "dtype": TensorProto.FLOAT16})
    check(z, np.eye(3, 4, k, dtype=np.float16))


# --- Fusion with elementwise consumers and producers ----------------------------------------

def test_fused_chains(tmp_path, rng):
    """Data movement between elementwise ops: the fused kernels inline every injective stage."""
    x = make_data(rng, (2, 19, 33), "float32")
    y = make_data(rng, (33, 19, 2), "float32")
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 1, 0]),
             helper.make_node("Add", ["t", "y"], ["a"]),
             helper.make_node("Pad", ["a", "p"], ["pd"], mode="reflect"),
             helper.make_node("Slice", ["pd", "s", "e"], ["sl"]),
             helper.make_node("Relu", ["sl"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                                           helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)],
                              [helper.make_tensor_value_info("out", TensorProto.UNDEFINED, None)],
                              [numpy_helper.from_array(I64(0, 2, 1, 1, 0, 3), "p"), numpy_helper.from_array(I64(1, 0, 2), "s"),
                               numpy_helper.from_array(I64(-1, 100, 4), "e")])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    (got,) = tessera.build(tessera.onnx.load(str(path))).run([x, y])
    a = np.maximum(x, 0).transpose(2, 1, 0) + y
    want = np.maximum(np.pad(a, ((0, 1), (2, 0), (1, 3)), mode="reflect")[1:-1, :, 2:4], 0)
    check(got, want)


@pytest.mark.parametrize("length, heads, dim", [(13, 3, 9), (16, 2, 8), (33, 4, 17), (1, 2, 16), (40, 1, 5)])
def test_fused_head_split_transposes(tmp_path, rng, length, heads, dim):
    """Attention's key and value heads out of one fused projection: Slice, Reshape and a
    Transpose that moves the innermost axis fuse into one kernel walked in tiles, on sizes the
    tiles do not divide."""
    width = heads * dim
    x = make_data(rng, (length, 2, 3 * width), "float32")
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["k"]),
             helper.make_node("Reshape", ["k", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["kt"], perm=[1, 2, 0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("kt", TensorProto.UNDEFINED, None)],
                              [numpy_helper.from_array(I64(width), "s"), numpy_helper.from_array(I64(2 * width), "e"),
                               numpy_helper.from_array(I64(2), "a"),
                               numpy_helper.from_array(I64(length, 2 * heads, dim), "shape")])
    path = tmp_path / "heads.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    lib = tessera.build(tessera.onnx.load(str(path)))
    assert len(lib.kernels) == 1 and lib.kernels[0]["op"].startswith("fused_slice"), lib.kernels
    (got,) = lib.run([x])
    check(got, x[:, :, width:2 * width].reshape(length, 2 * heads, dim).transpose(1, 2, 0))

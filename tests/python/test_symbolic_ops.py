"""Operators that models exported with dynamic axes use on symbolic sizes, built once for every
size (issue 25, item 2): Split of a (N, L, 3E) projection into queries, keys and values, TopK
over a row of symbolic length, CumSum along a sequence, Pad of symbolic dimensions and by pads
computed from the sizes (PyTorch's F.pad to a multiple, its pads reordered through a matrix).
Each runs at sizes that do not divide the tiles, at 1 and 0, and from its exported module."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera


def save(tmp_path, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = str(tmp_path / "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, "int64"), name)


def built_once(tmp_path, path, target="llvm"):
    """The library built for every size, and its module loaded back."""
    lib = tessera.build(tessera.onnx.load(path), target=target, db=False)
    lib.export(str(tmp_path / "m.so"))  # builds it: an error if it is built per size
    assert lib.symbolic
    return lib, tessera.load(str(tmp_path / "m.so"))


@pytest.mark.parametrize("target", ["llvm", "opencl"])
def test_split_of_symbolic_rows_into_queries_keys_and_values(tmp_path, rng, target):
    nodes = [helper.make_node("Split", ["x", "sizes"], ["q", "k", "v"], axis=-1)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 24])],
                [vi("q", ["N", "L", 8]), vi("k", ["N", "L", 8]), vi("v", ["N", "L", 8])], [ints("sizes", [8, 8, 8])])
    lib, module = built_once(tmp_path, path, target)
    for n, length in [(2, 7), (1, 1), (3, 0), (1, 33)]:
        x = rng.standard_normal((n, length, 24)).astype("float32")
        for run in (lib.run, module.run):
            for got, want in zip(run([x]), np.split(x, 3, axis=-1)):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [2, 3])
def test_a_cache_extended_by_concat_copies_its_first_part_unguarded(tmp_path, rng, axis):
    """Concat of a key cache of P tokens and L new ones: the loop over the axis is split at P, the
    part before it a copy of the cache without a select per row (the kernel took 35% longer than
    the static one at P = 512). Along the last axis the split is inside a vector: a select stays."""
    past, new = ["N", 4, "P", 64], ["N", 4, "L", 64]
    if axis == 3:
        past, new = ["N", 4, 8, "P"], ["N", 4, 8, "L"]
    nodes = [helper.make_node("Concat", ["past", "new"], ["y"], axis=axis)]
    path = save(tmp_path, nodes, [vi("past", past), vi("new", new)], [vi("y", None)])
    lib, module = built_once(tmp_path, path)
    lowered = lib.kernels[0]["lowered"]
    if axis == 2:
        assert "for (k, 0, P) {" in lowered and "] = p0[" in lowered, lowered  # a store of p0, no select
    for n, p, length in [(1, 512, 1), (2, 0, 3), (1, 5, 0), (3, 17, 2)]:
        shape = lambda s: (n, 4, s, 64) if axis == 2 else (n, 4, 8, s)
        a, b = rng.standard_normal(shape(p)).astype("float32"), rng.standard_normal(shape(length)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([a, b])[0], np.concatenate([a, b], axis=axis))


def test_slice_reverses_a_whole_symbolic_axis(tmp_path, rng):
    """Slice with step -1 over all of a symbolic axis (torch.flip) keeps its extent."""
    whole = [helper.make_node("Slice", ["x", "start", "end", "axes", "step"], ["y"])]
    inits = [ints("start", [-1, 3]), ints("end", [-2**63, 0]), ints("axes", [1, 2]), ints("step", [-1, -2])]
    path = save(tmp_path, whole, [vi("x", ["N", "L", 5])], [vi("y", ["N", "L", 2])], inits)
    lib, module = built_once(tmp_path, path)
    for n, length in [(2, 7), (1, 1), (3, 0)]:
        x = rng.standard_normal((n, length, 5)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], x[:, ::-1, 3:0:-2])


BIG = 2**63 - 1
# (start, end, step) along a symbolic axis: crops, every other row (YOLO's space-to-depth slices),
# backwards from inside, bounds past either end, INT64_MAX and INT64_MIN as exporters write them.
SYMBOLIC_SLICES = [(1, -1, 1), (0, BIG, 2), (1, BIG, 2), (-1, -BIG - 1, -1), (-2, -BIG - 1, -2), (5, 2, -1),
                   (-3, 100, 1), (2, 3, 1), (BIG, -BIG - 1, -1), (-100, 3, 1), (3, -100, -1), (0, -1, 3), (-1, 0, -2)]


@pytest.mark.parametrize("start, end, step", SYMBOLIC_SLICES)
def test_slice_of_part_of_a_symbolic_axis_is_built_once(tmp_path, rng, start, end, step):
    """A symbolic axis sliced by constant bounds gets a start and length of min and max expressions
    of its size (ONNX's clamping), so the model builds once for every size and exports; against the
    static build of each size, from empty axes up."""
    nodes = [helper.make_node("Slice", ["x", "start", "end", "axes", "step"], ["y"])]
    inits = [ints("start", [start]), ints("end", [end]), ints("axes", [1]), ints("step", [step])]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"])], [vi("y", None)], inits)
    lib, module = built_once(tmp_path, path)
    for length in [0, 1, 2, 3, 4, 7, 10]:
        x = rng.standard_normal((2, length)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False).run([x])[0]
        for run in (lib.run, module.run):
            got = run([x])[0]
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def test_prelu_with_a_slope_per_channel_of_symbolic_images(tmp_path, rng):
    """A slope of shape [C, 1, 1] broadcast over images of symbolic size (it crashed the build)."""
    slope = rng.standard_normal((4, 1, 1)).astype("float32")
    path = save(tmp_path, [helper.make_node("PRelu", ["x", "slope"], ["y"])], [vi("x", ["N", 4, "H", "W"])],
                [vi("y", None)], [numpy_helper.from_array(slope, "slope")])
    lib, module = built_once(tmp_path, path)
    for shape in [(2, 4, 6, 8), (1, 4, 1, 3)]:
        x = rng.standard_normal(shape).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], np.where(x < 0, x * slope, x))


def test_gather_elements_of_symbolic_sizes(tmp_path, rng):
    """GatherElements along a symbolic axis with indices of their own symbolic count (negative ones
    wrap); gathering from an empty axis is an error naming the node and the sizes."""
    path = save(tmp_path, [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1, name="g")],
                [vi("x", ["N", "L"]), vi("i", ["N", "K"], TensorProto.INT64)], [vi("y", None)])
    lib, module = built_once(tmp_path, path)
    for n, length, k in [(3, 4, 3), (1, 1, 5), (2, 7, 0)]:
        x = rng.standard_normal((n, length)).astype("float32")
        i = rng.integers(-length, length, (n, k))
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x, i])[0], np.take_along_axis(x, i % length, axis=1))
    with pytest.raises(tessera.Error, match=r"gather_elements \(node 'g'\) reads an element along a dimension that must "
                                            r"have one: L is 0"):
        lib.run([np.zeros((2, 0), "float32"), np.zeros((2, 1), "int64")])


def test_hardmax_along_a_symbolic_axis(tmp_path, rng):
    """Hardmax's first maximum of a row of symbolic length (ties: the first), opset 13's one axis."""
    path = save(tmp_path, [helper.make_node("Hardmax", ["x"], ["y"], axis=-1)], [vi("x", ["N", "L"])], [vi("y", None)])
    lib, module = built_once(tmp_path, path)
    for n, length in [(3, 5), (2, 1), (1, 9)]:
        x = rng.integers(0, 3, (n, length)).astype("float32")  # ties
        want = np.zeros_like(x)
        want[np.arange(n), x.argmax(axis=1)] = 1
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], want)


@pytest.mark.parametrize("equation, a_shape, b_shape", [
    ("bij,bjk->bik", ["N", "I", 5], ["N", 5, "K"]),            # a batched product
    ("bhqd,bhkd->bhqk", ["N", 2, "L", 4], ["N", 2, "L", 4]),   # attention scores
    ("...ij,jk", ["N", "M", "I", 3], [3, 6]),                   # an ellipsis of symbolic dimensions
    ("bij,bj->bi", ["N", "I", "J"], ["N", "J"]),                # a reduction of symbolic length
    ("bii->bi", ["N", "I", "I"], None),                          # a diagonal
])
def test_einsum_of_symbolic_sizes(tmp_path, rng, equation, a_shape, b_shape):
    names = ["a"] + (["b"] if b_shape else [])
    shapes = [a_shape] + ([b_shape] if b_shape else [])
    path = save(tmp_path, [helper.make_node("Einsum", names, ["y"], equation=equation)],
                [vi(n, s) for n, s in zip(names, shapes)], [vi("y", None)], opset=12)
    lib, module = built_once(tmp_path, path)
    for sizes in [dict(N=2, I=3, K=17, L=5, M=1, J=7), dict(N=1, I=1, K=1, L=1, M=3, J=1), dict(N=3, I=0, K=2, L=0, M=0, J=0)]:
        args = [rng.standard_normal([sizes.get(d, d) for d in s]).astype("float32") for s in shapes]
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run(args)[0], np.einsum(equation, *args), rtol=1e-5, atol=1e-5)


def test_an_einsum_dimension_that_a_constant_operand_fixes_is_checked_at_each_call(tmp_path, rng):
    w = numpy_helper.from_array(rng.standard_normal((4, 6)).astype("float32"), "w")
    path = save(tmp_path, [helper.make_node("Einsum", ["x", "w"], ["y"], equation="nlc,cd->nld")],
                [vi("x", ["N", "L", "C"])], [vi("y", None)], [w], opset=12)
    lib, module = built_once(tmp_path, path)
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    for run in (lib.run, module.run):
        np.testing.assert_allclose(run([x])[0], np.einsum("nlc,cd->nld", x, numpy_helper.to_array(w)), rtol=1e-5, atol=1e-5)
        with pytest.raises(tessera.Error, match=r"input 'x'"):
            run([rng.standard_normal((2, 3, 5)).astype("float32")])


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_grid_sample_of_a_symbolic_batch_and_grid(tmp_path, rng, mode):
    """GridSample (opset 20) at any batch and output grid size (X's own height and width constant:
    the coordinates scale by them), against the static build of each size."""
    path = save(tmp_path, [helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode)],
                [vi("x", ["N", 3, 5, 7]), vi("g", ["N", "Ho", "Wo", 2])], [vi("y", None)], opset=20)
    lib, module = built_once(tmp_path, path)
    for n, ho, wo in [(2, 4, 6), (1, 1, 9), (3, 0, 2)]:
        x = rng.standard_normal((n, 3, 5, 7)).astype("float32")
        g = rng.uniform(-1.2, 1.2, (n, ho, wo, 2)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape, "g": g.shape}), db=False).run([x, g])[0]
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x, g])[0], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_of_a_symbolic_input_image(tmp_path, rng, mode, padding, align):
    """GridSample over an image of symbolic height and width (the coordinates scale by sizes read
    per call), against the static build of each size: one pixel (reflection's empty span when
    aligned at the corners), sizes that divide no vector, an empty image."""
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    path = save(tmp_path, [node], [vi("x", ["N", 2, "H", "W"]), vi("g", ["N", "Ho", "Wo", 2])], [vi("y", None)], opset=20)
    lib, module = built_once(tmp_path, path)
    for n, h, w, ho, wo in [(2, 5, 7, 4, 6), (1, 1, 1, 3, 2), (1, 1, 19, 2, 17), (2, 0, 3, 2, 2)]:
        x = rng.standard_normal((n, 2, h, w)).astype("float32")
        g = rng.uniform(-1.3, 1.3, (n, ho, wo, 2)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape, "g": g.shape}), db=False).run([x, g])[0]
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x, g])[0], want, rtol=1e-5, atol=1e-5)


def test_split_sizes_must_add_up_to_a_constant_dimension(tmp_path):
    nodes = [helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"])], [vi("a", ["N", 2]), vi("b", ["N", None])],
                [ints("sizes", [2, 3])])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    with pytest.raises(tessera.Error, match="add up to 5"):
        lib.run([np.zeros((1, 4), "float32")])
    assert not lib.symbolic and "split" in lib.symbolic_reason


@pytest.mark.parametrize("k,target", [(3, "llvm"), (11, "llvm"), (3, "opencl")])  # selected one by one, ranked
def test_topk_along_a_row_of_symbolic_length(tmp_path, rng, k, target):
    nodes = [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"])],
                [vi("values", ["N", k]), vi("indices", ["N", k], TensorProto.INT64)], [ints("k", [k])])
    lib, module = built_once(tmp_path, path, target)
    for n, length in [(2, 17), (1, k), (0, 20), (3, 40)]:
        x = rng.permutation(n * length).reshape(n, length).astype("float32")  # no ties
        order = np.argsort(-x, axis=1, kind="stable")[:, :k]
        for run in (lib.run, module.run):
            values, indices = run([x])
            np.testing.assert_array_equal(indices, order)
            np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))
    for run in (lib.run, module.run):
        with pytest.raises(tessera.Error, match=rf"topk \(node 'values'\) takes the {k} best elements along a dimension that must "
                                                rf"hold them: \(L - {k - 1}\) is 0 at N = 2, L = {k - 1}"):
            run([np.zeros((2, k - 1), "float32")])


@pytest.mark.parametrize("keepdims,last,target", [(0, 0, "llvm"), (1, 1, "llvm"), (1, 0, "opencl")])
def test_argmax_and_argmin_of_symbolic_dimensions(tmp_path, keepdims, last, target):
    """Along a symbolic axis and beside one (a token's logits over a batch of symbolic size), ties
    to the first index or, with select_last_index, the last."""
    nodes = [helper.make_node("ArgMax", ["x"], ["best"], axis=1, keepdims=keepdims, select_last_index=last),
             helper.make_node("ArgMin", ["x"], ["least"], axis=0, keepdims=keepdims, select_last_index=last)]
    path = save(tmp_path, nodes, [vi("x", ["N", "V"])],
                [vi("best", None, TensorProto.INT64), vi("least", None, TensorProto.INT64)])
    lib, module = built_once(tmp_path, path, target)
    rng = np.random.default_rng(0)
    for n, v in [(2, 17), (1, 1000), (5, 1), (3, 4)]:
        x = rng.integers(0, 3, (n, v)).astype("float32")  # many ties
        pick = (lambda f, a, axis: a.shape[axis] - 1 - f(np.flip(a, axis), axis)) if last else (lambda f, a, axis: f(a, axis))
        best, least = pick(np.argmax, x, 1), pick(np.argmin, x, 0)
        for run in (lib.run, module.run):
            got_best, got_least = run([x])
            np.testing.assert_array_equal(got_best, best[:, None] if keepdims else best)
            np.testing.assert_array_equal(got_least, least[None, :] if keepdims else least)


@pytest.mark.parametrize("exclusive,reverse,target", [(0, 0, "llvm"), (1, 1, "llvm"), (1, 1, "opencl")])
def test_cumsum_along_a_sequence_of_symbolic_length(tmp_path, rng, exclusive, reverse, target):
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"], TensorProto.INT64)], [vi("y", ["N", "L"], TensorProto.INT64)],
                [ints("axis", 1)])
    lib, module = built_once(tmp_path, path, target)
    for n, length in [(2, 9), (1, 1), (2, 0), (3, 100)]:  # 100: more than one block of the scan
        x = rng.integers(-5, 5, (n, length))
        want = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
        if exclusive:
            want = want - x
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], want)


@pytest.mark.parametrize("mode,target", [("constant", "llvm"), ("edge", "llvm"), ("reflect", "llvm"), ("wrap", "llvm"),
                                         ("reflect", "opencl")])
def test_pad_of_symbolic_dimensions(tmp_path, rng, mode, target):
    nodes = [helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)]
    path = save(tmp_path, nodes, [vi("x", ["N", "H", "W"])], [vi("y", None)],
                [ints("pads", [0, 2, 1, 0, 1, 3]), numpy_helper.from_array(np.array(0.5, "float32"), "value")])
    lib, module = built_once(tmp_path, path, target)
    numpy_mode = mode
    extra = {"constant_values": 0.5} if mode == "constant" else {}
    for shape in [(2, 5, 6), (1, 1, 1), (1, 3, 2), (0, 4, 4)]:
        x = rng.standard_normal(shape).astype("float32")
        if mode == "wrap":  # numpy before 1.26 wraps pads wider than the axis otherwise
            want = x.take(np.arange(-2, shape[1] + 1) % shape[1], 1).take(np.arange(-1, shape[2] + 3) % shape[2], 2)
        else:
            want = np.pad(x, [(0, 0), (2, 1), (1, 3)], mode=numpy_mode, **extra)
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], want)
    if mode != "constant":
        for run in (lib.run, module.run):
            with pytest.raises(tessera.Error, match=r"pad \(node 'y'\) pads by reading elements of a dimension that must have one"):
                run([np.zeros((1, 0, 3), "float32")])


def test_pad_to_a_multiple_by_pads_computed_from_the_sizes(tmp_path, rng):
    """F.pad(x, (0, (8 - L % 8) % 8)).reshape(N, -1, 8).sum(-1) as PyTorch exports it: the pads
    reordered through a [-1, 2] matrix (Reshape, Slice backwards, Transpose), and a reshape that
    needs 8 to divide the padded length."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, "int64")))
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]), c("one", 1), helper.make_node("Gather", ["shape", "one"], ["L"]),
        c("eight", 8), helper.make_node("Mod", ["L", "eight"], ["m"]), helper.make_node("Sub", ["eight", "m"], ["s"]),
        helper.make_node("Mod", ["s", "eight"], ["p"]), c("zero_axis", [0]),
        helper.make_node("Unsqueeze", ["p", "zero_axis"], ["p1"]), c("zeros", [0]),
        helper.make_node("Concat", ["zeros", "p1"], ["last"], axis=0), c("front", [0, 0]),
        helper.make_node("Concat", ["last", "front"], ["flat"], axis=0), c("pairs", [-1, 2]),
        helper.make_node("Reshape", ["flat", "pairs"], ["matrix"]), c("start", [-1]), c("end", [-(2 ** 63)]),
        c("axes", [0]), c("step", [-1]),
        helper.make_node("Slice", ["matrix", "start", "end", "axes", "step"], ["reversed"]),
        helper.make_node("Transpose", ["reversed"], ["columns"], perm=[1, 0]), c("flat_shape", [-1]),
        helper.make_node("Reshape", ["columns", "flat_shape"], ["pads"]),
        helper.make_node("Pad", ["x", "pads"], ["padded"]),
        helper.make_node("Gather", ["shape", "zero_axis"], ["n"]), c("rest", [-1, 8]),
        helper.make_node("Concat", ["n", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["padded", "target"], ["groups"]),
        helper.make_node("ReduceSum", ["groups", "minus_one"], ["y"], keepdims=0),
    ]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"])], [vi("y", ["N", None])], [ints("minus_one", [-1])])
    lib, module = built_once(tmp_path, path)
    for n, length in [(2, 9), (3, 16), (1, 3), (1, 0)]:
        x = rng.standard_normal((n, length)).astype("float32")
        padded = np.pad(x, [(0, 0), (0, (8 - length % 8) % 8)])
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], padded.reshape(n, -1, 8).sum(-1), rtol=1e-6, atol=1e-6)


def test_pads_that_may_crop_depending_on_the_sizes_are_built_per_size(tmp_path, rng):
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, "int64")))
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), c("zero", [0]), c("three", [3]),
             helper.make_node("Gather", ["shape", "zero"], ["n"]), helper.make_node("Sub", ["three", "n"], ["p"]),
             helper.make_node("Concat", ["zero", "p"], ["pads"], axis=0), helper.make_node("Pad", ["x", "pads"], ["y"])]
    lib = tessera.build(tessera.onnx.load(save(tmp_path, nodes, [vi("x", ["N"])], [vi("y", [3])])), db=False)
    for n in [1, 3, 5]:
        x = rng.standard_normal(n).astype("float32")
        np.testing.assert_array_equal(lib.run([x])[0], np.pad(x, (0, 3 - n)) if n <= 3 else x[:3])
    assert not lib.symbolic and "may be negative (a crop)" in lib.symbolic_reason


@pytest.mark.parametrize("mode,target", [("nearest", "llvm"), ("linear", "llvm"), ("linear", "opencl")])
def test_resize_of_a_dynamic_batch(tmp_path, rng, mode, target):
    """Upsampling by 2 (F.interpolate's scales) of (N, C, 5, 6); the batch's scale of 1 keeps it
    symbolic. An axis of symbolic size resized by any other scale (0.3, as float32 10066330 / 2^25)
    has the size floor(H * scale) as ONNX's reference computes it in float64, at every H."""
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)]
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], "float32"), "scales")
    path = save(tmp_path, nodes, [vi("x", ["N", 3, 5, 6])], [vi("y", ["N", 3, 10, 12])], [scales])
    lib, module = built_once(tmp_path, path, target)
    static = {n: tessera.build(tessera.onnx.load(path, shapes={"x": (n, 3, 5, 6)}), db=False) for n in [1, 2]}
    for n in [2, 1, 0, 7]:
        x = rng.standard_normal((n, 3, 5, 6)).astype("float32")
        want = np.concatenate([static[1].run([x[i:i + 1]])[0] for i in range(n)]) if n else np.zeros((0, 3, 10, 12))
        if mode == "nearest":
            np.testing.assert_array_equal(want, x.repeat(2, 2).repeat(2, 3))
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], want, rtol=1e-6, atol=1e-6)
    odd = numpy_helper.from_array(np.array([1, 1, 0.3, 2], "float32"), "scales")
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", 6])], [vi("y", None)], [odd])
    lib, module = built_once(tmp_path, path, target)
    for h in [10, 7, 1, 3, 4, 100, 1234]:
        x = rng.standard_normal((1, 3, h, 6)).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False, target=target).run([x])[0]
        assert want.shape == (1, 3, int(np.floor(h * np.float64(np.float32(0.3)))), 12)
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], want)


def test_a_pytorch_decoder_block_exported_with_dynamic_axes_builds_once_for_every_size(tmp_path):
    """As PyTorch exports a GPT-style block (opset 17, dynamic batch and length): positions by
    arange, the projection split into queries, keys and values, a causal mask by triu of a
    (L, L) ones, the next-token candidates by topk, and the sequence padded to a multiple of 8 by
    F.pad. One build serves every size, as the library and from its module, and matches PyTorch."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = torch.nn.Embedding(50, 16), torch.nn.Embedding(64, 16)
            self.qkv, self.out = torch.nn.Linear(16, 48), torch.nn.Linear(16, 50)

        def forward(self, ids):
            n, length = ids.shape
            h = self.tokens(ids) + self.positions(torch.arange(length))[None]
            q, k, v = (t.view(n, length, 2, 8).transpose(1, 2) for t in self.qkv(h).split(16, dim=-1))
            mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
            a = (q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
            logits = self.out((a @ v).transpose(1, 2).reshape(n, length, 16))
            padded = torch.nn.functional.pad(h, (0, 0, 0, (8 - length % 8) % 8))
            return logits.topk(3, dim=-1)[1], padded.reshape(n, -1, 8, 16).sum(2)

    torch.manual_seed(0)
    model = Block().eval()
    path = str(tmp_path / "block.onnx")
    torch.onnx.export(model, (tensor(np.zeros((2, 7), "int64")),), path, input_names=["ids"],
                      dynamic_axes={"ids": {0: "N", 1: "L"}}, opset_version=17)
    lib, module = built_once(tmp_path, path)
    rng = np.random.default_rng(0)
    for n, length in [(2, 7), (1, 1), (3, 20), (1, 64)]:
        ids = rng.integers(0, 50, (n, length)).astype("int64")
        with torch.no_grad():
            want = [array(t) for t in model(tensor(ids))]
        for run in (lib.run, module.run):
            top, sums = run([ids])
            np.testing.assert_array_equal(top, want[0])
            np.testing.assert_allclose(sums, want[1], rtol=1e-5, atol=1e-5)


def test_a_pytorch_decoder_step_with_a_cache_of_past_tokens_builds_once_for_every_size(tmp_path):
    """One decoding step as PyTorch exports it for generation: L new tokens after a cache of P past
    keys and values (dynamic N, L, P), positions arange(P, P + L), the cache extended by Concat, and
    the causal mask triu(ones(L, P + L), P + 1), whose diagonal depends on the sizes. One build
    serves a prompt (P = 0) and every step after it."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = torch.nn.Embedding(50, 16), torch.nn.Embedding(128, 16)
            self.qkv, self.out = torch.nn.Linear(16, 48), torch.nn.Linear(16, 50)

        def forward(self, ids, past_k, past_v):
            n, length, past = ids.shape[0], ids.shape[1], past_k.shape[2]
            h = self.tokens(ids) + self.positions(torch.arange(past, past + length))[None]
            q, k, v = (t.view(n, length, 2, 8).transpose(1, 2) for t in self.qkv(h).split(16, -1))
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            mask = torch.triu(torch.ones(length, past + length, dtype=torch.bool), diagonal=past + 1)
            a = (q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
            return self.out((a @ v).transpose(1, 2).reshape(n, length, 16)), k, v

    torch.manual_seed(0)
    model = Step().eval()
    path = str(tmp_path / "step.onnx")
    axes = {"ids": {0: "N", 1: "L"}, "past_k": {0: "N", 2: "P"}, "past_v": {0: "N", 2: "P"}}
    torch.onnx.export(model, (tensor(np.zeros((1, 3), "int64")), tensor(np.zeros((1, 2, 4, 8), "float32")),
                              tensor(np.zeros((1, 2, 4, 8), "float32"))),
                      path, input_names=list(axes), dynamic_axes=axes, opset_version=17)
    lib, module = built_once(tmp_path, path)
    rng = np.random.default_rng(0)
    for n, length, past in [(1, 5, 0), (1, 1, 5), (2, 3, 9), (1, 1, 40)]:
        ins = [rng.integers(0, 50, (n, length)).astype("int64"), rng.standard_normal((n, 2, past, 8)).astype("float32"),
               rng.standard_normal((n, 2, past, 8)).astype("float32")]
        with torch.no_grad():
            want = [array(t) for t in model(*[tensor(a) for a in ins])]
        for run in (lib.run, module.run):
            for got, w in zip(run(ins), want):
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


def test_a_crop_to_another_tensors_size_builds_once(tmp_path, rng):
    """An FPN's upsampled map cropped to its skip connection's size (x[:, :, :a.shape[2], :a.shape[3]]
    in PyTorch: Slice to ends computed from a Shape) before they add: the crop's length is the
    skip's, at every image size, odd ones included."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             helper.make_node("Resize", ["p", "", "scales"], ["up"], mode="nearest"),
             helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "two", "four"], ["hw"]),  # [H, W]
             helper.make_node("Slice", ["up", "zeros", "hw", "axes"], ["crop"], name="crop"),
             helper.make_node("Add", ["x", "crop"], ["y"])]
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], "float32"), "scales"), ints("two", [2]), ints("four", [4]),
             ints("zeros", [0, 0]), ints("axes", [2, 3])]
    path = save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)], inits)
    lib, module = built_once(tmp_path, path)
    for n, h, w in [(1, 8, 8), (2, 7, 9), (1, 1, 1), (1, 2, 5)]:
        x = rng.standard_normal((n, 3, h, w)).astype("float32")
        padded = np.pad(x, [(0, 0), (0, 0), (0, h % 2), (0, w % 2)], constant_values=-np.inf)
        pooled = padded.reshape(n, 3, (h + 1) // 2, 2, (w + 1) // 2, 2).max(axis=(3, 5))
        want = x + pooled.repeat(2, 2).repeat(2, 3)[:, :, :h, :w]
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], want)


def test_a_causal_mask_buffer_cut_to_the_sequence_builds_once(tmp_path):
    """GPT-2's attention as PyTorch exports it: a constant lower-triangular buffer of 64 positions
    cut to the keys and queries (bias[:, :, k - q:k, :k], ends of symbolic value), and the last q
    rows of the keys (kv[:, -q:], all of them at q = 0). One build serves every length that fits
    the buffer; past it, the cut (which ONNX would clamp) is an error naming the node."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(64, 64)).view(1, 1, 64, 64))

        def forward(self, x, past):
            kv = torch.cat([past, x], 1)
            q, k = x.shape[1], kv.shape[1]
            mask = self.bias[:, :, k - q:k, :k]
            w = torch.where(mask.bool(), x.unsqueeze(1) @ kv.unsqueeze(1).transpose(-1, -2) / 4, torch.tensor(-1e4))
            return (w.softmax(-1) @ kv.unsqueeze(1)).squeeze(1), kv[:, -q:]

    model = Attention().eval()
    path = str(tmp_path / "attention.onnx")
    torch.onnx.export(model, (tensor(np.zeros((1, 3, 16), "float32")), tensor(np.zeros((1, 5, 16), "float32"))), path,
                      input_names=["x", "past"], dynamic_axes={"x": {0: "N", 1: "L"}, "past": {0: "N", 1: "P"}},
                      opset_version=17)
    lib, module = built_once(tmp_path, path)
    rng = np.random.default_rng(0)
    for n, length, past in [(1, 3, 5), (2, 1, 0), (1, 7, 57), (3, 0, 4)]:
        ins = [rng.standard_normal((n, length, 16)).astype("float32"),
               rng.standard_normal((n, past, 16)).astype("float32")]
        with torch.no_grad():
            want = [array(t) for t in model(*[tensor(a) for a in ins])]
        for run in (lib.run, module.run):
            for got, w in zip(run(ins), want):
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
    for run in (lib.run, module.run):
        with pytest.raises(tessera.Error, match="Slice.*must lie within"):
            run([np.zeros((1, 4, 16), "float32"), np.zeros((1, 61, 16), "float32")])


def test_position_ids_cut_to_the_sequence_build_once(tmp_path):
    """BERT's embeddings as PyTorch exports them: constant int64 buffers of 64 position and token
    type ids cut to the sequence's length (position_ids[:, :L]), the latter expanded to the
    batch. A slice of integers at positions the sizes give is data, not a list of dimensions (the
    model was built per size: "ends [L] depends on symbolic sizes")."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor

    class Embeddings(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("position_ids", torch.arange(64).expand((1, -1)))
            self.register_buffer("token_type_ids", torch.zeros((1, 64), dtype=torch.long))
            self.words, self.positions, self.types = (torch.nn.Embedding(n, 8) for n in (100, 64, 2))

        def forward(self, ids):
            n, length = ids.shape
            types = self.token_type_ids[:, :length].expand(n, length)
            return self.words(ids) + self.positions(self.position_ids[:, :length]) + self.types(types)

    model = Embeddings().eval()
    path = str(tmp_path / "embeddings.onnx")
    torch.onnx.export(model, (tensor(np.zeros((2, 8), "int64")),), path, input_names=["ids"],
                      dynamic_axes={"ids": {0: "N", 1: "L"}}, opset_version=17)
    lib, module = built_once(tmp_path, path)
    rng = np.random.default_rng(0)
    for n, length in [(1, 7), (3, 64), (2, 1), (1, 0)]:
        ids = rng.integers(0, 100, (n, length)).astype("int64")
        with torch.no_grad():
            want = array(model(tensor(ids)))
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([ids])[0], want, rtol=1e-6, atol=1e-6)
    for run in (lib.run, module.run):
        with pytest.raises(tessera.Error, match="Slice.*must lie within"):
            run([np.zeros((1, 65), "int64")])


def test_the_last_dimension_of_a_shape_squeezed_is_a_size(tmp_path, rng):
    """LLaMA's and GPT-2's masks as PyTorch exports them: the last entry of a shape, sliced with
    [-1:] (its end INT64_MAX, which a double rounds past the int64 range) and squeezed to a scalar.
    It was an empty slice ("squeeze: dimension 0 of (0,) is 0, not 1")."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
             helper.make_node("Shape", ["zeros"], ["again"]),
             helper.make_node("Slice", ["again", "minus_one", "int64_max", "zero"], ["last"]),
             helper.make_node("Squeeze", ["last", "zero"], ["length"]),
             helper.make_node("Unsqueeze", ["length", "zero"], ["target"]),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", [1, "L"])], [vi("y", None)],
                [ints("minus_one", [-1]), ints("int64_max", [2**63 - 1]), ints("zero", [0])])
    lib, module = built_once(tmp_path, path)
    for length in [5, 1, 0]:
        x = rng.standard_normal((1, length)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_array_equal(run([x])[0], x[0])


def test_a_product_with_a_constant_broadcast_to_the_batch_builds_once(tmp_path, rng):
    """DeBERTa's relative-position attention as PyTorch exports it: a constant expanded to the
    batch (of symbolic shape, computed at each call) is a product's right operand. It is no weight
    to pack ahead ("dimension 0 of (N*4, 16, 16) is symbolic where a constant is needed")."""
    w = rng.standard_normal((1, 8, 8)).astype("float32")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "zero", "one"], ["n"]),
             helper.make_node("Concat", ["n", "eight_eight"], ["target"], axis=0),
             helper.make_node("Expand", ["w", "target"], ["wide"]),
             helper.make_node("MatMul", ["x", "wide"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 8])], [vi("y", None)],
                [numpy_helper.from_array(w, "w"), ints("zero", [0]), ints("one", [1]), ints("eight_eight", [8, 8])])
    lib, module = built_once(tmp_path, path)
    for n, length in [(2, 5), (1, 1), (3, 0)]:
        x = rng.standard_normal((n, length, 8)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], x @ w, rtol=1e-5, atol=1e-5)


def test_a_reshape_indexes_the_dimensions_both_shapes_end_with_directly(tmp_path, rng):
    """OPT's attention as PyTorch exports it: scores of (N, 4, L, L) viewed as (N*4, L, L) and back,
    a mask of (N, 1, L, L) added. The trailing L x L of both shapes are indexed directly: no lane of
    a vector divides its position by L (which took half the model's time at 1x128)."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "two", "four"], ["last_two"]),
             helper.make_node("Concat", ["minus_one", "last_two"], ["flat_shape"], axis=0),
             helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
             helper.make_node("Exp", ["flat"], ["e"]),
             helper.make_node("Reshape", ["e", "shape"], ["back"]),
             helper.make_node("Add", ["back", "mask"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", 4, "L", "L"]), vi("mask", ["N", 1, "L", "L"])], [vi("y", None)],
                [ints("two", [2]), ints("four", [4]), ints("minus_one", [-1])])
    lib, module = built_once(tmp_path, path)
    lowered = "".join(k["lowered"] for k in lib.kernels)
    assert "// x16(L)" not in lowered and "% x16(L)" not in lowered, lowered
    for n, length in [(1, 37), (2, 1), (3, 0), (1, 16)]:
        x = rng.standard_normal((n, 4, length, length)).astype("float32")
        mask = rng.standard_normal((n, 1, length, length)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x, mask])[0], np.exp(x) + mask, rtol=1e-6, atol=1e-6)


def test_an_audio_feature_extractor_shortening_the_sequence_builds_once(tmp_path):
    """wav2vec 2.0's front as PyTorch exports it at a dynamic length: strided convolutions that
    shorten T to T // 10 - 1 (empty at the default size hint of 16, where no tile is chosen from
    it), group norm, GELU, a grouped positional convolution whose last frame is cropped (x[:, :, :-1])
    and a layer norm over rows whose count is that expression. Against PyTorch at 3 lengths."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor
    nn, F = torch.nn, torch.nn.functional

    class Front(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.gn, self.c2 = nn.Conv1d(1, 16, 10, 5), nn.GroupNorm(16, 16), nn.Conv1d(16, 16, 3, 2)
            self.pos, self.ln = nn.Conv1d(16, 16, 8, padding=4, groups=4), nn.LayerNorm(16)

        def forward(self, x):
            h = F.gelu(self.c2(F.gelu(self.gn(self.c1(x.unsqueeze(1))))))
            return self.ln((h + F.gelu(self.pos(h)[:, :, :-1])).transpose(1, 2))

    torch.manual_seed(0)
    model = Front().eval()
    path = str(tmp_path / "front.onnx")
    torch.onnx.export(model, tensor(np.zeros((2, 400), "float32")), path, input_names=["x"],
                      dynamic_axes={"x": {0: "N", 1: "T"}}, opset_version=17)
    lib, module = built_once(tmp_path, path)
    rng = np.random.default_rng(0)
    for shape in [(2, 400), (1, 1003), (3, 57)]:
        x = rng.standard_normal(shape).astype("float32")
        with torch.no_grad():
            want = array(model(tensor(x)))
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], want, rtol=1e-4, atol=1e-4)


def test_the_last_rows_of_the_cached_and_new_positions_broadcast_against_the_new_ones(tmp_path, rng):
    """T5's decoder with a key cache (optimum's merged decoder): the position bias of the P cached
    and L new positions keeps its last L rows (x[:, -L:]) before it is added to the scores of the L
    new queries. At L = 0 that slice is the whole axis, so the two are equal only where L >= 1:
    one build takes them as equal and checks L >= 1 at each call, naming the node."""
    nodes = [helper.make_node("Concat", ["past", "x"], ["kv"], axis=1),
             helper.make_node("Transpose", ["kv"], ["kvt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["kv", "kvt"], ["bias_all"]),
             helper.make_node("Shape", ["x"], ["sx"]),
             helper.make_node("Gather", ["sx", "one"], ["l"]),
             helper.make_node("Neg", ["l"], ["minus_l"]),
             helper.make_node("Slice", ["bias_all", "minus_l", "end", "one"], ["bias"]),
             helper.make_node("MatMul", ["x", "kvt"], ["scores"]),
             helper.make_node("Add", ["scores", "bias"], ["y"], name="add_bias")]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 4]), vi("past", ["N", "P", 4])], [vi("y", None)],
                [ints("one", [1]), ints("end", [2**63 - 1])])
    lib, module = built_once(tmp_path, path)
    for n, length, past in [(2, 3, 5), (1, 1, 0), (3, 1, 17), (1, 4, 1)]:
        x, p = (rng.standard_normal(s).astype("float32") for s in [(n, length, 4), (n, past, 4)])
        kv = np.concatenate([p, x], 1)
        want = x @ kv.transpose(0, 2, 1) + (kv @ kv.transpose(0, 2, 1))[:, -length:]
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x, p])[0], want, rtol=1e-5, atol=1e-5)
    ins = [np.zeros((1, 0, 4), "float32"), np.zeros((1, 3, 4), "float32")]
    for run in (lib.run, module.run):
        with pytest.raises(tessera.Error, match="add_bias.*equal only where L is at least 1: L is 0"):
            run(ins)


def test_dimensions_named_apart_that_broadcast_together_are_one(tmp_path, rng):
    """torch.onnx.export with dynamic_axes as lists names each input's dimensions apart
    (ids_dynamic_axes_1, mask_dynamic_axes_1); a broadcast of one against the other (the attention
    mask added to the scores) takes them as one variable, as ONNX Runtime's symbolic shape
    inference merges them: one build for the calls that give them equal. In this process a call
    where one is 1 (a broadcast) is built for its sizes; a module names the input instead."""
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "xt"], ["scores"]),
             helper.make_node("Unsqueeze", ["mask", "one"], ["m"]),
             helper.make_node("Add", ["scores", "m"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["x_axis_0", "x_axis_1", 4]), vi("mask", ["mask_axis_0", "mask_axis_1"])],
                [vi("y", None)], [ints("one", [1])])
    lib, module = built_once(tmp_path, path)
    for n, length in [(2, 5), (1, 1), (3, 17)]:
        x = rng.standard_normal((n, length, 4)).astype("float32")
        mask = rng.standard_normal((n, length)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x, mask])[0], x @ x.transpose(0, 2, 1) + mask[:, None, :], rtol=1e-5,
                                       atol=1e-5)
    x, mask = rng.standard_normal((2, 5, 4)).astype("float32"), rng.standard_normal((2, 1)).astype("float32")
    np.testing.assert_allclose(lib.run([x, mask])[0], x @ x.transpose(0, 2, 1) + mask[:, None, :], rtol=1e-5, atol=1e-5)
    assert lib.served_by([x.shape, mask.shape]).startswith("built for")
    with pytest.raises(tessera.Error, match="input 'mask'.*dimension 1 must be x_axis_1 = 5"):
        module.run([x, mask])


def test_a_mask_broadcast_against_the_cached_and_new_keys_is_their_sum(tmp_path, rng):
    """A decoder step with a key cache as PyTorch exports GPT-2 and LLaMA with past_key_values: the
    attention mask's S positions broadcast against the P cached and L new keys, so S is declared
    P + L and checked at each call (the model was built per size, "P + L vs S"). In this process a
    mask of one position (a broadcast) is built for its sizes; a module names the input."""
    nodes = [helper.make_node("Concat", ["past", "x"], ["kv"], axis=1),
             helper.make_node("Transpose", ["kv"], ["kvt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["x", "kvt"], ["scores"]),
             helper.make_node("Unsqueeze", ["mask", "one"], ["m"]),
             helper.make_node("Add", ["scores", "m"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 4]), vi("past", ["N", "P", 4]), vi("mask", ["N", "S"])],
                [vi("y", None)], [ints("one", [1])])
    lib, module = built_once(tmp_path, path)

    def reference(x, past, mask):
        return x @ np.concatenate([past, x], 1).transpose(0, 2, 1) + mask[:, None, :]
    sizes = [(2, 3, 5, 8), (1, 1, 0, 1), (3, 4, 17, 21), (1, 0, 3, 3), (2, 3, 5, 1)]
    for n, length, past, keys in sizes:
        ins = [rng.standard_normal(s).astype("float32") for s in [(n, length, 4), (n, past, 4), (n, keys)]]
        runs = (lib.run, module.run) if keys == past + length else (lib.run,)
        for run in runs:
            np.testing.assert_allclose(run(ins)[0], reference(*ins), rtol=1e-5, atol=1e-5)
    ins = [np.zeros(s, "float32") for s in [(2, 3, 4), (2, 5, 4), (2, 1)]]
    assert lib.served_by([a.shape for a in ins]).startswith("built for")
    with pytest.raises(tessera.Error, match=r"input 'mask'.*dimension 1 must be \(P \+ L\) = 8 .*got 1"):
        module.run(ins)
    ins[2] = np.zeros((2, 7), "float32")
    for run in (lib.run, module.run):
        with pytest.raises(tessera.Error, match=r"dimension 1 must be \(P \+ L\) = 8|broadcast"):
            run(ins)

"""Values the data gives where an operator needs a constant or a size (issue 25, item 4): a
stage that takes them as sizes (values_as_shape), steps the host computes while the model runs
(a reshape, squeeze, slice, expand or split of targets the data gives, TopK's k, Range of floats,
reductions and running sums along axes the data gives, Dropout's ratio), or a stage built for each
value met; in this process and from exported modules (runtime/program_builtins.h)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from program_testing import B, F, I64, build, const, save, vi  # noqa: F401 (build: a fixture)


def resize10_by_input_scales(tmp_path):
    return save(tmp_path, [helper.make_node("Resize", ["x", "scales"], ["c"], name="c"),
                           helper.make_node("Neg", ["c"], ["z"])],
                [vi("x", [1, 1, 2, 3]), vi("scales", [4])], [vi("z", [1, 1, None, None])], opset=10)


def test_an_input_that_sets_a_value_the_stage_needs_as_a_constant_is_taken_at_run_time(tmp_path):
    """Resize 10's scales from a graph input (floats, not sizes): built for each value met (its
    stage binds it)."""
    lib = tessera.build(tessera.onnx.load(resize10_by_input_scales(tmp_path)))
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    for scales in [[1, 1, 2, 2], [1, 1, 1, 3], [1, 1, 2, 2]]:
        want = x.repeat(scales[2], axis=2).repeat(scales[3], axis=3)
        np.testing.assert_array_equal(lib.run([x, np.array(scales, np.float32)])[0], -want)
    ((_, signatures),) = lib.builds
    assert sorted(signatures) == ["float32(1, 1, 2, 3), float32(4,) = 1 1 1 3", "float32(1, 1, 2, 3), float32(4,) = 1 1 2 2"]


def one_hot(i, depth):
    return (i[..., None] == np.arange(depth)).astype(np.float32)


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
@pytest.mark.parametrize("dtype", [I64, TensorProto.FLOAT])
def test_one_hot_of_a_depth_the_data_gives_takes_it_as_a_size(tmp_path, exported, dtype):
    """OneHot's depth from an input (a float one cast to int64, as ONNX says) is a size of the
    stage: one build for every depth and every shape of the indices, which a module holds."""
    path = save(tmp_path, [helper.make_node("OneHot", ["i", "depth", "values"], ["c"], name="c"),
                           helper.make_node("Neg", ["c"], ["z"])],
                [vi("i", ["N", "L"], I64), vi("depth", [], dtype)], [vi("z", ["N", "L", None])],
                [const("values", np.array([0, 1], np.float32))])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    depth_type = np.int64 if dtype == I64 else np.float32
    for shape, depth in [((3, 4), 5), ((3, 4), 6), ((1, 7), 1), ((2, 0), 3), ((2, 2), 0)]:
        i = (np.arange(np.prod(shape), dtype=np.int64).reshape(shape) % 7) - 2
        want = -one_hot(np.where(i < 0, i + depth, i), depth)
        np.testing.assert_array_equal(lib.run([i, np.array(depth, depth_type)])[0], want)
    if not exported:
        assert [signatures for _, signatures in lib.builds] == [["every size"]] * len(lib.builds)


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_a_reshape_to_a_target_the_data_gives_views_it_while_the_model_runs(tmp_path, exported):
    """A Reshape whose target is an input is a step of the program (a view of its input at the
    target, 0 and -1 as ONNX says), so the stage after it is built once for every shape and a
    module holds the whole model. A target that does not fit is an error naming the node."""
    path = save(tmp_path, [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r"),
                           helper.make_node("Relu", ["y"], ["z"])],
                [vi("x", [2, 6]), vi("shape", [2], I64)], [vi("z", [None, None])])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
    for target, shape in [((3, 4), (3, 4)), ((12, 1), (12, 1)), ((-1, 3), (4, 3)), ((0, -1), (2, 6)), ((1, 12), (1, 12))]:
        np.testing.assert_array_equal(lib.run([x, np.array(target, np.int64)])[0], np.maximum(x.reshape(shape), 0))
    if not exported:
        assert [signatures for _, signatures in lib.builds] == [["every size"]]
    for target, message in [((5, 5), r"cannot reshape \(2, 6\) \(12 elements\) to \(5, 5\) \(25\)"),
                            ((-1, -1), r"more than one -1"), ((-1, 5), r"cannot infer the -1"),
                            ((-2, 6), r"the invalid dimension -2")]:
        with pytest.raises(tessera.Error, match=r"Reshape \(node 'r'\): .*" + message):
            lib.run([x, np.array(target, np.int64)])
    with pytest.raises(tessera.Error, match=r"input 'shape' \(#1\): expected 1 dimensions \(2,\), got 2"):
        lib.run([x, np.array([[3, 4]], np.int64)])


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_squeeze_and_unsqueeze_axes_the_data_gives_view_it_while_the_model_runs(tmp_path, exported):
    """Squeeze's and Unsqueeze's axes as inputs (opset 13): steps of the program as Reshape's target."""
    path = save(tmp_path, [helper.make_node("Unsqueeze", ["x", "ones"], ["u"], name="u"),
                           helper.make_node("Squeeze", ["u", "drop"], ["y"], name="s"),
                           helper.make_node("Neg", ["y"], ["z"])],
                [vi("x", [3, 1, 4]), vi("ones", [2], I64), vi("drop", [1], I64)], [vi("z", None)])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    x = np.arange(12, dtype=np.float32).reshape(3, 1, 4)
    for ones, drop, shape in [((0, -1), (2,), (1, 3, 4, 1)), ((4, 1), (-3,), (3, 1, 4, 1)), ((0, 1), (0,), (1, 3, 1, 4))]:
        np.testing.assert_array_equal(lib.run([x, np.array(ones, np.int64), np.array(drop, np.int64)])[0],
                                      -x.reshape(shape))
    with pytest.raises(tessera.Error, match=r"Squeeze \(node 's'\): .*cannot squeeze axis 0 of \(3, 1, 1, 4, 1\): its size "
                                            r"is 3, not 1"):
        lib.run([x, np.array([1, 4], np.int64), np.array([0], np.int64)])
    with pytest.raises(tessera.Error, match=r"Unsqueeze \(node 'u'\): .*the axes \(0, 0\) name an axis twice"):
        lib.run([x, np.array([0, -5], np.int64), np.array([0], np.int64)])


def test_a_model_of_symbolic_sizes_whose_inputs_set_shapes_runs_as_a_program(tmp_path):
    """A dynamic batch and a Reshape target, a Slice's bounds and a TopK's k given as inputs: no graph
    of any sizes computes it (each size still needs the values), so it is a program, built once for
    every size and value, and a module holds it."""
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "target"], ["y"]),
                           helper.make_node("Slice", ["y", "start", "end"], ["s"]),
                           helper.make_node("TopK", ["x", "k"], ["v", "i"])],
                [vi("x", ["N", 6]), vi("target", [2], I64), vi("start", [1], I64), vi("end", [1], I64),
                 vi("k", [1], I64)], [vi("s", None), vi("v", None)])
    lib = tessera.build(tessera.onnx.load(path))
    assert isinstance(lib, tessera.ProgramLibrary)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    rng = np.random.default_rng(0)
    for n, target, start, end, k in [(2, (3, -1), 1, 3, 2), (5, (-1, 2), -4, 100, 6), (1, (0, 6), 0, 1, 0)]:
        x = rng.permutation(n * 6).reshape(n, 6).astype(np.float32) - 5
        feed = [x] + [np.array(v, np.int64) for v in (target, [start], [end], [k])]
        y = np.maximum(x, 0).reshape([n if t == 0 else t for t in target])
        for run in (lib.run, module.run):
            s, v = run(feed)
            np.testing.assert_array_equal(s, y[start:end])
            np.testing.assert_array_equal(v, -np.sort(-x, axis=1)[:, :k])
    assert [signatures for _, signatures in lib.builds] == [["every size"]]  # the Relu; the rest are steps


def test_reshape_steps_keep_allowzero(tmp_path):
    """allowzero=1 (opset 14): a 0 in the target is a 0, and a target with both 0 and -1 is refused."""
    path = save(tmp_path, [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r", allowzero=1)],
                [vi("x", [0, 3]), vi("shape", [2], I64)], [vi("y", [None, None])], opset=14)
    lib = tessera.build(tessera.onnx.load(path))
    x = np.zeros((0, 3), np.float32)
    assert lib.run([x, np.array([3, 0], np.int64)])[0].shape == (3, 0)
    with pytest.raises(tessera.Error, match=r"Reshape \(node 'r'\): .*with allowzero=1 the shape cannot hold both 0 and -1"):
        lib.run([x, np.array([0, -1], np.int64)])


def test_a_program_whose_stage_needs_a_value_it_computes_is_not_exported(tmp_path):
    """Resize 10 by scales from an input runs in this process (built for each value it meets), but
    no module can hold a build for every value: export names the step, the node and why."""
    lib = tessera.build(tessera.onnx.load(resize10_by_input_scales(tmp_path)))
    with pytest.raises(tessera.Error, match=r"export: the nodes 'c' to 'z' \(2\) cannot be built for every size of "
                                            r"its inputs \(x: float32\(1, 1, 2, 3\), scales: float32\(4,\)\): the stage "
                                            r"needs the values of 'scales', float32\(4,\), which only an integer"):
        lib.export(str(tmp_path / "m.so"))
    assert not (tmp_path / "m.so").exists()
    x = np.ones((1, 1, 2, 3), np.float32)
    np.testing.assert_array_equal(lib.run([x, np.array([1, 1, 2, 1], np.float32)])[0], -np.ones((1, 1, 4, 3)))


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_topk_of_a_k_the_data_gives_runs_on_the_host(tmp_path, exported):
    """TopK's k from an input: a step of the program (sorted, ties by the lower index, NaN last), so
    a module holds the model and no k is compiled for."""
    path = save(tmp_path, [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="t", axis=0, largest=0),
                           helper.make_node("Neg", ["v"], ["z"])],
                [vi("x", [5, 2]), vi("k", [1], I64)], [vi("z", [None, 2]), vi("i", [None, 2], I64)])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    x = np.array([[3, np.nan], [1, 2], [3, 0], [np.nan, 2], [-1, 5]], np.float32)
    for k in [0, 2, 5]:
        z, i = lib.run([x, np.array([k], np.int64)])
        expected = np.array([[4, 2], [1, 1], [0, 3], [2, 4], [3, 0]])[:k]  # ascending, ties lower first, NaN last
        np.testing.assert_array_equal(i, expected)
        np.testing.assert_array_equal(z, -np.take_along_axis(x, expected, 0))
    with pytest.raises(tessera.Error, match=r"TopK \(node 't'\): .*k \(6\) must be in \[0, 5\], the length of axis 0"):
        lib.run([x, np.array([6], np.int64)])


def test_dropout_given_its_ratio_and_training_mode_at_run_time(tmp_path, rng, build):
    """Dropout whose ratio and training_mode are inputs (a model exported for training and
    inference alike): a step passes the data and a mask of every element through where nothing is
    dropped (inference, or a ratio of 0), between compiled stages of symbolic sizes; training with
    a nonzero ratio (dropping at random) is an error naming the node."""
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["r"]),
                           helper.make_node("Dropout", ["r", "ratio", "training"], ["d", "mask"], name="drop"),
                           helper.make_node("Neg", ["d"], ["y"])],
                [vi("x", ["N", 3]), vi("ratio", [], F), vi("training", [], B)], [vi("y", None), vi("mask", None, B)],
                opset=13)
    lib = build(path)
    for n, ratio, training in [(4, 0.3, False), (1, 0.0, True), (0, 0.5, False)]:
        x = rng.standard_normal((n, 3)).astype("float32")
        y, mask = lib.run([x, np.float32(ratio), np.bool_(training)])
        np.testing.assert_array_equal(y, -np.maximum(x, 0))
        assert mask.dtype == np.bool_ and mask.shape == (n, 3) and mask.all()
    with pytest.raises(tessera.Error, match=r"Dropout \(node 'drop'\).*training mode with the nonzero ratio 0.25"):
        lib.run([x, np.float32(0.25), np.bool_(True)])


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_a_slice_whose_bounds_the_data_gives_copies_on_the_host(tmp_path, exported):
    """Slice's starts, ends, axes and steps from inputs: a step of the program (ONNX's clamping,
    negative positions and steps), the stage after it built for every shape, so a module holds it."""
    path = save(tmp_path, [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="s"),
                           helper.make_node("Neg", ["y"], ["z"])],
                [vi("x", [4, 6]), vi("starts", [2], I64), vi("ends", [2], I64), vi("axes", [2], I64),
                 vi("steps", [2], I64)], [vi("z", [None, None])])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    big = np.iinfo(np.int64).max
    cases = [((1, 0), (3, 6), (0, 1), (1, 2), x[1:3, 0:6:2]),
             ((-1, 5), (-big, -100), (0, -1), (-1, -2), x[::-1, 5::-2]),
             ((0, 7), (big, 9), (1, 0), (1, 1), x[7:9, 0:]),  # a start past the end: none
             ((2, 2), (2, 4), (0, 1), (1, 1), x[2:2, 2:4])]
    for starts, ends, axes, steps, expected in cases:
        got = lib.run([x] + [np.array(v, np.int64) for v in (starts, ends, axes, steps)])[0]
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, -expected)
    with pytest.raises(tessera.Error, match=r"Slice \(node 's'\): .*the step of axis 1 is 0"):
        lib.run([x] + [np.array(v, np.int64) for v in ((0, 0), (1, 1), (0, 1), (1, 0))])
    with pytest.raises(tessera.Error, match=r"Slice \(node 's'\): .*axis 1 is sliced twice"):
        lib.run([x] + [np.array(v, np.int64) for v in ((0, 0), (1, 1), (1, -1), (1, 1))])


@pytest.mark.parametrize("dtype, elem", [(np.float32, F), (np.int64, I64), (np.bool_, B)], ids=["float32", "int64", "bool"])
@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_an_expand_to_a_target_the_data_gives_copies_on_the_host(tmp_path, exported, dtype, elem):
    """Expand's target from an input: a step of the program (the two shapes broadcast both ways, as
    ONNX says), the stage after it built for every shape, so a module holds it; a batch of symbolic
    size, a target longer than the input's rank, 1s that keep the input's size, empty results, and
    a target that does not broadcast, named."""
    path = save(tmp_path, [helper.make_node("Expand", ["x", "shape"], ["y"], name="e"),
                           helper.make_node("Identity", ["y"], ["i"]),
                           helper.make_node("Concat", ["i", "y"], ["z"], axis=-1)],
                [vi("x", ["N", 1, 3], elem), vi("shape", [4], I64)], [vi("z", None, elem)])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    for n, target in [(2, (5, 2, 4, 3)), (1, (1, 1, 1, 1)), (3, (1, 3, 1, 1)), (1, (2, 7, 1, 3)), (4, (1, 1, 0, 1)),
                      (0, (2, 1, 1, 1))]:
        x = (np.arange(n * 3).reshape(n, 1, 3) % 3).astype(dtype)
        y = x * np.ones(target, dtype)
        got = lib.run([x, np.array(target, np.int64)])[0]
        assert got.dtype == y.dtype and got.shape == y.shape[:-1] + (2 * y.shape[-1],)
        np.testing.assert_array_equal(got, np.concatenate([y, y], axis=-1))
    if not exported:
        assert [signatures for _, signatures in lib.builds] == [["every size"]]
    x = np.zeros((2, 1, 3), dtype)
    with pytest.raises(tessera.Error, match=r"Expand \(node 'e'\): .*the input of shape \(2, 1, 3\) does not broadcast to "
                                            r"the target shape \(1, 2, 1, 5\) \(dimension 3 of the result: 3 against 5\)"):
        lib.run([x, np.array([1, 2, 1, 5], np.int64)])
    with pytest.raises(tessera.Error, match=r"Expand \(node 'e'\): .*the target shape \(1, 1, -1, 3\) has a negative"):
        lib.run([x, np.array([1, 1, -1, 3], np.int64)])


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_a_split_whose_lengths_the_data_gives_copies_on_the_host(tmp_path, exported):
    """Split's lengths from an input (opset 13): a step of the program, each piece's length a
    dimension of its own for the stages after it, so a module holds it; empty pieces, an axis
    counted from the back, and lengths that do not add up, named."""
    path = save(tmp_path, [helper.make_node("Split", ["x", "lengths"], ["a", "b", "c"], name="s", axis=-1),
                           helper.make_node("Neg", ["a"], ["na"]), helper.make_node("Abs", ["c"], ["ac"])],
                [vi("x", [3, None]), vi("lengths", [None], I64)], [vi("na", [3, None]), vi("b", [3, None]), vi("ac", [3, None])])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    for width, lengths in [(7, (2, 4, 1)), (7, (0, 7, 0)), (5, (5, 0, 0)), (0, (0, 0, 0))]:
        x = np.arange(3 * width, dtype=np.float32).reshape(3, width) - 4
        a, b, c = np.split(x, np.cumsum(lengths)[:2], axis=1)
        got = lib.run([x, np.array(lengths, np.int64)])
        for g, want in zip(got, [-a, b, np.abs(c)]):
            assert g.shape == want.shape
            np.testing.assert_array_equal(g, want)
    with pytest.raises(tessera.Error, match=r"Split \(node 's'\): .*lengths add up to 6, the axis has 7"):
        lib.run([np.zeros((3, 7), np.float32), np.array((2, 2, 2), np.int64)])
    with pytest.raises(tessera.Error, match=r"Split \(node 's'\): .*2 lengths for 3 outputs"):
        lib.run([np.zeros((3, 7), np.float32), np.array((3, 4), np.int64)])


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_a_range_of_floats_or_of_a_delta_the_data_gives_is_computed_on_the_host(tmp_path, exported):
    """Range where its stage cannot take it as sizes, floats (a window's length) or a delta from
    the data: a step of the program, its length a dimension of its own for the stage after it, so
    a module holds it; empty ranges, negative deltas, and a delta of 0 named."""
    nodes = [helper.make_node("Range", ["s", "lim", "d"], ["r"], name="floats"), helper.make_node("Mul", ["r", "two"], ["y"]),
             helper.make_node("Range", ["si", "li", "di"], ["ri"], name="ints")]
    path = save(tmp_path, nodes, [vi("s", []), vi("lim", []), vi("d", []), vi("si", [], TensorProto.INT32),
                                  vi("li", [], TensorProto.INT32), vi("di", [], TensorProto.INT32)],
                [vi("y", [None]), vi("ri", [None], TensorProto.INT32)], [const("two", np.float32(2))])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    for (s, lim, d), (si, li, di) in [((0.5, 3.2, 0.25), (10, -7, -3)), ((1, 1, 1), (3, 4, -1)), ((5, -5, -1.5), (0, 40, 7))]:
        y, ri = lib.run([np.float32(s), np.float32(lim), np.float32(d), np.int32(si), np.int32(li), np.int32(di)])
        np.testing.assert_array_equal(y, np.arange(s, lim, d, dtype=np.float32) * 2)
        np.testing.assert_array_equal(ri, np.arange(si, li, di, dtype=np.int32))
    with pytest.raises(tessera.Error, match=r"Range \(node 'ints'\): .*delta is 0"):
        lib.run([np.float32(0), np.float32(1), np.float32(1), np.int32(0), np.int32(1), np.int32(0)])


REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp", "ReduceSumSquare"]


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_reductions_and_running_sums_along_axes_the_data_gives_run_on_the_host(tmp_path, exported, dtype):
    """A reduction's axes or a CumSum's axis from an input: steps of the program (one build, a
    module holds it), computing what the kernels compute for the same axes as constants: every
    reduction, keepdims or not, the no-op of no axes, empty axes, negative axes, int32 wrapping."""
    elem = {np.float32: F, np.int32: TensorProto.INT32, np.int64: I64}[dtype]
    ops = REDUCTIONS if dtype == np.float32 else ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                                  "ReduceL1", "ReduceSumSquare"]
    def model(axes_input, name):
        nodes, outs = [], []
        for i, op in enumerate(ops):
            for keep in (0, 1):
                nodes.append(helper.make_node(op, ["x", "axes"], [f"{op}{keep}"], keepdims=keep))
                outs.append(vi(f"{op}{keep}", None, elem))
        nodes.append(helper.make_node("ReduceSum", ["x", "axes"], ["noop"], noop_with_empty_axes=1))
        for c, (op, excl, rev) in enumerate([("CumSum", 0, 0), ("CumSum", 1, 1), ("CumProd", 1, 0), ("CumProd", 0, 1)]):
            nodes.append(helper.make_node(op, ["x", "axis"], [f"run{c}"], exclusive=excl, reverse=rev))
        outs += [vi("noop", None, elem)] + [vi(f"run{c}", None, elem) for c in range(4)]
        inputs = [vi("x", [None, None, None], elem)] + ([vi("axes", [None], I64), vi("axis", [], I64)] if axes_input else [])
        return save(tmp_path, nodes, inputs, outs, opset=26, name=name)
    lib = tessera.build(tessera.onnx.load(model(True, "given.onnx")))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    rng = np.random.default_rng(4)
    for shape, axes, axis in [((3, 5, 7), [1], 0), ((2, 1, 33), [-1, 0], -1), ((4, 3, 2), [], 1), ((2, 0, 3), [1], 1),
                              ((1, 1, 1), [0, 1, 2], 2), ((3, 40, 2), [1], 1)]:
        # (2, 0, 3): empty reductions, max's lowest value, min's highest, mean's NaN (0 for integers)
        x = (rng.standard_normal(shape) * 2).astype(dtype) if dtype == np.float32 else rng.integers(-9, 9, shape, dtype)
        got = lib.run([x, np.array(axes, np.int64), np.int64(axis)])
        path = model(False, "constant.onnx")
        m = onnx.load(path)
        m.graph.initializer.extend([numpy_helper.from_array(np.array(axes, np.int64), "axes"),
                                    numpy_helper.from_array(np.int64(axis), "axis")])
        onnx.save(m, path)
        want = tessera.build(tessera.onnx.load(path)).run([x])
        for name, g, w in zip([o.name for o in m.graph.output], got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (name, shape, axes, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6, err_msg=f"{name} {shape} axes {axes}")
    with pytest.raises(tessera.Error, match=r"axis 3 is out of range for a 3-D tensor"):
        lib.run([np.zeros((2, 2, 2), dtype), np.array([3], np.int64), np.int64(0)])
    with pytest.raises(tessera.Error, match=r"an axis is repeated"):
        lib.run([np.zeros((2, 2, 2), dtype), np.array([1, -2], np.int64), np.int64(0)])


def test_a_count_computed_from_the_data_is_taken_as_a_value(tmp_path):
    """y = Range(0, the number of positive elements of x) + 0.5: the count, computed from x's 5000
    values, ends its stage; the next stage takes it as an input, and binds it."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["positive"]),
             helper.make_node("Cast", ["positive"], ["ones"], to=I64),
             helper.make_node("ReduceSum", ["ones"], ["count"], keepdims=0),
             helper.make_node("Range", ["zero_i", "count", "one_i"], ["r"], name="range"),
             helper.make_node("Cast", ["r"], ["rf"], to=F),
             helper.make_node("Add", ["rf", "half"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", [5000])], [vi("y", [None])],
                [const("zero", np.float32(0)), const("zero_i", np.int64(0)), const("one_i", np.int64(1)),
                 const("half", np.float32(0.5))])
    lib = tessera.build(tessera.onnx.load(path))
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = rng.standard_normal(5000).astype(np.float32)
        np.testing.assert_array_equal(lib.run([x])[0], np.arange((x > 0).sum(), dtype=np.float32) + 0.5)
    assert "= stage(count)  # the nodes 'range' to 'y' (3)" in str(tessera.onnx.load(path))
    # Exported, the stage takes the count as a size: a values_as_shape step before it.
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    assert "count#shape@1 = values_as_shape(count)" in module.program
    for x in [rng.standard_normal(5000).astype(np.float32), -np.ones(5000, np.float32)]:
        np.testing.assert_array_equal(module.run([x])[0], np.arange((x > 0).sum(), dtype=np.float32) + 0.5)


def test_values_given_at_run_time_set_sizes_of_every_build(tmp_path, build):
    """A length n and pads given as inputs: positions Range(0, n), a ConstantOfShape of [n, 2], x
    padded by the pads and tiled by [1, n]. The stage takes them as sizes (values_as_shape) and one
    build serves them all; a negative value is built at its value in this process, and refused by
    name by a module."""
    nodes = [helper.make_node("Range", ["zero", "n", "one"], ["positions"]),
             helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
             helper.make_node("Concat", ["n1", "two"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
             helper.make_node("Pad", ["x", "pads"], ["padded"]),
             helper.make_node("Concat", ["one1", "n1"], ["repeats"], axis=0),
             helper.make_node("Tile", ["x", "repeats"], ["tiled"])]
    path = save(tmp_path, nodes, [vi("x", [2, 3]), vi("n", [], I64), vi("pads", [4], I64)],
                [vi("positions", [None], I64), vi("ones", [None, 2]), vi("padded", [None, None]), vi("tiled", [2, None])],
                [const("zero", np.int64(0)), const("one", np.int64(1)), const("axis0", np.array([0], np.int64)),
                 const("two", np.array([2], np.int64)), const("one1", np.array([1], np.int64))])
    lib = build(path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for n, pads in [(3, [0, 1, 2, 0]), (0, [0, 0, 0, 0]), (5, [1, 0, 0, 4]), (3, [2, 2, 2, 2])]:
        positions, ones, padded, tiled = lib.run([x, np.int64(n), np.array(pads, np.int64)])
        np.testing.assert_array_equal(positions, np.arange(n))
        np.testing.assert_array_equal(ones, np.ones((n, 2), np.float32))
        np.testing.assert_array_equal(padded, np.pad(x, [(pads[0], pads[2]), (pads[1], pads[3])]))
        np.testing.assert_array_equal(tiled, np.tile(x, (1, n)))
    if build.in_process:
        # One build for every value; a negative pad, which it cannot take as a size, is built at
        # its value instead.
        every_size = lib.builds
        assert lib.symbolic and all(signatures == ["every size"] for _, signatures in every_size), every_size
        np.testing.assert_array_equal(lib.run([x, np.int64(1), np.array([0, -1, 0, 0], np.int64)])[2], x[:, 1:])
        assert [signatures for _, signatures in lib.builds[len(every_size):]] == [
            ["int64() = 1"], ["int64(2,) = 1 2, float32(2, 3), int64(4,) = 0 -1 0 0, int64(1,)"],
            ["float32(2, 3), int64(2,) = 1 1"]]
    else:
        assert "pads#shape@1 = values_as_shape(pads)" in lib.program
        assert "repeats#shape@2 = values_as_shape(repeats)" in lib.program  # a value the stage before computes
        with pytest.raises(tessera.Error, match=r"'pads' holds -1 \(element 1\), which the part of the model built "
                                                r"for every size takes as a size: it must not be negative"):
            lib.run([x, np.int64(1), np.array([0, -1, 0, 0], np.int64)])


def test_a_constant_from_an_input_of_many_values_is_refused_naming_both(tmp_path):
    """Range's start given by an input of 5000 values: building once per value would never end."""
    path = save(tmp_path, [helper.make_node("Range", ["s", "lim", "one"], ["r"], name="range")],
                [vi("s", [5000], I64)], [vi("r", [None], I64)], [const("lim", np.int64(10)), const("one", np.int64(1))])
    with pytest.raises(tessera.Error, match=r"Range \(node 'range', opset 17\): start \(input 's'\) must be known at "
                                            r"compile time, and it is computed from 's', which holds 5000 values"):
        tessera.build(tessera.onnx.load(path)).run([np.zeros(5000, np.int64)])

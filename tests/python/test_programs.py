"""Models with control flow decided at run time and data-dependent shapes: If on the data, Loop,
Scan, NonZero/Unique/Compress/NonMaxSuppression, inputs that set shapes, run as programs of
compiled stages (frontend/onnx/program.h, driver/program_executor.h), against numpy; and the same
programs exported with every stage built for every size, loaded back by the runtime alone
(driver/program_build.h, runtime/program_module.h)."""
import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def save(tmp_path, nodes, inputs, outputs, initializers=(), opset=17, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    path = os.path.join(str(tmp_path), name)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def without_values_as_shape(program):
    """An exported program as the library's: without the steps that give stages values as sizes."""
    lines = [line for line in program.splitlines(keepends=True) if "= values_as_shape(" not in line]
    return re.sub(r"#shape@\d+", "", "".join(lines))


@pytest.fixture(params=["in_process", "module"])
def build(request, tmp_path):
    """tessera.build of the ONNX model at a path: in this process (built on the first run, for every
    size where it can be), or exported and loaded back as a module (every stage built for every size)."""
    def make(path):
        lib = tessera.build(tessera.onnx.load(path))
        assert isinstance(lib, tessera.ProgramLibrary)
        if request.param == "in_process":
            return lib
        module = str(tmp_path / f"exported{len(list(tmp_path.glob('exported*.so')))}.so")
        lib.export(module)
        loaded = tessera.load(module)
        assert isinstance(loaded, tessera.ProgramLibrary) and loaded.builds == []
        assert loaded.input_names == lib.input_names and without_values_as_shape(loaded.program) == lib.program
        return loaded
    make.in_process = request.param == "in_process"
    return make


def doubling_loop(tmp_path):
    """y, sums = Loop(M, cond=True, y=x): y *= two (read from outside) while sum(y) < limit; each
    iteration's sum(y) stacked."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["y_in", "two"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["go"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("y_in", None)],
        [vi("go", [], B), vi("y_out", None), vi("s", [], F)])
    nodes = [helper.make_node("Loop", ["M", "true", "x"], ["y", "sums"], body=body, name="doubling")]
    return save(tmp_path, nodes, [vi("x", ["N"]), vi("M", [], I64), vi("limit", [], F)],
                [vi("y", ["N"]), vi("sums", [None], F)], [const("two", np.float32(2)), const("true", True)])


def doubling_reference(x, m, limit):
    y, sums = x, []
    for _ in range(m):
        y = y * 2
        sums.append(y.sum(dtype=np.float32))
        if not sums[-1] < limit:
            break
    return y, np.array(sums, np.float32)


def test_loop_runs_until_its_condition_or_trip_count_and_stacks_scan_outputs(tmp_path, build):
    lib = build(doubling_loop(tmp_path))
    for x, m, limit in [(np.array([1, 2, 3], np.float32), 10, 100), (np.array([1, 2, 3], np.float32), 2, 1e9),
                        (np.array([0.5], np.float32), 10, 3), (np.arange(7, dtype=np.float32), 10, 1e3),
                        (np.zeros(0, np.float32), 3, 1)]:
        y, sums = lib.run([x, np.array(m, np.int64), np.array(limit, np.float32)])
        want_y, want_sums = doubling_reference(x, m, limit)
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(sums, want_sums)
    if build.in_process:
        # The body's stage (the program's only one) is built once, on the first run, for every size
        # of its state, however many iterations and sizes follow.
        assert lib.symbolic and [signatures for _, signatures in lib.builds] == [["every size"]], lib.builds


def test_loop_of_no_iteration_gives_its_initial_states_and_empty_scan_outputs(tmp_path, build):
    lib = build(doubling_loop(tmp_path))
    x = np.array([1, 2], np.float32)
    y, sums = lib.run([x, np.array(0, np.int64), np.array(5, np.float32)])
    np.testing.assert_array_equal(y, x)
    assert sums.shape == (0,) and sums.dtype == np.float32


def test_empty_scan_outputs_take_the_shape_the_body_declares(tmp_path, build):
    """A Loop of no iteration and a Scan over nothing: their scan outputs are 0 slices of the
    shape the body declares for one (as ONNX Runtime's Loop gives), stacked along the output axis."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "one"], ["s_out"]), helper.make_node("Unsqueeze", ["s_out", "zero"], ["sc"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("s_in", [2])], [vi("c", [], B), vi("s_out", [2]), vi("sc", [1, 2])])
    path = save(tmp_path, [helper.make_node("Loop", ["M", "", "s0"], ["s", "scans"], body=body)],
                [vi("M", [], I64), vi("s0", [2])], [vi("s", [2]), vi("scans", None)],
                [const("one", np.float32(1)), const("zero", np.array([0], np.int64))], name="loop.onnx")
    lib = build(path)
    for m in [0, 2]:
        s, scans = lib.run([np.array(m, np.int64), np.ones(2, np.float32)])
        assert scans.shape == (m, 1, 2) and scans.dtype == np.float32

    def scan(out_shape):
        body = helper.make_graph(
            [helper.make_node("Add", ["a_in", "x_t"], ["a_out"]), helper.make_node("Neg", ["a_out"], ["o"])],
            "body", [vi("a_in", [2]), vi("x_t", [2])], [vi("a_out", [2]), vi("o", out_shape)])
        node = helper.make_node("Scan", ["a0", "xs"], ["a", "os"], body=body, num_scan_inputs=1, scan_output_axes=[1],
                                name="sums")
        return build(save(tmp_path, [node], [vi("a0", [2]), vi("xs", ["T", 2])], [vi("a", [2]), vi("os", None)],
                          name="scan.onnx"))
    for t in [0, 3]:
        a0, xs = np.ones(2, np.float32), np.arange(2 * t, dtype=np.float32).reshape(t, 2)
        a, os_ = scan([2]).run([a0, xs])
        np.testing.assert_array_equal(a, a0 + xs.sum(0))
        np.testing.assert_array_equal(os_, -(a0 + np.cumsum(xs, 0)).T.reshape(2, t))
    with pytest.raises(tessera.Error, match=r"Scan \(node 'sums'\): scans a sequence of length 0, and the shape of "
                                            r"its scan output 0 is not declared"):
        scan(["d"]).run([np.ones(2, np.float32), np.zeros((0, 2), np.float32)])


def test_loop_state_that_changes_shape_every_iteration(tmp_path, build):
    """acc = Concat(acc, [i]) for i < M: the state grows, so its stage builds for each size."""
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["i", "zero"], ["i1"]),
         helper.make_node("Concat", ["acc_in", "i1"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("acc_in", [None], I64)],
        [vi("c_out", [], B), vi("acc_out", [None], I64)])
    path = save(tmp_path, [helper.make_node("Loop", ["M", "", "start"], ["acc"], body=body, name="grow")],
                [vi("M", [], I64), vi("start", [1], I64)], [vi("acc", [None], I64)],
                [const("zero", np.array([0], np.int64))])
    lib = build(path)
    for m in [0, 1, 5]:
        (acc,) = lib.run([np.array(m, np.int64), np.array([-1], np.int64)])
        np.testing.assert_array_equal(acc, np.array([-1] + list(range(m)), np.int64))


def test_loop_without_trip_count_or_condition_is_refused(tmp_path):
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Neg", ["v"], ["v_out"])],
                             "body", [vi("i", [], I64), vi("c", [], B), vi("v", [2])], [vi("c_out", [], B), vi("v_out", [2])])
    path = save(tmp_path, [helper.make_node("Loop", ["", "", "x"], ["y"], body=body, name="forever")],
                [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(tessera.Error, match=r"Loop \(node 'forever'\): has neither a trip count nor a condition"):
        tessera.build(tessera.onnx.load(path)).run([np.zeros(2, np.float32)])


def test_scan_with_reversed_inputs_and_outputs_along_other_axes(tmp_path, rng, build):
    """Running sums: state += x[:, t] (scanned along axis 1, backwards), the states stacked along axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [vi("s_in", [3]), vi("x_t", [3])], [vi("s_out", [3]), vi("y_t", [3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1], scan_output_axes=[-1], scan_output_directions=[0], name="sums")
    path = save(tmp_path, [node], [vi("s0", [3]), vi("x", [3, "T"])], [vi("s", [3]), vi("y", [3, "T"])], opset=11)
    lib = build(path)
    for t in [1, 4]:
        s0, x = rng.standard_normal(3).astype(np.float32), rng.standard_normal((3, t)).astype(np.float32)
        s, y = lib.run([s0, x])
        want = s0[:, None] + np.cumsum(x[:, ::-1], axis=1)
        np.testing.assert_allclose(y, want, rtol=1e-6)
        np.testing.assert_allclose(s, want[:, -1], rtol=1e-6)


def test_scan_of_opset_8_scans_each_entry_of_a_batch(tmp_path, rng, build):
    """Opset 8's Scan: no sequence lengths, a batch dimension first on the state and the scanned
    input (B, T); each entry's running sums from its last step back, stacked per entry; the module too."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [vi("s_in", [2]), vi("x_t", [2])], [vi("s_out", [2]), vi("y_t", [2])])
    node = helper.make_node("Scan", ["", "s0", "x"], ["s", "y"], body=body, num_scan_inputs=1, directions=[1],
                            name="sums")
    path = save(tmp_path, [node], [vi("s0", ["B", 2]), vi("x", ["B", "T", 2])], [vi("s", ["B", 2]),
                vi("y", ["B", "T", 2])], opset=8)
    lib = build(path)
    for b, t in [(1, 3), (3, 1), (2, 5)]:
        s0, x = rng.standard_normal((b, 2)).astype(np.float32), rng.standard_normal((b, t, 2)).astype(np.float32)
        s, y = lib.run([s0, x])
        want = s0[:, None] + np.cumsum(x[:, ::-1], axis=1)  # outputs in the order of the steps
        np.testing.assert_allclose(y, want, rtol=1e-6)
        np.testing.assert_allclose(s, want[:, -1], rtol=1e-6)


def test_scan_of_one_stage_writes_states_and_outputs_in_place_and_keeps_each_run_s_results(tmp_path, rng, build):
    """A recurrent step as one stage: h = tanh(h @ W + x[t]), c = c + h; x scanned forwards along
    axis 0, z backwards along axis 1; h stacked forwards and c backwards along axis 0, h * z along
    axis 1. The scan runs the stage itself, writing each state into the buffer of two steps before
    and each output into its place in the result: the results match numpy at each length, and
    later runs leave earlier runs' results as they were."""
    w = rng.standard_normal((4, 4)).astype(np.float32) * 0.5
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "w"], ["hw"]), helper.make_node("Add", ["hw", "x_t"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h2"]), helper.make_node("Add", ["c", "h2"], ["c2"]),
         helper.make_node("Mul", ["h2", "z_t"], ["hz"]), helper.make_node("Identity", ["h2"], ["h_t"]),
         helper.make_node("Identity", ["c2"], ["c_t"])],
        "body", [vi("h", [2, 4]), vi("c", [2, 4]), vi("x_t", [2, 4]), vi("z_t", [2, 4])],
        [vi("h2", [2, 4]), vi("c2", [2, 4]), vi("h_t", [2, 4]), vi("c_t", [2, 4]), vi("hz", [2, 4])])
    node = helper.make_node("Scan", ["h0", "c0", "x", "z"], ["h", "c", "hs", "cs", "hzs"], body=body,
                            num_scan_inputs=2, scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                            scan_output_axes=[0, 0, 1], scan_output_directions=[0, 1, 0], name="step")
    path = save(tmp_path, [node], [vi("h0", [2, 4]), vi("c0", [2, 4]), vi("x", ["T", 2, 4]), vi("z", [2, "T", 4])],
                [vi(n, None) for n in ["h", "c", "hs", "cs", "hzs"]], [const("w", w)], opset=11)
    lib = build(path)

    def reference(h, c, x, z):
        hs, cs, hzs = [], [], []
        for t in range(len(x)):
            h = np.tanh(h @ w + x[t])
            c = c + h
            hs.append(h)
            cs.append(c)
            hzs.append(h * z[:, len(x) - 1 - t])
        return [h, c, np.stack(hs), np.stack(cs[::-1]), np.stack(hzs, axis=1)]

    runs = []
    for t in [5, 1, 5, 3]:
        given = [rng.standard_normal(s).astype(np.float32) for s in ([2, 4], [2, 4], [t, 2, 4], [2, t, 4])]
        got = lib.run(given)
        for g, want in zip(got, reference(*given)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
        runs.append((given, [np.array(g) for g in got], got))
    for given, copies, got in runs:
        for g, copy in zip(got, copies):
            np.testing.assert_array_equal(g, copy)


def test_if_on_the_data_chooses_a_branch_per_run_and_reads_values_around_it(tmp_path, build):
    """y = If(sum(x) > 0, then: x * scale (scale from outside), else: Abs(x)[::-1] of another shape's stage)."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["t"])], "then", [], [vi("t", None)])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["e"])], "else",
                               [], [vi("e", None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["positive"]),
             helper.make_node("Exp", ["x"], ["scale"]),
             helper.make_node("If", ["positive"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")]
    path = save(tmp_path, nodes, [vi("x", ["N"])], [vi("y", ["N"])], [const("zero", np.float32(0))])
    lib = build(path)
    for x in [np.array([1, -0.5, 2], np.float32), np.array([-1, -2], np.float32), np.array([3], np.float32)]:
        want = x * np.exp(x) if x.sum() > 0 else -np.abs(x)
        np.testing.assert_allclose(lib.run([x])[0], want, rtol=1e-6)


def test_each_branch_reads_its_own_constant_of_a_name_both_define(tmp_path, build):
    """Scopes as ONNX gives them: both branches of an If define a Constant 'c' (as PyTorch names
    them in an optimum-exported merged decoder, where one branch's Range start is 0 and the other's
    delta is 1). Each branch read the value defined last: the wrong scale here, silently; "Range:
    delta is 0" in the decoder."""
    def branch(name, value):
        return helper.make_graph([helper.make_node("Constant", [], ["c"], value=const("c", np.float32(value))),
                                  helper.make_node("Mul", ["x", "c"], [name])], name, [], [vi(name, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y"], then_branch=branch("t", 2), else_branch=branch("e", 3))]
    path = save(tmp_path, nodes, [vi("x", ["N"])], [vi("y", ["N"])], [const("zero", np.float32(0))])
    lib = build(path)
    for x in [np.array([1, -0.5, 2], np.float32), np.array([-1, -2], np.float32)]:
        np.testing.assert_array_equal(lib.run([x])[0], x * (2 if x.sum() > 0 else 3))


def test_stages_pass_on_the_sizes_they_compute(tmp_path, rng, build):
    """A stage computes L from Shape(ids); after a step between stages (NonZero), the next stage
    makes a Range of L viewed as (L, 1), expanded to the shape (N, L, L) computed beside it, and
    adds it to x. The second stage takes L as the size the first computed (a module was refused:
    "cannot reshape (l_value0,) to (L, 1)"; in this process each new L built it again)."""
    nodes = [helper.make_node("Shape", ["ids"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["l"]), helper.make_node("Gather", ["s", "zero"], ["n"]),
             helper.make_node("Cast", ["l"], ["l_cast"], to=I64),
             helper.make_node("Unsqueeze", ["l", "axis0"], ["l1"]), helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
             helper.make_node("NonZero", ["ids"], ["nz"]),
             helper.make_node("Range", ["zero", "l_cast", "one"], ["r"]),
             helper.make_node("Concat", ["l1", "one1"], ["col_shape"], axis=0),
             helper.make_node("Reshape", ["r", "col_shape"], ["col"]),
             helper.make_node("Concat", ["n1", "l1", "l1"], ["full"], axis=0),
             helper.make_node("Expand", ["col", "full"], ["e"]),
             helper.make_node("Cast", ["e"], ["ef"], to=F),
             helper.make_node("Add", ["x", "ef"], ["y"])]
    path = save(tmp_path, nodes, [vi("ids", ["N", "L"], I64), vi("x", ["N", "L", "L"])],
                [vi("y", ["N", "L", "L"]), vi("nz", [2, None], I64)],
                [const("zero", np.int64(0)), const("one", np.int64(1)), const("one1", np.array([1], np.int64)),
                 const("axis0", np.array([0]))])
    lib = build(path)
    for n, length in [(2, 3), (1, 1), (3, 5)]:
        ids, x = rng.integers(0, 2, (n, length)), rng.standard_normal((n, length, length)).astype(np.float32)
        y, nz = lib.run([ids, x])
        np.testing.assert_allclose(y, x + np.arange(length)[:, None], rtol=1e-6)
        np.testing.assert_array_equal(nz, np.array(np.nonzero(ids)))
    if build.in_process:
        assert lib.builds and all(sizes == ["every size"] for _, sizes in lib.builds), lib.builds


def test_each_branch_s_values_are_its_own_where_both_name_one_alike(tmp_path, rng, build):
    """optimum's merged decoders compute a value of one name in both branches of their If: here
    'l' is a sum of the data in one and the sequence's length in the other, whose Range and
    reshape to (L, 1) take it as that size. Each branch's values are told apart, so the other
    branch's value does not make this one a value of the data (a stage of its own, built for each
    value in this process)."""
    then_g = helper.make_graph(
        [helper.make_node("ReduceSum", ["ids"], ["l"], keepdims=0), helper.make_node("Cast", ["l"], ["lf"], to=F),
         helper.make_node("Mul", ["x", "lf"], ["y_then"])], "then", [], [vi("y_then", None)])
    else_g = helper.make_graph(
        [helper.make_node("Shape", ["ids"], ["s"]), helper.make_node("Gather", ["s", "one"], ["l"]),
         helper.make_node("Range", ["zero", "l", "one"], ["r"]),
         helper.make_node("Unsqueeze", ["l", "axis0"], ["l1"]),
         helper.make_node("Concat", ["l1", "one1"], ["col_shape"], axis=0),
         helper.make_node("Reshape", ["r", "col_shape"], ["col"]),
         helper.make_node("Cast", ["col"], ["colf"], to=F),
         helper.make_node("Add", ["x", "colf"], ["y_else"])], "else", [], [vi("y_else", None)])
    nodes = [helper.make_node("If", ["sum_it"], ["y"], then_branch=then_g, else_branch=else_g, name="merged")]
    path = save(tmp_path, nodes, [vi("ids", ["N", "L"], I64), vi("x", ["N", "L", "L"]), vi("sum_it", [], B)],
                [vi("y", ["N", "L", "L"])], [const("zero", np.int64(0)), const("one", np.int64(1)),
                                             const("one1", np.array([1], np.int64)), const("axis0", np.array([0]))])
    lib = build(path)
    for n, length in [(2, 3), (1, 1), (3, 5)]:
        ids, x = rng.integers(0, 3, (n, length)), rng.standard_normal((n, length, length)).astype(np.float32)
        np.testing.assert_allclose(lib.run([ids, x, np.array(False)])[0], x + np.arange(length)[:, None], rtol=1e-6)
        np.testing.assert_allclose(lib.run([ids, x, np.array(True)])[0], x * ids.sum(), rtol=1e-6)
    if build.in_process:
        assert len(lib.builds) == 2 and all(sizes == ["every size"] for _, sizes in lib.builds), lib.builds


def positives_doubled(tmp_path, shape):
    """x[x > 0] * 2 for x of `shape`: NonZero -> Transpose -> GatherND -> Mul."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["mask"]),
             helper.make_node("NonZero", ["mask"], ["idx"], name="where"),
             helper.make_node("Transpose", ["idx"], ["idx_t"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx_t"], ["vals"], name="gather"),
             helper.make_node("Mul", ["vals", "two"], ["y"])]
    return save(tmp_path, nodes, [vi("x", shape)], [vi("y", [None])],
                [const("zero", np.float32(0)), const("two", np.float32(2))])


def test_nonzero_feeds_compiled_stages_at_every_count(tmp_path, build):
    """The positive elements of x, doubled, at every count of them."""
    path = positives_doubled(tmp_path, [3, 4])
    lib = build(path)
    rng = np.random.default_rng(1)
    for x in [rng.standard_normal((3, 4)).astype(np.float32), np.full((3, 4), -1, np.float32),
              np.ones((3, 4), np.float32)]:
        np.testing.assert_array_equal(lib.run([x])[0], x[x > 0] * 2)


def test_unique_compress_and_nms_as_steps(tmp_path, build):
    nodes = [helper.make_node("Unique", ["v"], ["u", "idx", "inv", "cnt"], sorted=1),
             helper.make_node("Compress", ["m", "keep"], ["rows"], axis=0),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["sel"])]
    path = save(tmp_path, nodes,
                [vi("v", [6], I64), vi("m", [3, 2]), vi("keep", [3], B), vi("boxes", [1, 3, 4]), vi("scores", [1, 1, 3])],
                [vi("u", [None], I64), vi("idx", [None], I64), vi("inv", [None], I64), vi("cnt", [None], I64),
                 vi("rows", [None, 2]), vi("sel", [None, 3], I64)],
                [const("max_out", np.array([2], np.int64)), const("iou", np.array([0.5], np.float32))], opset=11)
    lib = build(path)
    v = np.array([3, 1, 3, 2 ** 60 + 1, 2 ** 60, 1], np.int64)
    m = np.arange(6, dtype=np.float32).reshape(3, 2)
    keep = np.array([True, False, True])
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    u, idx, inv, cnt, rows, sel = lib.run([v, m, keep, boxes, scores])
    want = np.unique(v, return_index=True, return_inverse=True, return_counts=True)
    for got, w in zip([u, idx, inv, cnt], want):
        np.testing.assert_array_equal(got, w)
    np.testing.assert_array_equal(rows, m[keep])
    np.testing.assert_array_equal(sel, [[0, 0, 0], [0, 0, 2]])


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


def test_an_exported_program_loads_only_as_what_it_is(tmp_path):
    lib = tessera.build(tessera.onnx.load(doubling_loop(tmp_path)))
    module = str(tmp_path / "m.so")
    lib.export(module)
    loaded = tessera.load(module)
    with pytest.raises(tessera.Error, match="loaded from a module, which is written already"):
        loaded.export(str(tmp_path / "again.so"))
    assert loaded.target.startswith("llvm -mtriple=") and "y, sums = loop(M, true, x)" in loaded.program


def test_programs_check_inputs_and_name_unsupported_operators_in_bodies(tmp_path, build):
    path = doubling_loop(tmp_path)
    lib = build(path)
    assert lib.input_names == ["x", "M", "limit"]
    with pytest.raises(tessera.Error, match=r"input 'M' \(#1\): expected int64 elements, got float32"):
        lib.run([np.ones(2, np.float32), np.ones((), np.float32), np.ones((), np.float32)])
    with pytest.raises(tessera.Error, match="no one graph computes it"):
        tessera.onnx.load(path).specialize({"x": (3,)})
    body = helper.make_graph([helper.make_node("FancyOp", ["y_in"], ["y_out"], name="fancy"),
                              helper.make_node("Identity", ["c"], ["go"])], "body",
                             [vi("i", [], I64), vi("c", [], B), vi("y_in", None)], [vi("go", [], B), vi("y_out", None)])
    bad = save(tmp_path, [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
               [vi("x", [2]), vi("M", [], I64)], [vi("y", [2])], name="bad.onnx")
    with pytest.raises(tessera.Error, match=r"1 unsupported operator\(s\):\n  FancyOp \(opset 17\) — node 'fancy'"):
        tessera.onnx.load(bad)


def seq_vi(name, elem=F):
    return helper.make_tensor_sequence_value_info(name, elem, None)


def test_sequences_go_in_and_out_as_lists_and_loops_carry_them(tmp_path, rng, build):
    """parts = SplitToSequence(x, [1, 2]) along 1; each part + 1 (SequenceMap); then a Loop appends
    Sum(x) M times (a sequence carried from iteration to iteration); y = ConcatFromSequence(given + parts)."""
    add_one = helper.make_graph([helper.make_node("Add", ["p", "one"], ["q"])], "add_one", [vi("p", None)],
                                [vi("q", None)])
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=1),
         helper.make_node("Reshape", ["s", "shape_1x1"], ["s11"]),
         helper.make_node("SequenceInsert", ["acc_in", "s11"], ["acc_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), seq_vi("acc_in")], [vi("c_out", [], B), seq_vi("acc_out")])
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
             helper.make_node("SequenceMap", ["parts"], ["plus_one"], body=add_one),
             helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["M", "", "empty"], ["sums"], body=body),
             helper.make_node("SequenceLength", ["sums"], ["n_sums"]),
             helper.make_node("ConcatFromSequence", ["plus_one"], ["joined"], axis=1),
             helper.make_node("SequenceAt", ["given", "minus_one"], ["last_given"])]
    path = save(tmp_path, nodes, [vi("x", [2, 3]), vi("M", [], I64), seq_vi("given")],
                [vi("joined", [2, 3]), seq_vi("plus_one"), seq_vi("sums"), vi("n_sums", [], I64), vi("last_given", None)],
                [const("split", np.array([1, 2], np.int64)), const("one", np.float32(1)),
                 const("shape_1x1", np.array([1, 1], np.int64)), const("minus_one", np.array(-1, np.int64))])
    lib = build(path)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    given = [np.zeros(2, np.float32), np.arange(4, dtype=np.float32)]
    joined, plus_one, sums, n_sums, last_given = lib.run([x, np.array(3, np.int64), given])
    np.testing.assert_allclose(joined, x + 1, rtol=1e-6)
    assert isinstance(plus_one, list) and [p.shape for p in plus_one] == [(2, 1), (2, 2)]
    assert isinstance(sums, list) and len(sums) == 3 and n_sums == 3
    for s in sums:
        np.testing.assert_allclose(s, [[x.sum()]], rtol=1e-5)
    np.testing.assert_array_equal(last_given, given[-1])
    with pytest.raises(tessera.Error, match=r"input 'given' \(#2\) must be a sequence, got a tensor"):
        lib.run([x, np.array(3, np.int64), np.zeros(2, np.float32)])
    with pytest.raises(tessera.Error, match=r"SequenceAt \(node .last_given.\): position -1 is out of range for a sequence of 0"):
        lib.run([x, np.array(0, np.int64), []])


def test_a_sequence_a_loop_builds_from_empty_feeds_a_stage(tmp_path, build):
    """rows = Loop(M, seq = SequenceEmpty): seq += [x * i]; y = Relu(ConcatFromSequence(rows)):
    the stage after the loop reads a tensor whose type comes from the elements the body inserts."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["row"]),
         helper.make_node("SequenceInsert", ["seq_in", "row"], ["seq_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), seq_vi("seq_in")], [vi("c_out", [], B), seq_vi("seq_out")])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["M", "", "empty"], ["rows"], body=body),
             helper.make_node("ConcatFromSequence", ["rows"], ["joined"], axis=0),
             helper.make_node("Relu", ["joined"], ["y"])]
    lib = build(save(tmp_path, nodes, [vi("x", [1, "K"]), vi("M", [], I64)], [vi("y", [None, "K"])]))
    for m, k in [(3, 4), (1, 2), (5, 1)]:
        x = np.linspace(-1, 1, k, dtype=np.float32).reshape(1, k)
        want = np.maximum(np.concatenate([x * i for i in range(m)]), 0)
        np.testing.assert_array_equal(lib.run([x, np.array(m, np.int64)])[0], want)


def test_optionals_hold_a_value_or_none(tmp_path, build):
    opt = helper.make_tensor_type_proto(F, None)
    nodes = [helper.make_node("OptionalHasElement", ["maybe"], ["has"]),
             helper.make_node("If", ["has"], ["y"],
                              then_branch=helper.make_graph([helper.make_node("OptionalGetElement", ["maybe"], ["v"])],
                                                            "then", [], [vi("v", None)]),
                              else_branch=helper.make_graph([helper.make_node("Identity", ["x"], ["w"])], "else", [],
                                                            [vi("w", None)]))]
    path = save(tmp_path, nodes, [vi("x", [2]), helper.make_value_info("maybe", helper.make_optional_type_proto(opt))],
                [vi("has", [], B), vi("y", [2])], opset=18)
    lib = build(path)
    x = np.array([1, 2], np.float32)
    has, y = lib.run([x, None])
    assert not has and np.array_equal(y, x)
    has, y = lib.run([x, np.array([5, 6], np.float32)])
    assert has and np.array_equal(y, [5, 6])


class GreedyDecoder:
    """A TorchScript greedy decoder (an embedding, a recurrent cell, an argmax per step, stopping
    at an end token or after max_len steps), as PyTorch's exporter writes it: a Loop carrying a
    sequence (SequenceInsert per step), a data-dependent condition, ConcatFromSequence after."""
    source = '''
import torch


class Decoder(torch.nn.Module):
    def __init__(self, eos: int):
        super().__init__()
        self.eos = eos
        self.embed = torch.nn.Embedding(50, 16)
        self.wi = torch.nn.Linear(16, 32)
        self.wh = torch.nn.Linear(32, 32)
        self.out = torch.nn.Linear(32, 50)

    def forward(self, h, max_len: torch.Tensor):
        tok = torch.zeros(1, dtype=torch.long)
        tokens = []
        for i in range(int(max_len)):
            h = torch.tanh(self.wi(self.embed(tok)) + self.wh(h))
            tok = self.out(h).argmax(-1)
            tokens.append(tok)
            if bool(tok[0] == self.eos):
                break
        return torch.stack(tokens, 1), h
'''


def test_a_decoding_loop_exported_by_pytorch_matches_pytorch(tmp_path, build):
    torch = pytest.importorskip("torch")
    import importlib.util
    (tmp_path / "decoder_model.py").write_text(GreedyDecoder.source)
    spec = importlib.util.spec_from_file_location("decoder_model", tmp_path / "decoder_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # TorchScript reads the class's source from its file
    torch.manual_seed(0)
    h0 = torch.randn(1, 32, generator=torch.Generator().manual_seed(0))
    probe = torch.jit.script(module.Decoder(eos=-1))
    eos = int(probe(h0, torch.tensor(8))[0][0, 5])  # a token the loop meets: it stops there
    torch.manual_seed(0)
    model = torch.jit.script(module.Decoder(eos=eos))
    path = str(tmp_path / "decoder.onnx")
    torch.onnx.export(model, (h0, torch.tensor(10)), path, input_names=["h", "max_len"],
                      output_names=["tokens", "h_out"], opset_version=15)
    lib = build(path)
    def array(t, dtype):  # through lists: Debian's torch may be built for another numpy than this one
        return np.array(t.tolist(), dtype)

    stopped_early = False
    for seed in range(4):
        h = torch.randn(1, 32, generator=torch.Generator().manual_seed(seed))
        for n in [1, 3, 12]:
            want_tokens, want_h = model(h, torch.tensor(n))
            tokens, h_out = lib.run([array(h, np.float32), np.array(n, np.int64)])
            np.testing.assert_array_equal(tokens, array(want_tokens, np.int64))
            np.testing.assert_allclose(h_out, array(want_h, np.float32), rtol=1e-5, atol=1e-6)
            stopped_early |= tokens.shape[1] < n
    assert stopped_early  # the end token ended some loop before max_len
    with pytest.raises(tessera.Error, match=r"ConcatFromSequence \(node .*\): the sequence is empty"):
        lib.run([array(h0, np.float32), np.array(0, np.int64)])  # as torch.stack([]) fails


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


def test_a_program_exports_for_devices_and_runs_on_opencl(tmp_path):
    """Device modules hold a program as CPU modules do: its stages' device programs run on PoCL at
    every count NonZero gives; a CUDA module compiles here (NVRTC) and is refused at load for want
    of a driver."""
    path = positives_doubled(tmp_path, [3, 4])
    tessera.build(tessera.onnx.load(path), target="opencl").export(str(tmp_path / "cl.so"))
    lib = tessera.load(str(tmp_path / "cl.so"))
    assert lib.target == "opencl"
    rng = np.random.default_rng(3)
    for x in [rng.standard_normal((3, 4)).astype(np.float32), np.full((3, 4), -1, np.float32)]:
        np.testing.assert_array_equal(lib.run([x])[0], x[x > 0] * 2)
    tessera.build(tessera.onnx.load(path), target="cuda -arch=sm_80").export(str(tmp_path / "cuda.so"))
    try:
        cuda = tessera.load(str(tmp_path / "cuda.so"))
    except tessera.Error as e:
        assert re.search(r"cannot load module .*cuda.so' \(target 'cuda -arch=sm_80'\) on cuda\(0\): no CUDA driver",
                         str(e)), e
    else:  # a machine with an NVIDIA GPU
        np.testing.assert_array_equal(cuda.run([x])[0], x[x > 0] * 2)


def test_an_exported_program_runs_through_the_c_api_at_any_size(tmp_path):
    """The C example (examples/deploy/classify.c) runs a program module as any other: x[x > 0] * 2
    for x of N rows, N = 3, 1, 7; its scores are the run's output, of the length the data gives."""
    from test_device_modules import deploy_example, run
    path = positives_doubled(tmp_path, ["N", 4])
    tessera.build(tessera.onnx.load(path)).export(str(tmp_path / "m.so"))
    exe = deploy_example(tmp_path)
    rng = np.random.default_rng(4)
    for n in [3, 1, 7]:
        x = rng.standard_normal((n, 4)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        out = run(exe, tmp_path / "m.so", tmp_path / "x.npy", tmp_path / "y.npy").stdout
        assert f"of {(x > 0).sum()} classes" in out
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x[x > 0] * 2)
    # No rows: no index tuples either, so nothing is read (an empty output).
    np.save(tmp_path / "x.npy", np.zeros((0, 4), np.float32))
    assert "of 0 classes" in run(exe, tmp_path / "m.so", tmp_path / "x.npy", tmp_path / "y.npy").stdout
    assert np.load(tmp_path / "y.npy").shape == (0,)
    np.save(tmp_path / "x.npy", np.zeros((2, 5), np.float32))
    failed = run(exe, tmp_path / "m.so", tmp_path / "x.npy", ok=False)
    assert "setting the input: input 'x': expected float32 of shape (?, 4), got float32(2, 5)" in failed.stderr


def test_the_c_api_refuses_a_program_that_takes_a_sequence(tmp_path):
    from test_device_modules import deploy_example, run
    path = save(tmp_path, [helper.make_node("SequenceLength", ["s"], ["n"])], [seq_vi("s")], [vi("n", [], I64)])
    tessera.build(tessera.onnx.load(path)).export(str(tmp_path / "m.so"))
    np.save(tmp_path / "x.npy", np.zeros(1, np.float32))
    failed = run(deploy_example(tmp_path), tmp_path / "m.so", tmp_path / "x.npy", ok=False)
    assert "its input 's' is a sequence, and the C API passes tensors only" in failed.stderr

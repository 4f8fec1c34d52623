"""Models with control flow decided at run time and data-dependent shapes: If on the data, Loop,
Scan, NonZero/Unique/Compress/NonMaxSuppression, sequences and optionals, run as programs of
compiled stages (frontend/onnx/program.h, driver/program_executor.h), against numpy; and the same
programs exported with every stage built for every size, loaded back by the runtime alone
(driver/program_build.h, runtime/program_module.h). Values the data gives where operators need
constants or sizes: test_program_values.py."""
import re

import numpy as np
import pytest
from onnx import helper

import tessera
from program_testing import B, F, I64, build, const, save, vi  # noqa: F401 (build: a fixture)


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

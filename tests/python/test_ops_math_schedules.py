"""The math family's CPU schedules, read from the lowered kernels: elementwise and broadcasting
kernels are vectorized along the innermost axis without gathers (whatever the broadcast and
however uneven the sizes), reductions vectorize along the data's innermost axis, run in
parallel, and split short or few-output reductions into partial results (rfactor)."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

import host_cpu
from math_onnx import build, check


def ramps(text):
    """(base, stride, lanes) of every ramp(...) in lowered code."""
    out = []
    for m in re.finditer(r"ramp\(", text):
        depth, args, start = 1, [], m.end()
        i = start
        while depth:
            ch = text[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 1:
                args.append(text[start:i].strip())
                start = i + 1
            i += 1
        args.append(text[start:i - 1].strip())
        out.append(tuple(args))
    return out


def lowered(lib):
    return "\n".join(k["lowered"] for k in lib.kernels)


def assert_contiguous_vectors(code, lanes=None):
    rs = ramps(code)
    assert rs, "not vectorized:\n" + code
    for base, stride, n in rs:
        assert stride == "1", "a strided (gathering) access:\n" + code
        if lanes:
            assert int(n) <= lanes
    # Vector index arithmetic (a ramp divided or reduced modulo) means gathers too.
    assert not re.search(r"ramp\([^\n]*\) (//|%) x\d+", code), "vector division in an index:\n" + code


@pytest.mark.parametrize("op,shapes", [
    ("Add", [(8, 3, 20, 20), (3, 1, 1)]), ("Add", [(64, 100), (100,)]), ("Mul", [(64, 1), (1, 100)]),
    ("Sub", [(7, 9, 100), (7, 9, 100)]), ("Div", [(2, 3, 5), (2, 3, 5)]), ("Add", [(5, 1, 33), (4, 1)]),
    ("Relu", [(7, 9, 100)]), ("Exp", [(3, 1000)]), ("Where", [(64, 100), (64, 1), (100,)]),
    ("PRelu", [(2, 16, 10, 10), (16, 1, 1)])])
def test_elementwise_vectorized_without_gathers(op, shapes, rng):
    xs = [(rng.random(s) < 0.5) if op == "Where" and i == 0 else rng.standard_normal(s).astype(np.float32)
          for i, s in enumerate(shapes)]
    lib = build(op, xs, opset=16)
    assert_contiguous_vectors(lowered(lib), 16)
    assert "if (" not in lowered(lib), "a guard left in the loop:\n" + lowered(lib)
    got = lib.run(xs)[0]
    assert got.shape == np.broadcast_shapes(*shapes)


def test_large_elementwise_runs_in_parallel(rng):
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    assert "parallel" in lowered(build("Tanh", [x]))


def test_the_parallel_threshold_counts_transcendental_functions(rng, tmp_path):
    """4096 tanh take as long as tens of thousands of sums: they share the cores, the sums do not;
    so do the sigmoids of a slice (the transform family's template, a recurrent cell's gates)."""
    x = rng.standard_normal((16, 256)).astype(np.float32)
    assert "parallel" in lowered(build("Tanh", [x]))
    assert "parallel" not in lowered(build("Add", [x, x]))
    nodes = [helper.make_node("Slice", ["x", "start", "end", "axes"], ["s"]), helper.make_node("Sigmoid", ["s"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in [("start", [256]), ("end", [512]), ("axes", [1])]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 256])], inits)
    onnx.save(helper.make_model(graph), str(tmp_path / "m.onnx"))
    lib = tessera.build(tessera.onnx.load(str(tmp_path / "m.onnx")), db=False)
    assert [k["op"] for k in lib.kernels] == ["fused_slice_sigmoid"] and "parallel" in lowered(lib)
    x = rng.standard_normal((16, 1024)).astype(np.float32)
    np.testing.assert_allclose(lib.run([x])[0], 1 / (1 + np.exp(-x[:, 256:512])), rtol=1e-6)


@pytest.mark.parametrize("shape,axes,kind", [
    ((4096, 64), [0], "kept"), ((1000, 257), [0], "kept"), ((64, 64, 256), [1], "kept"),
    ((64, 4096), [1], "reduced"), ((8, 3, 224, 224), [2, 3], "reduced"),
    ((2048, 2048), None, "partial"), ((100000,), None, "partial"), ((8, 64, 56, 56), [3], "lanes")])
def test_reduction_schedules(shape, axes, kind, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    attrs = {"keepdims": 0}
    if axes is not None:
        attrs["axes"] = axes
    lib = build("ReduceMean", [x], attrs)
    code = lowered(lib)
    if kind == "kept":
        # Vectors along the kept innermost axis, accumulated across the reduction.
        lanes = str(host_cpu.float_lanes())
        assert any(s == "1" and n == lanes for _, s, n in ramps(code.split("reduce_mean_out[")[0])), code
        assert_contiguous_vectors(code)
    elif kind == "reduced":
        # The reduction loop innermost and contiguous (trailing axes fused), for LLVM to vectorize.
        assert "parallel" in code and not ramps(code.split("reduce_mean_out[")[0]), code
    elif kind == "partial":
        assert ".rf" in code and "parallel (r" in code, code
    else:
        assert ".rf" in code, code
        assert_contiguous_vectors(code)
    want = x.astype(np.float64).mean(axis=None if axes is None else tuple(axes)).astype(np.float32)
    check(lib.run([x])[0], want, rtol=1e-5, atol=1e-6)


def test_cumsum_is_blocked_and_vectorized(rng):
    x = rng.standard_normal((16, 4096)).astype(np.float32)
    lib = build("CumSum", [x], opset=14, constants={1: np.array(1, np.int64)})
    code = lowered(lib)
    assert "cumsum_local" in code and "cumsum_carry" in code
    assert_contiguous_vectors(code)
    check(lib.run([x])[0], np.cumsum(x.astype(np.float64), axis=1).astype(np.float32), rtol=1e-4, atol=1e-3)


def test_symbolic_row_reductions_read_without_masks_but_at_the_tail(rng, tmp_path):
    """Attention's softmax over rows of symbolic length L ([N, L, L] scores): its partial maxima and
    sums (rfactor) guard only the last, partial vector of a row; the loop before it reads whole
    vectors unmasked."""
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L", "L"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    lib = tessera.build(tessera.onnx.load(str(tmp_path / "m.onnx")), db=False)
    for shape in [(5, 40, 40), (3, 1, 1), (2, 17, 17), (1, 64, 64)]:  # the first run's sizes pick the schedule
        x = rng.standard_normal(shape).astype(np.float32)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        check(lib.run([x])[0], e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)
    code = lowered(lib)  # one kernel for every size, built on the first run
    partials = [line for line in code.splitlines() if re.search(r"\.rf\[ramp\(.*\] = ", line)]
    assert any("select(" not in line for line in partials if "max(" in line), code
    assert any("select(" not in line for line in partials if "+" in line), code

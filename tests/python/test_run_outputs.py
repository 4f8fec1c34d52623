"""Library.run hands each run's output buffers to the numpy arrays it returns instead of copying
them (the next run writes new ones): each call's arrays stay its own, writable, and outlive the
library; empty outputs and builds for every size alike."""
import gc

import numpy as np

import tessera


def test_each_runs_outputs_are_its_own_and_outlive_the_library(rng):
    text = """def @main(%x: float32[3, 40]) -> (float32[3, 40], float32[3, 40]) {
  (exp(%x), add(%x, %x))
}"""
    lib = tessera.build(tessera.relay.parse(text), db=False)
    xs = [rng.standard_normal((3, 40)).astype("float32") for _ in range(3)]
    results = [lib.run([x]) for x in xs]
    del lib
    gc.collect()
    for x, (e, a) in zip(xs, results):
        np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
        np.testing.assert_array_equal(a, x + x)
        assert e.flags.writeable and e.flags.c_contiguous and not np.shares_memory(e, a)
    results[0][0][:] = 0  # the caller's to change
    np.testing.assert_allclose(results[1][0], np.exp(xs[1]), rtol=1e-6)


def test_a_build_for_every_size_and_empty_outputs(tmp_path, rng):
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])])
    path = str(tmp_path / "m.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    lib = tessera.build(tessera.onnx.load(path), db=False)
    runs = [(x, lib.run([x])[0]) for x in (rng.standard_normal((n, 16)).astype("float32") for n in (5, 5, 0, 2))]
    for x, y in runs:
        assert y.shape == x.shape
        np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_outputs_no_kernel_computes_are_written_at_every_run(rng):
    """A run's fresh output buffers are not zeroed (its steps write them whole): outputs that are
    a constant, the input itself, a view of it and an empty slice are written again at each run,
    static or built for every size."""
    from onnx import TensorProto, helper, numpy_helper
    const = np.arange(6, dtype="float32").reshape(2, 3)
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(const)),
             helper.make_node("Identity", ["x"], ["ident"]), helper.make_node("Slice", ["x", "one", "one"], ["empty"]),
             helper.make_node("Reshape", ["x", "shape"], ["view"])]
    inits = [numpy_helper.from_array(np.array([1], "int64"), "one"),
             numpy_helper.from_array(np.array([3, -1], "int64"), "shape")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["c", "ident", "empty", "view"]]
    for dims in ([2, 3], ["N", 3]):
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)], outputs,
                                  inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        lib = tessera.build(tessera.onnx.load(model), db=False)
        for _ in range(3):
            x = rng.standard_normal((2, 3)).astype("float32") + 5
            c, ident, empty, view = lib.run([x])
            np.testing.assert_array_equal(c, const)
            np.testing.assert_array_equal(ident, x)
            np.testing.assert_array_equal(view, x.reshape(3, 2))
            assert empty.shape == (0, 3)

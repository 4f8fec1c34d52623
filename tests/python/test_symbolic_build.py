"""One build for every size (issue 25, item 2): a model whose symbolic dimensions reach only
operators written for symbolic sizes is imported with its dimensions as variables (graph-IR types
such as float32[N, 10]), compiled once with kernels that take the sizes as arguments and a memory
plan of expressions of them, and run at any size; a model that needs a dimension as a constant is
built per size as before, saying why."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera


def save(tmp_path, nodes, inputs, outputs, initializers, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def conv_net(tmp_path, rng):
    """A small ResNet-like net of dynamic batch: conv, relu, max pool, a residual conv, global
    average pool, flatten and a fully connected layer (channel counts not multiples of the tiles)."""
    w1 = rng.standard_normal((12, 3, 3, 3)).astype("float32") * 0.3
    b1 = rng.standard_normal(12).astype("float32")
    w2 = rng.standard_normal((12, 12, 3, 3)).astype("float32") * 0.1
    wf = rng.standard_normal((10, 12)).astype("float32")
    bf = rng.standard_normal(10).astype("float32")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (wf, "wf"), (bf, "bf")]]
    return save(tmp_path, nodes, [vi("x", ["N", 3, 18, 18])], [vi("y", ["N", 10])], inits)


def dense_model(tmp_path, rng):
    """relu(x @ w + b) + x[:, :1] broadcast, with x of (N, 7), and its reference."""
    w = rng.standard_normal((7, 5)).astype("float32")
    b = rng.standard_normal(5).astype("float32")
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Sigmoid", ["x"], ["s"]),
        helper.make_node("Flatten", ["s"], ["f"], axis=1),
        helper.make_node("Mul", ["r", "scale"], ["y"]),
    ]
    scale = rng.standard_normal((1, 5)).astype("float32")
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(scale, "scale")]
    path = save(tmp_path, nodes, [vi("x", ["N", 7])], [vi("y", ["N", 5]), vi("f", ["N", 7])], inits)
    return path, lambda x: (np.maximum(x @ w + b, 0) * scale, 1 / (1 + np.exp(-x)))


def test_types_keep_the_dimension_variables(tmp_path, rng):
    mod = tessera.onnx.load(conv_net(tmp_path, rng)).symbolic()
    text = str(mod)
    assert "%x: float32[N, 3, 18, 18]" in text and "float32[N, 10]" in text
    assert "reshape(" in text and "shape=[N, 12]" in text


def test_one_build_runs_every_size_and_matches_numpy(tmp_path, rng):
    path, reference = dense_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for n in [3, 1, 17, 0, 64, 3]:
        x = rng.standard_normal((n, 7)).astype("float32")
        y, f = lib.run([x])
        ref_y, ref_f = reference(x)
        assert y.shape == (n, 5) and f.shape == (n, 7)
        np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(f, ref_f, rtol=1e-6, atol=1e-6)
    assert lib.symbolic and lib.built == [] and lib.symbolic_reason == ""
    assert all("N" in k["signature"] for k in lib.kernels)


@pytest.mark.parametrize("opt_level", [2, 3])
def test_a_conv_net_matches_the_static_build_of_each_size(tmp_path, rng, opt_level):
    mod = tessera.onnx.load(conv_net(tmp_path, rng))
    lib = tessera.build(mod, db=False, opt_level=opt_level)
    for n in [2, 1, 5, 0]:
        x = rng.standard_normal((n, 3, 18, 18)).astype("float32")
        static = tessera.build(mod.specialize({"x": (n, 3, 18, 18)}), db=False, opt_level=opt_level)
        np.testing.assert_allclose(lib.run([x])[0], static.run([x])[0], rtol=1e-4, atol=1e-4)
    assert lib.symbolic and lib.built == []


def test_tiles_are_chosen_for_the_size_hints_and_the_code_runs_at_any_size(tmp_path, rng):
    mod = tessera.onnx.load(conv_net(tmp_path, rng))
    for hint in [1, 7, 64]:
        lib = tessera.build(mod.symbolic(), db=False, size_hints={"N": hint})
        for n in [1, 3, 9]:
            x = rng.standard_normal((n, 3, 18, 18)).astype("float32")
            static = tessera.build(mod.specialize({"x": (n, 3, 18, 18)}), db=False)
            np.testing.assert_allclose(lib.run([x])[0], static.run([x])[0], rtol=1e-4, atol=1e-4)


def test_sizes_that_do_not_fit_name_the_input_and_dimension(tmp_path, rng):
    lib = tessera.build(tessera.onnx.load(conv_net(tmp_path, rng)), db=False)
    lib.run([np.zeros((1, 3, 18, 18), "float32")])
    with pytest.raises(tessera.Error, match=r"input 'x'.*dimension 2 must be 18, got 17"):
        lib.run([np.zeros((1, 3, 17, 18), "float32")])
    with pytest.raises(tessera.Error, match="expected 4 dimensions"):
        lib.run([np.zeros((3, 18, 18), "float32")])


def test_a_model_that_needs_a_dimension_as_a_constant_is_built_per_size_saying_why(tmp_path, rng):
    x_shape = helper.make_node("Shape", ["x"], ["s"])
    nodes = [x_shape, helper.make_node("Reshape", ["x", "s"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", 4])], [vi("y", ["N", 4])], [])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    x = rng.standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(lib.run([x])[0], x)
    assert not lib.symbolic and lib.built == [{"N": 3}] and lib.kernels is None
    assert "Shape" in lib.symbolic_reason or "Reshape" in lib.symbolic_reason


def test_a_symbolic_build_runs_on_opencl(tmp_path, rng):
    if not tessera.device("opencl").exists:
        pytest.skip("no OpenCL device")
    path, reference = dense_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), target="opencl", db=False)
    for n in [2, 9]:
        x = rng.standard_normal((n, 7)).astype("float32")
        y, f = lib.run([x])
        np.testing.assert_allclose(y, reference(x)[0], rtol=1e-5, atol=1e-5)
    assert lib.symbolic

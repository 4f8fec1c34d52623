"""Models with symbolic input dimensions (issue 25): tessera.onnx.load without shapes= gives a
DynamicModule, tessera.build a DynamicLibrary that runs at any size fitting the declared shapes,
built once for every size or, where the model needs its sizes as constants, once per new size; the relations between sizes are checked with errors
that name the input, the dimension and the sizes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera


def save(tmp_path, nodes, inputs, outputs, initializers=(), name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def dense_model(tmp_path, rng, per_size=False):
    """y = relu(x @ w + b) reshaped to (N, L*16) through the Shape/Slice/Concat chain exporters
    write, and its mean over the sequence; x is (N, L, 8). With `per_size`, x is first padded by
    pads computed from its shape (min(N, 1) - 1 at the end of the batch: none), which may crop (Pad
    builds those per size)."""
    w = rng.standard_normal((8, 16)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    scaled = [helper.make_node("Shape", ["x"], ["x_shape"]),
              helper.make_node("Min", ["x_shape", "ones"], ["m"]),
              helper.make_node("Sub", ["m", "ones"], ["ends"]),
              helper.make_node("Concat", ["zeros", "ends"], ["pads"], axis=0),
              helper.make_node("Pad", ["x", "pads"], ["xs"])] if per_size else []
    nodes = scaled + [
        helper.make_node("MatMul", ["xs" if per_size else "x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["r", "target"], ["flat"]),
        helper.make_node("ReduceMean", ["r"], ["mean"], axes=[1], keepdims=0),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array([0], "int64"), "zero"), numpy_helper.from_array(np.array([1], "int64"), "one"),
             numpy_helper.from_array(np.array([-1], "int64"), "minus_one"), numpy_helper.from_array(np.ones(3, "int64"), "ones"),
             numpy_helper.from_array(np.zeros(3, "int64"), "zeros")]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 8])], [vi("flat", ["N", None]), vi("mean", ["N", 16])], inits)

    def reference(x):
        r = np.maximum(x @ w + b, 0)
        return r.reshape(len(x), -1), r.mean(1)
    return path, reference


@pytest.mark.parametrize("per_size", [False, True], ids=["for_every_size", "per_size"])
def test_a_dynamic_model_runs_at_every_size_built_once_or_once_per_size(tmp_path, rng, per_size):
    path, reference = dense_model(tmp_path, rng, per_size)
    mod = tessera.onnx.load(path)
    assert isinstance(mod, tessera.DynamicModule)
    assert mod.inputs == [{"name": "x", "shape": ("N", "L", 8), "dtype": "float32"}]
    lib = tessera.build(mod)
    assert isinstance(lib, tessera.DynamicLibrary) and lib.built == []
    for n, l in [(1, 1), (2, 5), (3, 17), (2, 5), (1, 1)]:
        x = rng.standard_normal((n, l, 8)).astype("float32")
        flat, mean = lib.run([x])
        ref_flat, ref_mean = reference(x)
        np.testing.assert_allclose(flat, ref_flat, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-5)
    assert lib.symbolic != per_size
    assert lib.built == ([{"L": 1, "N": 1}, {"L": 5, "N": 2}, {"L": 17, "N": 3}] if per_size else [])
    x = rng.standard_normal((4, 2, 8)).astype("float32")
    np.testing.assert_allclose(lib.run({"x": x})[1], reference(x)[1], rtol=1e-5, atol=1e-5)


def test_shapes_fix_some_dimensions_and_a_size_can_be_built_and_exported(tmp_path, rng):
    path, reference = dense_model(tmp_path, rng)
    static = tessera.onnx.load(path, shapes={"x": (2, 3, 8)})
    assert isinstance(static, tessera.Module)  # every dimension fixed: a static module as before
    lib = tessera.build(tessera.onnx.load(path))
    size = lib.specialize({"x": (2, 3, 8)})
    assert isinstance(size, tessera.Library) and lib.built == [{"L": 3, "N": 2}]
    size.export(str(tmp_path / "m.so"))
    x = rng.standard_normal((2, 3, 8)).astype("float32")
    np.testing.assert_allclose(tessera.load(str(tmp_path / "m.so")).run([x])[0], reference(x)[0], rtol=1e-5, atol=1e-5)
    # The build for every size exports before any run made it; a model built per size cannot.
    lib.export(str(tmp_path / "all.so"))
    x = rng.standard_normal((3, 4, 8)).astype("float32")
    np.testing.assert_allclose(tessera.load(str(tmp_path / "all.so")).run([x])[0], reference(x)[0], rtol=1e-5, atol=1e-5)
    (tmp_path / "per_size").mkdir()
    per_size = tessera.build(tessera.onnx.load(dense_model(tmp_path / "per_size", rng, per_size=True)[0]))
    with pytest.raises(tessera.Error, match=r"export: the model is built per size \(.*\); export the build of one "
                                            r"size: lib.specialize\(\{name: shape\}\).export\(path\)"):
        per_size.export(str(tmp_path / "per_size.so"))


def test_sizes_that_do_not_fit_are_errors_naming_the_input_and_dimension(tmp_path, rng):
    path, _ = dense_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path))
    with pytest.raises(tessera.Error, match=r"model: input 'x' \(#0\): dimension 2 must be 8, got 7"):
        lib.run([np.zeros((1, 2, 7), "float32")])
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): expected 3 dimensions \(N, L, 8\), got 2"):
        lib.run([np.zeros((2, 8), "float32")])
    with pytest.raises(tessera.Error, match="the model has no input 'y'"):
        lib.run({"y": np.zeros((1, 1, 8), "float32")})
    with pytest.raises(tessera.Error, match="input 'x' .* is not given"):
        lib.run({})
    with pytest.raises(tessera.Error, match="expected dtype float32|float32.*got.*float64"):
        lib.run([np.zeros((1, 1, 8), "float64")])


def test_relations_between_inputs_are_checked_at_each_size(tmp_path, rng):
    # a (N, L) + b (N, M): L and M must agree or broadcast; N is shared by name. The build for
    # every size takes M as L; M = 1 is built for its sizes, and M = 4 is its error.
    path = save(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", ["N", "L"]), vi("b", ["N", "M"])],
                [vi("y", ["N", None])])
    lib = tessera.build(tessera.onnx.load(path))
    a, b = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 1)).astype("float32")
    np.testing.assert_array_equal(lib.run([a, b])[0], a + b)
    with pytest.raises(tessera.Error, match=r"input 'b' \(#1\): dimension 0 must be N = 2 \(from input 'a' dimension 0\), "
                                            r"got 3"):
        lib.run([a, np.zeros((3, 3), "float32")])
    with pytest.raises(tessera.Error, match=r"input 'b' \(#1\): dimension 1 must be L = 3 \(from 'a' dimension 1\), got 4"):
        lib.run([a, np.zeros((2, 4), "float32")])
    np.testing.assert_array_equal(lib.run([a, b])[0], a + b)  # a failed size leaves the others working


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_a_dimension_the_weights_fix_is_a_constant_checked_at_each_call(tmp_path, rng, exported):
    """Every dimension declared symbolic, as some exporters write them: a convolution's channels
    (C) and a product's inner dimension (K) take the weights' sizes, so the model still builds once
    for every size (and a module holds it); an input of other channels is an error naming it."""
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    m = rng.standard_normal((6, 5)).astype("float32")
    path = save(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
                           helper.make_node("MatMul", ["a", "m"], ["z"])],
                [vi("x", ["N", "C", "H", "W"]), vi("a", ["B", "K"])], [vi("y", None), vi("z", None)],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(m, "m")])
    lib = tessera.build(tessera.onnx.load(path))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    for n, h, width, b in [(2, 6, 7, 3), (1, 1, 9, 1)]:
        x = rng.standard_normal((n, 3, h, width)).astype("float32")
        a = rng.standard_normal((b, 6)).astype("float32")
        y, z = lib.run([x, a])
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype("float64")
        windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
        np.testing.assert_allclose(y, np.einsum("nchwij,ocij->nohw", windows, w), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(z, a @ m, rtol=1e-5, atol=1e-5)
    if not exported:
        assert lib.symbolic, lib.symbolic_reason
    with pytest.raises(tessera.Error, match=r"input 'x'.*expected shape \(N, 3, H, W\), got \(2, 4, 6, 7\)"):
        lib.run([np.zeros((2, 4, 6, 7), "float32"), a])
    with pytest.raises(tessera.Error, match=r"input 'a'.*expected shape \(B, 6\), got \(1, 7\)"):
        lib.run([x, np.zeros((1, 7), "float32")])


@pytest.mark.parametrize("op", ["Gemm", "LSTM"])
def test_a_gemm_depth_or_an_lstm_input_size_declared_symbolic_takes_the_weights_size(tmp_path, rng, op):
    """Gemm's depth and an LSTM's input size, declared symbolic, take the weights' sizes: the model
    builds once for every other size (the LSTM over a sequence of symbolic length as a program of
    steps) and exports; another size is an error naming the input."""
    if op == "Gemm":
        nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
        inits = {"w": rng.standard_normal((5, 6)), "b": rng.standard_normal(5)}
        dims, sizes, wrong = ["B", "K"], [(3, 6), (1, 6)], (2, 7)
    else:
        nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=4)]
        inits = {"W": rng.standard_normal((1, 16, 5)), "R": rng.standard_normal((1, 16, 4))}
        dims, sizes, wrong = ["L", "N", "I"], [(7, 2, 5), (1, 3, 5)], (2, 2, 6)
    path = save(tmp_path, nodes, [vi("x", dims)], [vi("y", None)],
                [numpy_helper.from_array(v.astype("float32"), k) for k, v in inits.items()])
    lib = tessera.build(tessera.onnx.load(path))
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for shape in sizes:
        x = rng.standard_normal(shape).astype("float32")
        want = tessera.build(tessera.onnx.load(path, shapes={"x": shape})).run([x])[0]
        for runner in (lib, module):
            np.testing.assert_allclose(runner.run([x])[0], want, rtol=1e-5, atol=1e-5)
    assert lib.symbolic, lib.symbolic_reason
    expected = r"\(B, 6\)" if op == "Gemm" else r"\(L, N, 5\)"
    with pytest.raises(tessera.Error, match=r"input 'x'.*expected shape " + expected):
        lib.run([np.zeros(wrong, "float32")])


def sizes_in_float_model(tmp_path, rng, by_scales):
    """x (N, 3, H, W) resized to computed sizes, then a 3x3 convolution. The sizes are computed in
    float from the input's shape, as exporters write them: by_scales, the scales [1, 1, 2H/H,
    (3W//2)/W] (a cast of the shape, a division, a concat with ones: F.interpolate of a scale
    computed from the sizes); else the sizes [N, 3, floor(H * 1.5), floor(W * 2)] (a cast, a
    product, a floor and a cast back: recompute_scale_factor)."""
    c = lambda name, v: numpy_helper.from_array(np.asarray(v), name)
    inits = [c("w", rng.standard_normal((4, 3, 3, 3)).astype("float32")), c("b", np.array([2], "int64")),
             c("e", np.array([4], "int64")), c("z", np.array([0], "int64")), c("ones", np.ones(2, "float32")),
             c("num", np.array([2, 3], "int64")), c("den", np.array([1, 2], "int64")),
             c("f", np.array([1.5, 2.0], "float32"))]
    head = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Slice", ["shape", "b", "e"], ["hw"])]
    if by_scales:
        nodes = head + [helper.make_node("Mul", ["hw", "num"], ["m"]), helper.make_node("Div", ["m", "den"], ["new"]),
                        helper.make_node("Cast", ["new"], ["fnew"], to=TensorProto.FLOAT),
                        helper.make_node("Cast", ["hw"], ["fold"], to=TensorProto.FLOAT),
                        helper.make_node("Div", ["fnew", "fold"], ["ratio"]),
                        helper.make_node("Concat", ["ones", "ratio"], ["s"], axis=0),
                        helper.make_node("Resize", ["x", "", "s"], ["r"], mode="linear")]
    else:
        nodes = head + [helper.make_node("Slice", ["shape", "z", "b"], ["nc"]),
                        helper.make_node("Cast", ["hw"], ["fhw"], to=TensorProto.FLOAT),
                        helper.make_node("Mul", ["fhw", "f"], ["scaled"]), helper.make_node("Floor", ["scaled"], ["fl"]),
                        helper.make_node("Cast", ["fl"], ["ihw"], to=TensorProto.INT64),
                        helper.make_node("Concat", ["nc", "ihw"], ["sizes"], axis=0),
                        helper.make_node("Resize", ["x", "", "", "sizes"], ["r"], mode="linear")]
    nodes.append(helper.make_node("Conv", ["r", "w"], ["y"]))
    return save(tmp_path, nodes, [vi("x", ["N", 3, "H", "W"])], [vi("y", None)], inits)


@pytest.mark.parametrize("by_scales", [True, False], ids=["scales", "sizes"])
def test_sizes_computed_in_float_from_the_sizes_are_computed_as_the_model_runs(tmp_path, rng, by_scales):
    """The import's shape arithmetic keeps integer expressions of the sizes, so a scale or size
    computed from them in float is a value the run computes: the model is a program whose parts are
    built once for every size (and a module holds it), matching the static build of each size;
    given fixed shapes, the same model folds them and is one graph."""
    path = sizes_in_float_model(tmp_path, rng, by_scales)
    lib = tessera.build(tessera.onnx.load(path))
    assert isinstance(lib, tessera.ProgramLibrary)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for shape in [(2, 3, 10, 12), (1, 3, 5, 7), (1, 3, 2, 3)]:
        x = rng.standard_normal(shape).astype("float32")
        static = tessera.build(tessera.onnx.load(path, shapes={"x": shape}))
        assert not isinstance(static, tessera.ProgramLibrary)
        want = static.run([x])[0]
        h, w = (2 * shape[2], 3 * shape[3] // 2) if by_scales else (int(shape[2] * 1.5), 2 * shape[3])
        assert want.shape == (shape[0], 4, h - 2, w - 2)
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], want, rtol=1e-5, atol=1e-5)
    assert [signatures for _, signatures in lib.builds] == [["every size"]] * len(lib.builds)


def test_unsupported_operators_are_named_at_load_not_at_the_first_run(tmp_path):
    path = save(tmp_path, [helper.make_node("Bernoulli", ["x"], ["y"], name="nz")], [vi("x", ["N"])], [vi("y", ["N"])])
    with pytest.raises(tessera.Error, match=r"(?s)unsupported operator.*Bernoulli \(opset 13\).* node 'nz'"):
        tessera.onnx.load(path)


def test_a_pytorch_text_classifier_exported_with_dynamic_axes_builds_once_for_every_size(tmp_path):
    """As a user exports one today (torch.onnx.export with dynamic batch and sequence, opset 17):
    token and position embeddings (nn.Embedding, torch.arange), a TransformerEncoder (its
    LayerNormalization and attention reshapes) and the first token's state classified. One build
    serves every size and matches PyTorch, here and exported; a sequence of no tokens has no first
    token, which a run refuses naming the Gather. The same for OpenCL, built for every size at the
    default size hints."""
    torch = pytest.importorskip("torch")
    from torch_numpy import array, tensor

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = torch.nn.Embedding(100, 32), torch.nn.Embedding(64, 32)
            layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = torch.nn.Linear(32, 5)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1]).unsqueeze(0)
            return self.head(self.encoder(self.tokens(ids) + self.positions(positions))[:, 0])

    torch.manual_seed(0)
    model = Classifier().eval()
    path = str(tmp_path / "classifier.onnx")
    torch.onnx.export(model, (tensor(np.zeros((2, 7), "int64")),), path, input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "N", 1: "L"}, "logits": {0: "N"}}, opset_version=17)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    rng = np.random.default_rng(0)
    sizes = [(2, 7), (1, 1), (3, 20), (1, 64)]
    for n, length in sizes:
        ids = rng.integers(0, 100, (n, length)).astype("int64")
        with torch.no_grad():
            want = array(model(tensor(ids)))
        np.testing.assert_allclose(lib.run([ids])[0], want, rtol=1e-5, atol=1e-5)
    assert lib.symbolic and lib.symbolic_reason == "" and lib.built == []
    refused = r"take \(node '/Gather_1'\) reads an element along a dimension that must have one: L is 0 at N = 2, L = 0"
    with pytest.raises(tessera.Error, match=refused):
        lib.run([np.zeros((2, 0), "int64")])
    lib.export(tmp_path / "classifier.so")
    loaded = tessera.load(tmp_path / "classifier.so")
    ids = rng.integers(0, 100, (3, 11)).astype("int64")
    np.testing.assert_array_equal(loaded.run([ids])[0], lib.run([ids])[0])
    with pytest.raises(tessera.Error, match=refused):
        loaded.run([np.zeros((2, 0), "int64")])
    # For OpenCL, exported before any run (its tiles chosen at the default size hints): the
    # attention products, which the graph reshaped at symbolic sizes, are not register-tiled
    # through the reshape (the region a tile needs has no constant size there).
    cl = tessera.build(tessera.onnx.load(path), target="opencl", db=False)
    cl.export(tmp_path / "classifier_cl.so")
    on_device = tessera.load(tmp_path / "classifier_cl.so")
    for n, length in [(3, 11), (1, 64)]:
        ids = rng.integers(0, 100, (n, length)).astype("int64")
        np.testing.assert_allclose(on_device.run([ids])[0], lib.run([ids])[0], rtol=1e-5, atol=1e-6)

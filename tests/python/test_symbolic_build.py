"""One build for every size (issue 25, item 2): a model whose symbolic dimensions reach only
operators written for symbolic sizes is imported with its dimensions as variables (graph-IR types
such as float32[N, 10]), compiled once with kernels that take the sizes as arguments and a memory
plan of expressions of them, and run at any size, shapes computed from the input's (Shape, shape
arithmetic, Reshape) included; a model that needs a dimension as a constant is built per size as
before, saying why."""
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


def needs_constant_shape(tmp_path, name="model.onnx"):
    """x + 1 of (N, 4), x first padded at the end of its rows by pads computed from its shape
    (min(N, 1) - 1: none where it has rows): Pad needs its pads as constants, or provably not negative."""
    inits = [numpy_helper.from_array(np.ones(2, "int64"), "ones"), numpy_helper.from_array(np.ones(1, "float32"), "one"),
             numpy_helper.from_array(np.zeros(2, "int64"), "zeros")]
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Min", ["s", "ones"], ["m"]),
             helper.make_node("Sub", ["m", "ones"], ["ends"]), helper.make_node("Concat", ["zeros", "ends"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["t"]), helper.make_node("Add", ["t", "one"], ["y"])]
    return save(tmp_path, nodes, [vi("x", ["N", 4])], [vi("y", ["N", 4])], inits, name=name)


def embedding_model(tmp_path, rng):
    """What transformer exporters write around their layers, from the sizes of ids (N, L): token
    embeddings (Gather of a table by ids), positions (Range to L, Gather), a mask of ones
    (ConstantOfShape of the ids' shape) and a bias Expanded to the embeddings' shape; and every
    second position from 3 (Range(3, L, 2)). Its numpy reference."""
    table = rng.standard_normal((50, 4)).astype("float32")
    positions = rng.standard_normal((64, 4)).astype("float32")
    bias = rng.standard_normal((1, 1, 4)).astype("float32")
    two = helper.make_tensor("value", TensorProto.FLOAT, [1], [2.0])
    ints = {name: np.array(v, "int64") for name, v in [("zero", 0), ("one", 1), ("three", 3), ("two_i", 2)]}
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(positions, "positions"),
             numpy_helper.from_array(bias, "bias"), numpy_helper.from_array(np.array([4], "int64"), "four")]
    inits += [numpy_helper.from_array(v, k) for k, v in ints.items()]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["tokens"]),
             helper.make_node("Shape", ["ids"], ["s"]), helper.make_node("Gather", ["s", "one"], ["L"]),
             helper.make_node("Range", ["zero", "L", "one"], ["pos"]),
             helper.make_node("Gather", ["positions", "pos"], ["at"]),
             helper.make_node("ConstantOfShape", ["s"], ["mask"], value=two),
             helper.make_node("Unsqueeze", ["mask", "minus_one"], ["mask3"]),
             helper.make_node("Concat", ["s", "four"], ["s3"], axis=0),
             helper.make_node("Expand", ["bias", "s3"], ["b"]),
             helper.make_node("Add", ["tokens", "at"], ["h"]), helper.make_node("Mul", ["h", "mask3"], ["hm"]),
             helper.make_node("Add", ["hm", "b"], ["y"]),
             helper.make_node("Range", ["three", "L", "two_i"], ["every_second"])]
    inits.append(numpy_helper.from_array(np.array([-1], "int64"), "minus_one"))
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "L"])],
                [vi("y", ["N", "L", 4]), helper.make_tensor_value_info("every_second", TensorProto.INT64, [None])], inits,
                name="embedding.onnx")

    def reference(ids):
        y = (table[ids] + positions[:ids.shape[1]]) * 2 + bias
        return y, np.arange(3, ids.shape[1], 2)
    return path, reference


@pytest.mark.parametrize("target", ["llvm", "opencl"])
def test_tensors_made_from_the_sizes_are_built_once_for_every_size(tmp_path, rng, target):
    """Gather by ids of symbolic shape, Range to a limit of the sizes, ConstantOfShape and Expand
    to shapes of the sizes compile once for every size (the arange and broadcast_to ops)."""
    path, reference = embedding_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), target=target, db=False)
    for n, length in [(2, 5), (1, 1), (3, 0), (1, 17), (0, 4)]:
        ids = rng.integers(0, 50, (n, length)).astype("int64")
        for got, want in zip(lib.run([ids]), reference(ids)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert lib.symbolic and lib.symbolic_reason == "" and lib.built == []
    text = str(tessera.onnx.load(path).symbolic())
    assert "arange(" in text and "shape=[L]" in text and "int64[max(L // 2 - 1, 0)]" in text


@pytest.mark.parametrize("target", ["llvm", "opencl"])
def test_shape_values_computed_with_as_tensors_are_built_once_for_every_size(tmp_path, rng, target):
    """y = x / sqrt(L), L read from x's shape (Shape, Gather, Cast to float, Sqrt: attention's
    scale as exporters write it), and x's shape itself as an output: the shape_values op computes
    them from the sizes at each call, here and in an exported module."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["l"], axis=0),
             helper.make_node("Cast", ["l"], ["lf"], to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["lf"], ["r"]),
             helper.make_node("Div", ["x", "r"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", "L"])],
                [vi("y", ["N", "L"]), helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                [numpy_helper.from_array(np.array(1, "int64"), "one")])
    lib = tessera.build(tessera.onnx.load(path), target=target, db=False)
    lib.export(tmp_path / "m.so")
    loaded = tessera.load(tmp_path / "m.so")
    for n, length in [(2, 5), (1, 16), (3, 1)]:
        x = rng.standard_normal((n, length)).astype("float32")
        for run in [lib.run, loaded.run]:
            y, shape = run([x])
            np.testing.assert_allclose(y, x / np.sqrt(np.float32(length)), rtol=1e-6)
            np.testing.assert_array_equal(shape, [n, length])
    assert lib.symbolic and lib.symbolic_reason == "" and lib.built == []
    assert "shape_values(dims=[N, L]" in str(tessera.onnx.load(path).symbolic())


def test_positions_after_a_cache_of_past_tokens_are_built_once_for_every_size(tmp_path, rng):
    """y = x + table[arange(P, P + L)] for x of (N, L, 4) and a cache of (N, P, 4): a decoder's
    positions after P past tokens (Range from one size to a sum of two)."""
    table = rng.standard_normal((64, 4)).astype("float32")
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array(1, "int64"), "one"),
             numpy_helper.from_array(np.array(1, "int64"), "axis1")]
    nodes = [helper.make_node("Shape", ["past"], ["ps"]), helper.make_node("Gather", ["ps", "axis1"], ["p"]),
             helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Gather", ["xs", "axis1"], ["l"]),
             helper.make_node("Add", ["p", "l"], ["end"]), helper.make_node("Range", ["p", "end", "one"], ["pos"]),
             helper.make_node("Gather", ["table", "pos"], ["e"], axis=0), helper.make_node("Add", ["x", "e"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 4]), vi("past", ["N", "P", 4])], [vi("y", ["N", "L", 4])], inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for n, length, p in [(2, 3, 5), (1, 1, 0), (3, 4, 60), (1, 0, 2)]:
        x = rng.standard_normal((n, length, 4)).astype("float32")
        y, = lib.run([x, np.zeros((n, p, 4), "float32")])
        np.testing.assert_array_equal(y, x + table[np.arange(p, p + length)])
    assert lib.symbolic and lib.symbolic_reason == "" and lib.built == []


def test_tiles_by_counts_of_the_sizes_are_built_once_for_every_size(tmp_path, rng):
    """y = x + Tile(cls, [N, 1]) for x of (N, 4) (a class token repeated for the batch, as
    torch's repeat exports it) and z = Tile(x, [1, L]) for L from another input's shape."""
    cls = rng.standard_normal((1, 4)).astype("float32")
    inits = [numpy_helper.from_array(cls, "cls"), numpy_helper.from_array(np.array([0], "int64"), "zero"),
             numpy_helper.from_array(np.array([1], "int64"), "one")]
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"]),
             helper.make_node("Concat", ["n", "one"], ["rows"], axis=0),
             helper.make_node("Tile", ["cls", "rows"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"]),
             helper.make_node("Shape", ["w"], ["ws"]), helper.make_node("Gather", ["ws", "zero"], ["l"]),
             helper.make_node("Concat", ["one", "l"], ["cols"], axis=0), helper.make_node("Tile", ["x", "cols"], ["z"])]
    path = save(tmp_path, nodes, [vi("x", ["N", 4]), vi("w", ["L"])], [vi("y", ["N", 4]), vi("z", ["N", None])], inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for n, length in [(3, 2), (1, 1), (2, 0), (0, 3)]:
        x = rng.standard_normal((n, 4)).astype("float32")
        y, z = lib.run([x, np.zeros(length, "float32")])
        np.testing.assert_array_equal(y, x + np.tile(cls, (n, 1)))
        np.testing.assert_array_equal(z, np.tile(x, (1, length)))
    assert lib.symbolic and lib.symbolic_reason == "" and lib.built == []


def test_a_gather_along_a_dimension_of_symbolic_size_needs_an_element_there(tmp_path, rng):
    """x[:, -1] and x[:, [0, 0]] of x (N, L, 4): Gather along L, which a call must make at least 1;
    and x[ids] by ids of symbolic length K along the symbolic N, which may be empty when ids are."""
    inits = [numpy_helper.from_array(np.array(-1, "int64"), "last"),
             numpy_helper.from_array(np.array([0, 0], "int64"), "firsts")]
    nodes = [helper.make_node("Gather", ["x", "last"], ["y"], axis=1),
             helper.make_node("Gather", ["x", "firsts"], ["z"], axis=1)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 4])], [vi("y", ["N", 4]), vi("z", ["N", 2, 4])], inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for n, length in [(2, 5), (1, 1), (3, 2), (0, 3)]:
        x = rng.standard_normal((n, length, 4)).astype("float32")
        y, z = lib.run([x])
        np.testing.assert_array_equal(y, x[:, -1])
        np.testing.assert_array_equal(z, x[:, [0, 0]])
    assert lib.symbolic
    with pytest.raises(tessera.Error, match=r"take \(node 'y'\) reads an element along a dimension that must have "
                                            r"one: L is 0 at N = 2, L = 0"):
        lib.run([np.zeros((2, 0, 4), "float32")])
    rows = save(tmp_path, [helper.make_node("Gather", ["x", "ids"], ["y"], axis=0, name="rows")],
                [vi("x", ["N", 4]), helper.make_tensor_value_info("ids", TensorProto.INT64, ["K"])],
                [vi("y", ["K", 4])], [], name="rows.onnx")
    lib = tessera.build(tessera.onnx.load(rows), db=False)
    for n, ids in [(3, [2, 0, -1]), (3, []), (0, [])]:
        x = rng.standard_normal((n, 4)).astype("float32")
        np.testing.assert_array_equal(lib.run([x, np.array(ids, "int64")])[0], x[ids])
    assert lib.symbolic
    with pytest.raises(tessera.Error, match=r"take \(node 'rows'\) reads an element along a dimension that must have "
                                            r"one: N is 0 at N = 0, K = 1"):
        lib.run([np.zeros((0, 4), "float32"), np.zeros(1, "int64")])


def test_triangles_of_symbolic_size_are_built_once_for_every_size(tmp_path, rng):
    """Trilu of (N, L, L), as a causal mask's torch.triu exports (the upper triangle above the
    diagonal, the lower one with it)."""
    inits = [numpy_helper.from_array(np.array(1, "int64"), "one"), numpy_helper.from_array(np.array(0, "int64"), "zero")]
    nodes = [helper.make_node("Trilu", ["x", "one"], ["upper"], upper=1),
             helper.make_node("Trilu", ["x", "zero"], ["lower"], upper=0)]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", "L"])], [vi("upper", ["N", "L", "L"]), vi("lower", ["N", "L", "L"])],
                inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for n, length in [(2, 5), (1, 1), (1, 17), (0, 3)]:
        x = rng.standard_normal((n, length, length)).astype("float32")
        upper, lower = lib.run([x])
        np.testing.assert_array_equal(upper, np.triu(x, 1))
        np.testing.assert_array_equal(lower, np.tril(x))
    assert lib.symbolic


def test_an_expand_the_sizes_do_not_decide_is_built_per_size(tmp_path, rng):
    nodes = [helper.make_node("Expand", ["x", "to"], ["y"])]
    inits = [numpy_helper.from_array(np.array([3, 4], "int64"), "to")]
    lib = tessera.build(tessera.onnx.load(save(tmp_path, nodes, [vi("x", ["N", 4])], [vi("y", [3, 4])], inits)),
                        db=False)
    for n in [1, 3]:
        x = rng.standard_normal((n, 4)).astype("float32")
        np.testing.assert_array_equal(lib.run([x])[0], np.broadcast_to(x, (3, 4)))
    assert not lib.symbolic and "neither 1 nor provably equal" in lib.symbolic_reason
    with pytest.raises(tessera.Error, match="Expand"):
        lib.run([np.zeros((2, 4), "float32")])


def test_a_model_that_needs_a_dimension_as_a_constant_is_built_per_size_saying_why(tmp_path, rng):
    lib = tessera.build(tessera.onnx.load(needs_constant_shape(tmp_path)), db=False)
    x = rng.standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(lib.run([x])[0], x + 1)
    assert not lib.symbolic and lib.built == [{"N": 3}] and lib.kernels is None
    assert "Pad" in lib.symbolic_reason and "the pad min(N, 1) - 1 of pads (0, 0, min(N, 1) - 1, 0) may be negative" \
        in lib.symbolic_reason, lib.symbolic_reason


def attention_model(tmp_path, rng):
    """Self-attention over x of (N, L, 16) with 2 heads of 8, its reshapes computed from x's shape
    as exporters write them (Shape, Gather, shape arithmetic, Unsqueeze, Concat, Reshape), then
    the mean over the features subtracted; and its numpy reference."""
    w = rng.standard_normal((16, 16)).astype("float32") * 0.3
    def const(name, values):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, "int64"), name))
    nodes = [
        const("zero", 0), const("one", 1), const("two", 2), const("axis0", [0]), const("heads", [2]),
        const("head_dim", [8]), const("rest", [-1]),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"]),
        helper.make_node("Gather", ["s", "one"], ["l"]),
        # l * 2 / 2: division of a symbolic size, exact here
        helper.make_node("Mul", ["l", "two"], ["l2"]), helper.make_node("Div", ["l2", "two"], ["l1"]),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["un"]), helper.make_node("Unsqueeze", ["l1", "axis0"], ["ul"]),
        helper.make_node("Concat", ["un", "ul", "heads", "head_dim"], ["split_shape"], axis=0),
        helper.make_node("Concat", ["un", "ul", "rest"], ["merged_shape"], axis=0),
        helper.make_node("MatMul", ["x", "w"], ["q"]),
        helper.make_node("Reshape", ["q", "split_shape"], ["qh"]),
        helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["qh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),  # (N, 2, L, L)
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "qt"], ["o"]),  # a reduction over L
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merged_shape"], ["merged"]),  # -1 is (N*L*16) / (N*L)
        helper.make_node("ReduceMean", ["merged"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["merged", "mean"], ["y"]),
    ]
    path = save(tmp_path, nodes, [vi("x", ["N", "L", 16])], [vi("y", ["N", "L", 16])],
                [numpy_helper.from_array(w, "w")], name="attention.onnx")

    def reference(x):
        q = (x @ w).reshape(x.shape[0], x.shape[1], 2, 8).transpose(0, 2, 1, 3)
        scores = q @ q.transpose(0, 1, 3, 2)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        merged = (p @ q).transpose(0, 2, 1, 3).reshape(x.shape)
        return merged - merged.mean(-1, keepdims=True)
    return path, reference


def test_attention_with_shapes_computed_from_the_input_builds_once_for_every_size(tmp_path, rng):
    path, reference = attention_model(tmp_path, rng)
    mod = tessera.onnx.load(path)
    assert "shape=[N, L, 2, 8]" in str(mod.symbolic())  # the target computed from the shape
    for level in [2, 3]:
        lib = tessera.build(mod, db=False, opt_level=level)
        for n, l in [(2, 5), (1, 16), (3, 1), (1, 33)]:
            x = rng.standard_normal((n, l, 16)).astype("float32")
            np.testing.assert_allclose(lib.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)
        assert lib.symbolic and lib.built == []


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


def test_a_module_of_symbolic_sizes_is_exported_and_runs_at_any_size(tmp_path, rng):
    mod = tessera.onnx.load(conv_net(tmp_path, rng))
    lib = tessera.build(mod, db=False)
    x1 = rng.standard_normal((1, 3, 18, 18)).astype("float32")
    lib.run([x1])  # the build for every size is made on the first run
    lib.export(tmp_path / "m.so")
    loaded = tessera.load(tmp_path / "m.so")
    assert loaded.inputs == [{"name": "x", "shape": ("N", 3, 18, 18), "dtype": "float32"}]
    for n in [3, 1, 0]:
        x = rng.standard_normal((n, 3, 18, 18)).astype("float32")
        np.testing.assert_array_equal(loaded.run([x])[0], lib.run([x])[0])
    with pytest.raises(tessera.Error, match=r"input .x.: expected shape \(N, 3, 18, 18\), got \(2, 3, 18, 19\)"):
        loaded.run([np.zeros((2, 3, 18, 19), "float32")])
    # Exported before any run (as for a GPU this machine lacks): built then, at the given hints.
    tessera.build(mod, db=False, size_hints={"N": 4}).export(tmp_path / "m_before_run.so")
    before_run = tessera.load(tmp_path / "m_before_run.so")
    for n in [4, 2]:
        x = rng.standard_normal((n, 3, 18, 18)).astype("float32")
        np.testing.assert_allclose(before_run.run([x])[0], lib.run([x])[0], rtol=1e-5, atol=1e-5)


def test_the_c_api_passes_the_sizes_with_the_data(tmp_path, rng):
    import package_under_test
    root, build = package_under_test.ROOT, package_under_test.BUILD
    lib = tessera.build(tessera.onnx.load(conv_net(tmp_path, rng)), db=False)
    lib.run([np.zeros((1, 3, 18, 18), "float32")])
    lib.export(tmp_path / "m.so")
    program = tmp_path / "run.c"
    program.write_text(r'''#include <stdio.h>
#include <stdlib.h>
#include "tessera_runtime.h"
int main(void) {
  TesseraModule* m;
  TesseraTensorInfo info;
  if (tessera_module_load("m.so", &m) || tessera_module_input_info(m, 0, &info)) return 1;
  printf("input %s (%lld, %lld, %lld, %lld) %zu bytes\n", info.name, (long long)info.shape[0],
         (long long)info.shape[1], (long long)info.shape[2], (long long)info.shape[3], info.nbytes);
  for (int n = 1; n <= 3; n += 2) {
    int64_t shape[4] = {n, 3, 18, 18};
    float* x = calloc((size_t)n * 3 * 18 * 18, sizeof(float));
    for (int i = 0; i < n * 3 * 18 * 18; ++i) x[i] = (float)(i % 7) - 3;
    TesseraTensor in = {x, TESSERA_FLOAT32, 4, shape}, out;
    if (tessera_module_set_input(m, 0, &in, TESSERA_COPY) || tessera_module_run(m) ||
        tessera_module_get_output(m, 0, &out)) {
      puts(tessera_last_error());
      return 1;
    }
    printf("batch %d: output (%lld, %lld) first %.6f\n", n, (long long)out.shape[0], (long long)out.shape[1],
           ((float*)out.data)[0]);
    free(x);
  }
  tessera_module_free(m);
  return 0;
}
''')
    import subprocess
    subprocess.run(["cc", str(program), "-I", f"{root}/runtime", f"{build}/lib/libtessera_runtime.a", "-lstdc++", "-lm",
                    "-pthread", "-ldl", "-o", str(tmp_path / "run")], check=True)
    out = subprocess.run([str(tmp_path / "run")], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert "input x (-1, 3, 18, 18) 0 bytes" in out
    for n in [1, 3]:
        x = ((np.arange(n * 3 * 18 * 18) % 7) - 3).astype("float32").reshape(n, 3, 18, 18)
        assert f"batch {n}: output ({n}, 10) first {lib.run([x])[0][0, 0]:.6f}" in out


def test_the_command_line_compiles_for_every_size_or_says_which_operator_needs_a_shape(tmp_path, rng):
    import subprocess
    from package_under_test import program
    tessera_cli = program("tessera")
    model = conv_net(tmp_path, rng)
    out = subprocess.run([tessera_cli, "compile", model, "-o", str(tmp_path / "m.so")], capture_output=True, text=True,
                         check=True).stdout
    assert "for every size" in out and "input  x: float32(N, 3, 18, 18)" in out
    x = rng.standard_normal((5, 3, 18, 18)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    out = subprocess.run([tessera_cli, "run", str(tmp_path / "m.so"), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                          str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "output 0: float32(5, 10)" in out
    np.testing.assert_allclose(np.load(tmp_path / "output0.npy"), tessera.build(tessera.onnx.load(model), db=False).run([x])[0],
                               rtol=1e-5, atol=1e-5)
    shaped = needs_constant_shape(tmp_path, name="shaped.onnx")
    proc = subprocess.run([tessera_cli, "compile", shaped], capture_output=True, text=True)
    assert proc.returncode != 0 and "cannot be compiled for every size" in proc.stderr and "--shape" in proc.stderr


def test_threads_running_one_build_at_different_sizes_each_get_their_own_results(tmp_path, rng):
    import threading
    path, reference = dense_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    inputs = {n: rng.standard_normal((n, 7)).astype("float32") for n in [1, 8, 33]}
    lib.run([inputs[1]])
    errors = []

    def work(n):
        for _ in range(200):
            y = lib.run([inputs[n]])[0]
            if y.shape != (n, 5) or not np.allclose(y, reference(inputs[n])[0], rtol=1e-5, atol=1e-5):
                errors.append(n)
                return

    threads = [threading.Thread(target=work, args=(n,)) for n in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lib.symbolic and errors == []


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_a_row_of_symbolic_length_is_buffered_on_the_stack_or_the_heap_by_its_size(tmp_path, rng, target):
    """Softmax keeps a row of symbolic length in a row buffer: on the stack for short rows, on the
    heap past 256 KiB (80000 floats), in every row of a parallel loop."""
    path = save(tmp_path, [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", ["N", "L"])],
                [vi("y", ["N", "L"])], [])
    lib = tessera.build(tessera.onnx.load(path), target=target, db=False)
    for n, length in [(3, 40), (2, 80000), (64, 7), (1, 1)]:
        x = rng.standard_normal((n, length)).astype("float32")
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(lib.run([x])[0], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert lib.symbolic


def test_a_module_whose_slots_many_tensors_share_loads(tmp_path, rng):
    """80 products of symbolic rows, each wider than the last, share two arena slots: each slot's
    size is the largest of its tensors' sizes as a balanced tree, shallow enough for the module
    loader (a chain of 40 maxima was refused as corrupt)."""
    weights = [(rng.standard_normal((k, k + 1)) / np.sqrt(k)).astype("float32") for k in range(8, 88)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", f"w{i}"], [f"h{i}"])
             for i in range(len(weights))]
    inits = [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)]
    path = save(tmp_path, nodes, [vi("x", ["N", 8])], [vi(f"h{len(weights) - 1}", ["N", 88])], inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.run([np.zeros((3, 8), "float32")])
    lib.export(tmp_path / "m.so")
    module = tessera.load(tmp_path / "m.so")
    for n in [3, 11]:
        x = rng.standard_normal((n, 8)).astype("float32")
        want = x.astype("float64")
        for w in weights:
            want = want @ w
        np.testing.assert_allclose(module.run([x])[0], want, rtol=1e-4, atol=1e-5)

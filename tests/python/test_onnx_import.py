"""ONNX import: shapes and bindings, import-time folding, external data, If with a compile-time
condition, the ai.onnx.ml domain, and the errors a person gets for models Tessera cannot
compile."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera


def save(tmp_path, nodes, inputs, outputs, initializers=(), opset=13, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(str(tmp_path), name)
    onnx.save(model, path)
    return path


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_unsupported_operators_are_listed_together(tmp_path):
    path = save(tmp_path, [
        helper.make_node("Relu", ["x"], ["a"], name="r"),
        helper.make_node("RandomUniformLike", ["a"], ["b"], name="nz1"),
        helper.make_node("FancyOp", ["a"], ["c"], name="f1"),
        helper.make_node("FancyOp", ["a"], ["d"], name="f2"),
    ], [vi("x", [4])], [vi("b", [4]), vi("c", [4]), vi("d", [4])])
    with pytest.raises(tessera.Error) as e:
        tessera.onnx.load(path)
    msg = str(e.value)
    assert "2 unsupported operator(s)" in msg
    assert "RandomUniformLike (opset 13): random-number operators are not supported" in msg and "'nz1'" in msg
    assert "FancyOp (opset 13)" in msg and "'f1', 'f2'" in msg


def test_a_node_without_outputs_is_refused(tmp_path):
    # An unnamed node is named by its first output in messages; one without outputs read past
    # the end of the list (found by tests/fuzz/onnx_import_fuzz).
    for op in ["FancyOp", "Relu"]:
        path = save(tmp_path, [helper.make_node(op, ["x"], [])], [vi("x", [4])], [vi("x", [4])])
        with pytest.raises(tessera.Error, match=f"ONNX node 0 \\({op}, ''\\) has no outputs"):
            tessera.onnx.load(path)


def test_a_reshape_target_too_large_to_count_is_refused(tmp_path):
    # Its product overflowed int64 (found by tests/fuzz/onnx_import_fuzz).
    shape = numpy_helper.from_array(np.array([2**62, 4, -1], np.int64), "shape")
    path = save(tmp_path, [helper.make_node("Reshape", ["x", "shape"], ["y"])], [vi("x", [4])], [vi("y", [1, 4, 1])], [shape])
    with pytest.raises(tessera.Error, match="has more elements than 64 bits count"):
        tessera.onnx.load(path)


def test_an_initializer_whose_dims_claim_more_than_its_data_is_refused_before_allocating(tmp_path):
    # Found by tests/fuzz/onnx_import_fuzz: the element count of such dims overflowed int64, and
    # dims of a terabyte with eight bytes of data were allocated before the data was checked.
    for dims, match in [([2**40, 2**40], "more elements than int64 counts"),
                        ([2**38, 1], "raw data has 8 bytes, its shape needs")]:
        w = onnx.TensorProto()
        w.name, w.data_type, w.raw_data = "w", onnx.TensorProto.FLOAT, b"\0" * 8
        w.dims.extend(dims)
        path = save(tmp_path, [helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", dims)], [w])
        with pytest.raises(tessera.Error, match=f"tensor 'w'.*{match}"):
            tessera.onnx.load(path)


def test_bool_constants_hold_a_byte_per_value(tmp_path, rng):
    """A bool tensor's raw data is a byte per value (GPT-NeoX's causal mask as PyTorch exports it,
    a Constant node): it was read as packed bits ("has 4096 bytes of packed bool values")."""
    mask = np.tril(np.ones((5, 7), bool))
    for raw in (True, False):
        value = helper.make_tensor("mask", TensorProto.BOOL, mask.shape, mask.tobytes() if raw else mask.ravel().astype(int).tolist(), raw=raw)
        nodes = [helper.make_node("Constant", [], ["m"], value=value), helper.make_node("Where", ["m", "x", "zero"], ["y"])]
        path = save(tmp_path, nodes, [vi("x", [5, 7])], [vi("y", [5, 7])],
                    [numpy_helper.from_array(np.zeros((), "float32"), "zero")])
        x = rng.standard_normal((5, 7)).astype("float32")
        np.testing.assert_array_equal(tessera.build(tessera.onnx.load(path), db=False).run([x])[0], np.where(mask, x, 0))


def test_shapes_fix_symbolic_dimensions(tmp_path):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["batch", 3])], [vi("y", ["batch", 3])])
    assert isinstance(tessera.onnx.load(path), tessera.DynamicModule)  # test_dynamic_models.py
    mod = tessera.onnx.load(path, shapes={"x": (5, 3)})
    assert mod.input_types == ["float32[5, 3]"]
    x = np.linspace(-1, 1, 15, dtype="float32").reshape(5, 3)
    np.testing.assert_array_equal(tessera.build(mod).run([x])[0], np.maximum(x, 0))
    with pytest.raises(tessera.Error, match="no graph input 'z'"):
        tessera.onnx.load(path, shapes={"x": (5, 3), "z": (1,)})
    with pytest.raises(tessera.Error, match="has 2 dimensions, the given shape"):
        tessera.onnx.load(path, shapes={"x": (5,)})


def test_binding_an_input_makes_it_a_constant(tmp_path):
    path = save(tmp_path, [helper.make_node("Add", ["x", "b"], ["y"])], [vi("x", [3]), vi("b", [3])], [vi("y", [3])])
    mod = tessera.onnx.load(path, bind={"b": np.array([1, 2, 3], "float32")})
    assert mod.input_names == ["x"]
    np.testing.assert_array_equal(tessera.build(mod).run([np.zeros(3, "float32")])[0], [1, 2, 3])


def test_constant_subgraphs_fold_at_import(tmp_path):
    c = numpy_helper.from_array(np.array([1.0, -2.0], "float32"), "c")
    path = save(tmp_path, [
        helper.make_node("Relu", ["c"], ["rc"]),          # constant: folded
        helper.make_node("Add", ["x", "rc"], ["y"]),
    ], [vi("x", [2])], [vi("y", [2])], [c])
    mod = tessera.onnx.load(path)
    lib = tessera.build(mod)
    assert [k["op"] for k in lib.kernels] == ["add"]
    np.testing.assert_array_equal(lib.run([np.ones(2, "float32")])[0], [2, 1])


def test_external_data_only_from_the_model_folder(tmp_path):
    weights = np.arange(4, dtype="float32")
    tensor = numpy_helper.from_array(weights, "w")
    path = save(tmp_path, [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [tensor])
    model = onnx.load(path)
    onnx.external_data_helper.convert_model_to_external_data(model, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    onnx.save(model, path)
    out = tessera.build(tessera.onnx.load(path)).run([np.ones(4, "float32")])[0]
    np.testing.assert_array_equal(out, weights + 1)
    # A location that escapes the folder is rejected before anything is read.
    for location in ["../weights.bin", "/etc/passwd", "sub/../../weights.bin"]:
        model.graph.initializer[0].external_data[0].value = location
        onnx.save(model, path)
        with pytest.raises(tessera.Error, match="outside the model's folder"):
            tessera.onnx.load(path)


def test_malformed_and_missing_files(tmp_path):
    bad = os.path.join(str(tmp_path), "bad.onnx")
    with open(bad, "wb") as f:
        f.write(b"\x00\xff not a protobuf at all \xff" * 10)
    with pytest.raises(tessera.Error, match="bad.onnx"):
        tessera.onnx.load(bad)
    with pytest.raises(tessera.Error, match="cannot open"):
        tessera.onnx.load(os.path.join(str(tmp_path), "missing.onnx"))
    # An attribute of an old operator version that Tessera does not know is refused by name.
    old = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], consumed_inputs=[0])], [vi("x", [1])], [vi("y", [1])], opset=1, name="old.onnx")
    with pytest.raises(tessera.Error, match="consumed_inputs"):
        tessera.onnx.load(old)


def test_a_model_given_in_memory_loads_as_from_its_file(tmp_path):
    # As ONNX Runtime takes it: an onnx.ModelProto or its serialized bytes. Before, the bytes
    # were taken as a path and the error quoted all of them.
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", 3])], [vi("y", ["n", 3])])
    model = onnx.load(path)
    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    for given in [model, model.SerializeToString(), bytearray(model.SerializeToString())]:
        lib = tessera.build(tessera.onnx.load(given))  # a DynamicModule: it reads the model again per size
        np.testing.assert_array_equal(lib.run([x])[0], np.maximum(x, 0))
        np.testing.assert_array_equal(lib.run([x[:1]])[0], np.maximum(x[:1], 0))
        static = tessera.onnx.load(given, shapes={"x": (2, 3)})
        np.testing.assert_array_equal(tessera.build(static).run([x])[0], np.maximum(x, 0))
    w = numpy_helper.from_array(np.arange(3, dtype="float32"), "w")
    weighted = onnx.load(save(tmp_path, [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [3])], [vi("y", [3])], [w]))
    np.testing.assert_array_equal(tessera.onnx.initializer_values(weighted, ["w"])[0], [0, 1, 2])
    np.testing.assert_array_equal(tessera.onnx.initializer_values(weighted.SerializeToString(), ["w"])[0], [0, 1, 2])
    with pytest.raises(tessera.Error) as e:
        tessera.onnx.load(b"\x00\xff not a protobuf" * 100000)
    assert len(str(e.value)) < 500
    with pytest.raises(TypeError, match="a path, an onnx.ModelProto or its serialized bytes, not int"):
        tessera.onnx.load(3)


def test_run_checks_inputs(tmp_path):
    path = save(tmp_path, [helper.make_node("Relu", ["image"], ["y"])], [vi("image", [2, 2])], [vi("y", [2, 2])])
    lib = tessera.build(tessera.onnx.load(path))
    assert lib.input_names == ["image"]
    with pytest.raises(tessera.Error, match=r"input 'image' \(#0\): expected shape \(2, 2\) float32, got \(3, 2\) float32"):
        lib.run([np.zeros((3, 2), "float32")])
    with pytest.raises(tessera.Error, match=r"input 'image' \(#0\): expected shape \(2, 2\) float32, got \(2, 2\) float64"):
        lib.run([np.zeros((2, 2))])
    with pytest.raises(tessera.Error, match="no input 'img'"):
        lib.run({"img": np.zeros((2, 2), "float32")})
    with pytest.raises(tessera.Error, match="takes 1 inputs, got 2"):
        lib.run([np.zeros((2, 2), "float32")] * 2)


def if_model(tmp_path, cond_node, else_nodes=None):
    """y = If(cond, then: x + 1, else: x * 2 (or else_nodes)), the branches reading x from outside."""
    one = numpy_helper.from_array(np.array(1, np.float32), "one")
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    then_g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"])], "then", [], [vi("t", [3])], [one])
    else_g = helper.make_graph(else_nodes or [helper.make_node("Mul", ["x", "two"], ["e"])], "else", [], [vi("e", [3])],
                               [two])
    nodes = [cond_node, helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="if1")]
    inputs = [vi("x", [3])] + ([vi("c", [], TensorProto.BOOL)] if "c" in cond_node.input else [])
    return save(tmp_path, nodes, inputs, [vi("y", [3])])


def test_if_with_a_compile_time_condition_takes_its_branch(tmp_path):
    x = np.array([1, 2, 3], np.float32)
    for value, want in [(True, x + 1), (False, x * 2)]:
        cond = helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(value)))
        lib = tessera.build(tessera.onnx.load(if_model(tmp_path, cond)))
        np.testing.assert_array_equal(lib.run([x])[0], want)


def test_if_on_a_graph_input_chooses_its_branch_at_run_time(tmp_path):
    path = if_model(tmp_path, helper.make_node("Identity", ["c"], ["cond"]))
    x = np.array([1, 2, 3], np.float32)
    lib = tessera.build(tessera.onnx.load(path))
    assert isinstance(lib, tessera.ProgramLibrary)
    np.testing.assert_array_equal(lib.run([x, np.array(True)])[0], x + 1)
    np.testing.assert_array_equal(lib.run({"x": x, "c": np.array(False)})[0], x * 2)
    # Bound, the condition is a constant: one static graph of the chosen branch.
    lib = tessera.build(tessera.onnx.load(path, bind={"c": np.array(False)}))
    assert isinstance(lib, tessera.Library)
    np.testing.assert_array_equal(lib.run([x])[0], x * 2)


def test_if_names_unsupported_operators_of_the_chosen_branch(tmp_path):
    cond = helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(False)))
    path = if_model(tmp_path, cond, [helper.make_node("FancyOp", ["x"], ["e"], name="fancy")])
    with pytest.raises(tessera.Error, match="FancyOp.*'fancy'"):
        tessera.onnx.load(path)


def ml_model(tmp_path, nodes, inputs, outputs, with_ai_onnx=False):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    opsets = [helper.make_opsetid("ai.onnx.ml", 1)] + ([helper.make_opsetid("", 17)] if with_ai_onnx else [])
    path = os.path.join(str(tmp_path), "ml.onnx")
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    return path


def test_ai_onnx_ml_binarizer_and_array_feature_extractor(tmp_path, rng):
    x = rng.standard_normal((3, 7)).astype(np.float32)
    path = ml_model(tmp_path, [helper.make_node("Binarizer", ["x"], ["b"], domain="ai.onnx.ml", threshold=0.25),
                               helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["f"], domain="ai.onnx.ml")],
                    [vi("x", [3, 7]), vi("i", [4], TensorProto.INT64)], [vi("b", [3, 7]), vi("f", [3, 4])])
    i = np.array([6, 0, 3, 3], np.int64)
    b, f = tessera.build(tessera.onnx.load(path)).run([x, i])
    np.testing.assert_array_equal(b, (x > 0.25).astype(np.float32))
    np.testing.assert_array_equal(f, x[:, i])
    # A 1-D X gives one row.
    path = ml_model(tmp_path, [helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["f"], domain="ai.onnx.ml")],
                    [vi("x", [7]), vi("i", [2], TensorProto.INT64)], [vi("f", [1, 2])])
    (f,) = tessera.build(tessera.onnx.load(path)).run([x[0], i[:2]])
    np.testing.assert_array_equal(f, x[0][None, i[:2]])


def test_ai_onnx_ops_need_their_opset_imported(tmp_path):
    path = ml_model(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [3])], [vi("y", [3])])
    with pytest.raises(tessera.Error, match="imports no ai.onnx opset, but node 'r' is Relu"):
        tessera.onnx.load(path)


def random_forest(rng, trees, features, targets, depth):
    """TreeEnsemble attributes of random complete trees of every comparison mode."""
    a = {k: [] for k in ["featureids", "splits", "modes", "truenodeids", "falsenodeids", "trueleafs", "falseleafs",
                         "tracks"]}
    leaf_targets, leaf_weights, roots, members = [], [], [], []

    def leaf():
        leaf_targets.append(int(rng.integers(targets)))
        leaf_weights.append(float(rng.standard_normal()))
        return len(leaf_targets) - 1

    def node(level):
        i = len(a["featureids"])
        for k in a:
            a[k].append(0)
        a["featureids"][i] = int(rng.integers(features))
        a["modes"][i] = int(rng.integers(7))
        a["splits"][i] = float(np.round(rng.standard_normal(), 1))
        a["tracks"][i] = int(rng.integers(2))
        if a["modes"][i] == 6:
            members.extend([float(v) for v in np.round(rng.standard_normal(3), 1)] + [np.nan])
        for side in ("true", "false"):
            is_leaf = level == depth - 1 or rng.uniform() < 0.25
            a[side + "leafs"][i] = int(is_leaf)
            a[side + "nodeids"][i] = leaf() if is_leaf else node(level + 1)
        return i

    for _ in range(trees):
        roots.append(node(0))
    return a, leaf_targets, leaf_weights, roots, members


def tree_ensemble_reference(x, a, leaf_targets, leaf_weights, roots, members, targets, aggregate):
    member_sets, it = {}, iter(members)
    for i, m in enumerate(a["modes"]):
        if m == 6:
            s = []
            for v in it:
                if np.isnan(v):
                    break
                s.append(np.float32(v))
            member_sets[i] = s
    tests = [np.less_equal, np.less, np.greater_equal, np.greater, np.equal, np.not_equal]
    out = np.full((len(x), targets), {0: 0.0, 1: 0.0, 2: np.inf, 3: -np.inf}[aggregate])
    for n, row in enumerate(x):
        for r in roots:
            i, is_leaf = r, False
            while not is_leaf:
                v = row[a["featureids"][i]]
                m = a["modes"][i]
                go = (v in member_sets[i]) if m == 6 else bool(tests[m](v, np.float32(a["splits"][i])))
                go = go or (bool(a["tracks"][i]) and np.isnan(v))
                side = "true" if go else "false"
                i, is_leaf = a[side + "nodeids"][i], a[side + "leafs"][i]
            t, w = leaf_targets[i], np.float32(leaf_weights[i])
            if aggregate in (0, 1):
                out[n, t] += w / (len(roots) if aggregate == 0 else 1)
            else:
                out[n, t] = (min if aggregate == 2 else max)(out[n, t], w)
    info = np.finfo(np.float32)
    return np.where(np.isinf(out), np.where(out > 0, info.max, info.min), out).astype(np.float32)


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
def test_ai_onnx_ml_tree_ensemble_against_a_reference(tmp_path, rng, aggregate):
    features, targets = 5, 3
    a, leaf_targets, leaf_weights, roots, members = random_forest(rng, 7, features, targets, depth=5)
    attrs = dict(nodes_featureids=a["featureids"], nodes_truenodeids=a["truenodeids"],
                 nodes_falsenodeids=a["falsenodeids"], nodes_trueleafs=a["trueleafs"], nodes_falseleafs=a["falseleafs"],
                 nodes_missing_value_tracks_true=a["tracks"], leaf_targetids=leaf_targets, tree_roots=roots,
                 n_targets=targets, aggregate_function=aggregate,
                 nodes_splits=numpy_helper.from_array(np.array(a["splits"], np.float32)),
                 nodes_modes=numpy_helper.from_array(np.array(a["modes"], np.uint8)),
                 leaf_weights=numpy_helper.from_array(np.array(leaf_weights, np.float32)))
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, np.float32))
    path = ml_model(tmp_path, [helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)],
                    [vi("x", [11, features])], [vi("y", [11, targets])])
    x = np.round(rng.standard_normal((11, features)), 1).astype(np.float32)  # ties with the splits and sets
    x[2, 1] = x[5, 3] = np.nan
    (y,) = tessera.build(tessera.onnx.load(path)).run([x])
    want = tree_ensemble_reference(x, a, leaf_targets, leaf_weights, roots, members, targets, aggregate)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    if aggregate == 1:  # the post transforms ONNX Runtime applies: SOFTMAX over targets, LOGISTIC
        for post, f in [(1, lambda v: np.exp(v) / np.exp(v).sum(1, keepdims=True)), (2, lambda v: 1 / (1 + np.exp(-v)))]:
            node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", post_transform=post, **attrs)
            path = ml_model(tmp_path, [node], [vi("x", [11, features])], [vi("y", [11, targets])])
            (y,) = tessera.build(tessera.onnx.load(path)).run([x])
            np.testing.assert_allclose(y, f(want.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_ai_onnx_ml_tree_ensemble_refuses_cycles(tmp_path):
    attrs = dict(nodes_featureids=[0, 0], nodes_truenodeids=[1, 0], nodes_falsenodeids=[0, 0], nodes_trueleafs=[0, 1],
                 nodes_falseleafs=[1, 0], leaf_targetids=[0], tree_roots=[0], n_targets=1,
                 nodes_splits=numpy_helper.from_array(np.zeros(2, np.float32)),
                 nodes_modes=numpy_helper.from_array(np.zeros(2, np.uint8)),
                 leaf_weights=numpy_helper.from_array(np.ones(1, np.float32)))
    path = ml_model(tmp_path, [helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)],
                    [vi("x", [2, 1])], [vi("y", [2, 1])])
    with pytest.raises(tessera.Error, match="cycle"):
        tessera.onnx.load(path)

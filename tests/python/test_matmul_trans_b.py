"""A product whose right operand is a transpose of its last two axes reads that operand transposed
(matmul's trans_b, written by SimplifyExpr) instead of copying it first: attention's q @ k^T as
exporters write it, over cached keys that grow each decoding step. Against numpy on few rows (dot
products along the contiguous reduction), many rows (packed panels read through the transpose),
reductions the vector width does not divide and longer than one vector loop, broadcast batch
dimensions, symbolic sizes, a constant operand packed ahead, and the gradient."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from gradcheck import check_gradient


def fmt(shape):
    return ", ".join(map(str, shape))


def product_ops(lib):
    return [k["op"] for k in lib.kernels]


@pytest.mark.parametrize("sa,sb", [
    ((1, 4, 1, 64), (1, 4, 513, 64)),  # a decoding step's scores over its cache
    ((2, 3, 3, 61), (2, 3, 17, 61)),   # few rows, a reduction no vector width divides
    ((1, 1, 300), (1, 45, 300)),       # a reduction longer than the short dot products
    ((2, 7, 48), (2, 40, 48)),         # rows enough to pack B's panels through the transpose
    ((3, 1, 33, 16), (4, 9, 16)),      # broadcast batch dimensions
    ((5, 2, 24), (19, 24)),            # a 2-D right operand: the left one's batch becomes rows
    ((1, 8), (0, 8)),                  # no columns
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_read_the_transposed_operand_in_place(rng, sa, sb, dtype):
    a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    perm = list(range(len(sb) - 2)) + [len(sb) - 1, len(sb) - 2]
    text = f"""def @main(%a: {dtype}[{fmt(sa)}], %b: {dtype}[{fmt(sb)}]) {{
  matmul(%a, transpose(%b, perm={perm}))
}}"""
    lib = tessera.build(tessera.relay.parse(text), db=False)
    (y,) = lib.run([a, b])
    np.testing.assert_allclose(y, np.matmul(a.astype("float64"), np.swapaxes(b, -1, -2)), rtol=1e-4, atol=1e-4)
    assert product_ops(lib) == ["matmul"], product_ops(lib)


def test_other_transposes_stay(rng):
    # Swapping axes other than the last two is a copy the product cannot read through.
    a, b = rng.standard_normal((3, 4, 5)).astype("float32"), rng.standard_normal((5, 3, 6)).astype("float32")
    text = """def @main(%a: float32[3, 4, 5], %b: float32[5, 3, 6]) {
  matmul(%a, transpose(%b, perm=[1, 0, 2]))
}"""
    lib = tessera.build(tessera.relay.parse(text), db=False)
    np.testing.assert_allclose(lib.run([a, b])[0], a @ b.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)


def test_attention_scores_over_a_symbolic_cache(tmp_path, rng):
    """q [N, H, L, 64] @ transpose(cache [N, H, P, 64]) from an ONNX model of symbolic sizes, at
    one row and at many, from the library and its exported module."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["N", 4, "L", 64]),
                     helper.make_tensor_value_info("k", TensorProto.FLOAT, ["N", 4, "P", 64])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 4, "L", "P"])])
    path = str(tmp_path / "model.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for n, length, past in [(1, 1, 65), (2, 1, 9), (1, 3, 130), (1, 37, 37), (1, 1, 0)]:
        q = rng.standard_normal((n, 4, length, 64)).astype("float32")
        k = rng.standard_normal((n, 4, past, 64)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([q, k])[0], q @ np.swapaxes(k, -1, -2), rtol=1e-4, atol=1e-4)
    assert product_ops(lib) == ["matmul"], product_ops(lib)


@pytest.mark.parametrize("rows", [1, 9])
def test_a_transposed_constant_is_packed_ahead(tmp_path, rng, rows):
    x = rng.standard_normal((rows, 48)).astype("float32")
    w = rng.standard_normal((40, 48)).astype("float32")
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]), helper.make_node("MatMul", ["x", "wt"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(w, "w")])
    path = str(tmp_path / "model.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    for level in (2, 3):
        lib = tessera.build(tessera.onnx.load(path), opt_level=level, db=False)
        np.testing.assert_allclose(lib.run([x])[0], x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 4)), ((2, 3, 4), (5, 4)), ((2, 1, 3, 4), (5, 2, 4)), ((4,), (3, 4))])
def test_gradient(sa, sb):
    rng = np.random.default_rng(0)
    check_gradient(f"def @main(%a: float64[{fmt(sa)}], %b: float64[{fmt(sb)}]) {{ matmul(%a, %b, trans_b=1) }}",
                   [rng.standard_normal(sa), rng.standard_normal(sb)], ["a", "b"])


def test_trans_b_needs_a_matrix():
    with pytest.raises(tessera.Error, match="trans_b"):
        tessera.build(tessera.relay.parse("def @main(%a: float32[3, 4], %b: float32[4]) { matmul(%a, %b, trans_b=1) }"))

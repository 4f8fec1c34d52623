"""MatMul, Gemm, Einsum, MatMulInteger and QLinearMatMul through the ONNX importer, against numpy:
shapes the register tile (8 x 32) and the vector width do not divide, 1-D operands, broadcast
batch dimensions, empty dimensions, every dtype the operators take."""
import numpy as np
import pytest

import tessera
import re

from nn_testing import assert_close, load, model, run


def rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -20), min(info.max, 20), size=shape).astype(dtype)


@pytest.mark.parametrize("sa,sb", [
    ((37, 45), (45, 19)), ((5, 7), (7, 33)), ((64, 64), (64, 64)), ((17, 300), (300, 31)), ((9, 1), (1, 40)),
    ((3, 1, 9, 20), (4, 20, 50)), ((2, 3, 17, 5), (5, 100)), ((6, 8), (2, 1, 8, 35)),
    ((20,), (20, 40)), ((9, 20), (20,)), ((20,), (20,)), ((4, 20), (3, 1, 20, 1)),
    ((1, 1), (1, 1)), ((130, 0), (0, 33)), ((0, 5), (5, 40)), ((5, 7), (7, 0)),
    # A 2-D right operand: the left one's batch dimensions become rows (105 and 2 of them), or
    # none when a batch dimension is empty.
    ((128, 1, 64), (64, 48)), ((3, 5, 7, 40), (40, 33)), ((2, 1, 64), (64, 16)), ((0, 3, 8), (8, 20)),
])
def test_matmul_shapes(rng, sa, sb):
    a, b = rand(rng, sa, "float32"), rand(rng, sb, "float32")
    (y,) = run("MatMul", [a, b])
    assert_close(y, np.matmul(a.astype("float64"), b.astype("float64")), "float32")


@pytest.mark.parametrize("sa", [(0, 24), (0, 3, 24), (1, 24)])
def test_matmul_of_a_constant_weight_packs_it_whatever_the_rows(rng, sa):
    """A constant right operand is packed ahead of time (opt level 3), even for no rows."""
    a, b = rand(rng, sa, "float32"), rand(rng, (24, 40), "float32")
    (y,) = run("MatMul", [a, b], constants=(1,))
    assert_close(y, np.matmul(a.astype("float64"), b.astype("float64")), "float32")


@pytest.mark.parametrize("m,n,panels_per_tile", [(1, 1024, 4), (2, 512, 2), (3, 768, 2), (1, 96, 6), (1, 1000, 7),
                                                  (1, 488, 1), (8, 1024, 1)])
def test_products_of_few_rows_take_several_panels_per_tile(rng, m, n, panels_per_tile):
    """A tile of one or two rows by one panel of a packed weight (two vectors) holds too few sums
    to hide the FMAs' latency: it spans the fewest panels that keep 8 sums in flight and divide
    the panel count (1000 columns: 63 panels, 7 per tile; 488: 61 panels, a prime, one per tile,
    as with 8 rows)."""
    a, b = rand(rng, (m, 100), "float32"), rand(rng, (100, n), "float32")
    # AVX2's 16 registers of 8 lanes (panels of 16 columns), on any host that runs it.
    lib = tessera.build(load(model("MatMul", [a, b], constants=(1,))), target="llvm -mcpu=haswell")
    assert_close(lib.run([a])[0], np.matmul(a.astype("float64"), b.astype("float64")), "float32")
    (product,) = [k["lowered"] for k in lib.kernels if "matmul" in k["op"]]
    panel = int(re.search(r"float32\[\d+, 100, (\d+)\]", product).group(1))
    tile = int(re.search(r"allocate matmul: float32\[(\d+)\]", product).group(1))
    rows = m if m <= 3 else tile // panel  # 8 rows: tiles of 5, 6 or 8 (by the registers)
    assert tile == rows * panel * panels_per_tile and rows <= 8, product


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "int64", "uint32", "uint64"])
def test_matmul_dtypes(rng, dtype):
    a, b = rand(rng, (2, 19, 11), dtype), rand(rng, (11, 37), dtype)
    (y,) = run("MatMul", [a, b])
    want = np.matmul(a.astype("float64"), b.astype("float64"))
    assert_close(y, want.astype(dtype) if np.dtype(dtype).kind != "f" else want, dtype, rtol=2e-2 if dtype == "float16" else None)


def test_matmul_rejects_mismatch(rng):
    with pytest.raises(tessera.Error, match="inner dimensions"):
        run("MatMul", [rand(rng, (3, 4), "float32"), rand(rng, (5, 6), "float32")])


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (23,), (13, 1), (13, 23), (1, 23)])
def test_gemm(rng, ta, tb, c_shape):
    m, k, n = 13, 9, 23
    a = rand(rng, (k, m) if ta else (m, k), "float32")
    b = rand(rng, (n, k) if tb else (k, n), "float32")
    inputs = [a, b] + ([] if c_shape is None else [rand(rng, c_shape, "float32")])
    (y,) = run("Gemm", inputs, {"transA": ta, "transB": tb, "alpha": 0.5, "beta": -2.0})
    want = 0.5 * (a.T if ta else a).astype("float64") @ (b.T if tb else b).astype("float64")
    if c_shape is not None:
        want = want - 2.0 * inputs[2].astype("float64")
    assert_close(y, want, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "int64"])
def test_gemm_dtypes_and_old_opset(rng, dtype):
    a, b, c = rand(rng, (40, 33), dtype), rand(rng, (33, 50), dtype), rand(rng, (50,), dtype)
    opset = 9 if dtype == "float64" else 13
    (y,) = run("Gemm", [a, b, c], {"transA": 0}, opset=opset)
    want = a.astype("float64") @ b.astype("float64") + c.astype("float64")
    assert_close(y, want.astype(dtype) if np.dtype(dtype).kind != "f" else want, dtype, rtol=3e-2 if dtype == "float16" else None)


def test_gemm_requires_c_before_opset_11(rng):
    with pytest.raises(tessera.Error, match="input C is required"):
        run("Gemm", [rand(rng, (3, 4), "float32"), rand(rng, (4, 5), "float32")], opset=9)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(7, 5), (5, 9)]), ("bij,bjk->bik", [(3, 7, 5), (3, 5, 9)]), ("ij->ji", [(4, 6)]),
    ("ij->", [(4, 6)]), ("i,i", [(17,), (17,)]), ("i,j->ij", [(3,), (5,)]), ("...ii->...i", [(2, 3, 4, 4)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("ijk", [(2, 3, 4)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]), ("ii", [(5, 5)]), (" ik , kj -> ij", [(3, 4), (4, 5)]),
])
def test_einsum(rng, eq, shapes):
    ops = [rand(rng, s, "float32") for s in shapes]
    (y,) = run("Einsum", ops, {"equation": eq})
    assert_close(y, np.einsum(eq.replace(" ", ""), *[o.astype("float64") for o in ops]), "float32")


@pytest.mark.parametrize("eq,shapes,message", [
    ("ij,jk->ik", [(3, 4), (5, 6)], "sizes 4 and 5"),
    ("ij->ik", [(3, 4)], "appears in no operand"),
    ("ij,jk", [(3, 4)], "operand terms"),
    ("i$->i", [(3, 4)], "unexpected character"),
])
def test_einsum_errors(rng, eq, shapes, message):
    with pytest.raises(tessera.Error, match=message):
        run("Einsum", [rand(rng, s, "float32") for s in shapes], {"equation": eq})


@pytest.mark.parametrize("adt,bdt", [("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8")])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per_row_col"])
def test_matmul_integer(rng, adt, bdt, zero_points):
    a, b = rand(rng, (2, 13, 21), adt), rand(rng, (21, 35), bdt)
    if zero_points == "none":
        za, zb, inputs = 0, 0, [a, b]
    elif zero_points == "scalar":
        za, zb = np.array(3, adt), np.array(5, bdt)
        inputs = [a, b, za, zb]
    else:
        za, zb = rand(rng, (13,), adt), rand(rng, (35,), bdt)
        inputs = [a, b, za, zb]
    (y,) = run("MatMulInteger", inputs, opset=10)
    za = np.asarray(za, "int64").reshape(-1, 1) if np.ndim(za) else np.int64(za)
    want = (a.astype("int64") - za) @ (b.astype("int64") - np.asarray(zb, "int64"))
    assert_close(y, want.astype("int32"), "int32")


def test_qlinear_matmul_rounds_half_to_even_and_saturates():
    a = np.array([[10, 20], [30, 250]], "uint8")
    b = np.array([[1, 2, 3], [4, 5, 6]], "uint8")
    sa, za = np.array([0.5], "float32"), np.array([0], "uint8")
    sb, zb = np.array([1.0], "float32"), np.array([0], "uint8")
    sy, zy = np.array([4.0], "float32"), np.array([10], "uint8")
    (y,) = run("QLinearMatMul", [a, sa, za, b, sb, zb, sy, zy], opset=10)
    acc = a.astype("float64") @ b.astype("float64") * 0.5 / 4.0
    want = np.clip(np.round(acc) + 10, 0, 255).astype("uint8")
    assert_close(y, want, "uint8")


def attention_heads(n, l, heads, d):
    """Queries, keys and values sliced from one projection [L, N, 3*H*D] (seq-first, as
    nn.MultiheadAttention exports), the queries divided by 8, the heads merged back and projected
    by a constant weight: every operand of the products is moved, not computed."""
    from onnx import TensorProto, helper, numpy_helper
    e = heads * d
    w = np.random.default_rng(1).standard_normal((e, e)).astype("float32")
    const = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype="int64" if name != "eight" else "float32"), name)
    inits = [const("q0", [0]), const("q1", [e]), const("k1", [2 * e]), const("v1", [3 * e]), const("ax", [2]),
             const("heads", [l, n * heads, d]), const("merged", [n, l, e]), const("eight", 8.0),
             numpy_helper.from_array(w, "w")]
    nodes = [helper.make_node("Slice", ["x", "q0", "q1", "ax"], ["q"]),
             helper.make_node("Slice", ["x", "q1", "k1", "ax"], ["k"]),
             helper.make_node("Slice", ["x", "k1", "v1", "ax"], ["v"])]
    for t in "qkv":
        nodes += [helper.make_node("Reshape", [t, "heads"], [t + "r"]),
                  helper.make_node("Transpose", [t + "r"], [t + "h"], perm=[1, 0, 2])]
    nodes += [helper.make_node("Div", ["qh", "eight"], ["qs"]),
              helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["qs", "kt"], ["s"]),
              helper.make_node("MatMul", ["s", "vh"], ["o"]),
              helper.make_node("Reshape", ["o", "split"], ["os"]),
              helper.make_node("Transpose", ["os"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "merged"], ["om"]),
              helper.make_node("MatMul", ["om", "w"], ["y"])]
    inits.append(const("split", [n, heads, l, d]))
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [l, n, 3 * e])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, l, e])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    def reference(x):
        x = x.astype("float64")
        q, k, v = (x[:, :, i * e:(i + 1) * e].reshape(l, n * heads, d).transpose(1, 0, 2) for i in range(3))
        o = (q / 8) @ k.transpose(0, 2, 1) @ v
        return o.reshape(n, heads, l, d).transpose(0, 2, 1, 3).reshape(n, l, e) @ w
    return m, reference


@pytest.mark.parametrize("target", ["llvm", "c", "opencl"])
@pytest.mark.parametrize("n,l,heads,d", [(2, 37, 3, 16), (1, 1, 2, 32), (3, 128, 4, 64), (1, 19, 1, 48)])
def test_attention_products_read_moved_operands_in_place(rng, target, n, l, heads, d):
    """The queries' slice and transposes, the merge of the heads and the keys' transposes are read
    by the products where they lie (no copy kernels), the division by 8 scales the scores instead
    (a power of two: exact); rows not a multiple of the tile's 8, a single row, one head."""
    if target == "opencl" and not tessera.device("opencl").exists:
        pytest.skip("no OpenCL device")
    m, reference = attention_heads(n, l, heads, d)
    x = rng.standard_normal((l, n, 3 * heads * d)).astype("float32")
    lib = tessera.build(load(m), target=target)
    want = reference(x)
    assert_close(lib.run([x])[0], want, "float32", atol=1e-5 * np.abs(want).max())
    if target == "llvm":
        names = [k["name"] for k in lib.kernels]
        assert len(names) == 3 and all("matmul" in k for k in names), names
        assert any("div" in k.split("matmul")[-1] for k in names), names  # the scale after the product

"""AttentionFusion (relay_ir/transforms/attention_fusion.cc): attention written as two products
around a softmax (with a mask added or not), as exporters write it, becomes one kernel at opt level 3 (CPU), whose
template keeps a block of query rows' scores in cache. Against numpy in float64, at sizes that
divide no tile, with the scale as a product or quotient on either side, at symbolic lengths
(one key, none), exported, on AVX2 too; and left as three kernels wherever it does not apply."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import host_cpu
import tessera


def attention_model(q_shape, k_shape, v_shape, scale="mul", transpose_k=True, extra_output=False, axis=-1):
    """softmax(q @ k^T [* or / 8]) @ v as ONNX nodes; k given [.., S, D] (transposed in the graph)
    or [.., D, S]."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=list(range(len(k_shape) - 2)) + [len(k_shape) - 1, len(k_shape) - 2])] if transpose_k else []
    nodes.append(helper.make_node("MatMul", ["q", "kt" if transpose_k else "k"], ["s"]))
    scaled = {"mul": helper.make_node("Mul", ["s", "c"], ["s2"]), "mul_left": helper.make_node("Mul", ["c", "s"], ["s2"]),
              "div": helper.make_node("Div", ["s", "c"], ["s2"]), None: helper.make_node("Identity", ["s"], ["s2"])}[scale]
    nodes += [scaled, helper.make_node("Softmax", ["s2"], ["p"], axis=axis), helper.make_node("MatMul", ["p", "v"], ["y"])]
    c = numpy_helper.from_array(np.array(0.125 if scale in ("mul", "mul_left") else 8.0, "float32"), "c")
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in [("q", q_shape), ("k", k_shape), ("v", v_shape)]]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("s2", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "attention", inputs, outputs, [c])
    return tessera.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def reference(q, k, v, scale=0.125, transposed=True):
    q, k, v = (a.astype("float64") for a in (q, k, v))
    s = q @ (np.swapaxes(k, -1, -2) if transposed else k) * scale
    if s.shape[-1] == 0:
        return np.zeros(q.shape[:-1] + v.shape[-1:])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def kernel_ops(lib):
    return [k["op"] for k in lib.kernels]


def inputs(rng, batch, length, keys, depth, values):
    return [rng.standard_normal(batch + [n, d]).astype("float32") for n, d in [(length, depth), (keys, depth), (keys, values)]]


@pytest.mark.parametrize("batch, length, keys, depth, values", [
    ([2, 4], 37, 37, 64, 64),   # self-attention, rows and keys past whole tiles
    ([1, 3], 5, 70, 3, 48),     # cross-attention, a shallow depth, three vectors of values
    ([6], 130, 17, 8, 40),      # rank 3 (heads folded into the batch), a partial panel of values
    ([], 9, 33, 16, 16),        # rank 2
])
@pytest.mark.parametrize("scale", ["mul", "mul_left", "div", None])
def test_attention_as_exported_is_one_kernel(rng, batch, length, keys, depth, values, scale):
    q, k, v = inputs(rng, batch, length, keys, depth, values)
    mod = attention_model(q.shape, k.shape, v.shape, scale)
    lib = tessera.build(mod, db=False)
    assert kernel_ops(lib) == ["attention"]
    want = reference(q, k, v, 0.125 if scale else 1.0)
    np.testing.assert_allclose(lib.run([q, k, v])[0], want, rtol=1e-5, atol=1e-5)
    unfused = tessera.build(mod, db=False, opt_level=2)
    assert "attention" not in kernel_ops(unfused)
    np.testing.assert_allclose(unfused.run([q, k, v])[0], want, rtol=1e-5, atol=1e-5)


def masked_model(q_shape, kv_shape, mask_shape, mask="padding"):
    """BERT's form: a [N, S] mask of ones and zeros becomes (1 - m) * -10000 over [N, 1, 1, S]
    and is added to the scaled scores; or a causal constant of -inf above the diagonal; or a bias
    of the scores' shape given as an input."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "c"], ["s2"])]
    inits = [numpy_helper.from_array(np.array(8.0, "float32"), "c")]
    ins = [("q", q_shape), ("k", kv_shape), ("v", kv_shape)]
    if mask == "padding":
        nodes += [helper.make_node("Unsqueeze", ["m", "axes"], ["m4"]), helper.make_node("Sub", ["one", "m4"], ["inv"]),
                  helper.make_node("Mul", ["inv", "big"], ["bias"])]
        inits += [numpy_helper.from_array(np.array([1, 2], "int64"), "axes"), numpy_helper.from_array(np.array(1.0, "float32"), "one"),
                  numpy_helper.from_array(np.array(-10000.0, "float32"), "big")]
        ins.append(("m", mask_shape))
    elif mask == "causal":
        n = mask_shape[0]
        inits.append(numpy_helper.from_array(np.triu(np.full((n, n), -np.inf, "float32"), 1), "bias"))
    else:
        ins.append(("bias", mask_shape))
    nodes += [helper.make_node("Add", ["bias", "s2"] if mask == "causal" else ["s2", "bias"], ["s3"]),
              helper.make_node("Softmax", ["s3"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in ins],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return tessera.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def masked_reference(q, k, v, bias):
    s = q.astype("float64") @ np.swapaxes(k, -1, -2) / 8 + bias
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True) @ v


@pytest.mark.parametrize("mask", ["padding", "causal", "bias"])
def test_attention_with_a_mask_is_one_kernel(rng, mask):
    n, heads, length, depth = 2, 3, 21, 32
    q, k, v = inputs(rng, [n, heads], length, length, depth, depth)
    if mask == "padding":
        m = (rng.random((n, length)) < 0.7).astype("float32")
        m[:, 0] = 1
        extra, bias = [m], (1 - m[:, None, None, :]) * -10000.0
        mod = masked_model(q.shape, k.shape, m.shape)
    elif mask == "causal":
        extra, bias = [], np.triu(np.full((length, length), -np.inf), 1)
        mod = masked_model(q.shape, k.shape, [length], mask)
    else:
        b = rng.standard_normal((n, heads, length, length)).astype("float32")
        extra, bias = [b], b
        mod = masked_model(q.shape, k.shape, b.shape, mask)
    lib = tessera.build(mod, db=False)
    assert "attention" in kernel_ops(lib)[-1]
    np.testing.assert_allclose(lib.run([q, k, v] + extra)[0], masked_reference(q, k, v, bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["masked_fill", "where_kept"])
def test_attention_with_a_bool_mask_is_one_kernel(rng, form):
    """masked_fill(mask, -inf) exports as Where(mask, -inf, s); Where(keep, s, -10000) keeps
    where the mask is true. Causal, so the first row keeps one key; a whole row masked out gives
    NaN with -inf as without fusion (checked against the unfused build)."""
    n, heads, length, depth = 2, 2, 19, 16
    q, k, v = inputs(rng, [n, heads], length, length, depth, depth)
    causal = np.triu(np.ones((length, length), bool), 1)
    masked = causal.copy()
    masked[5] = True  # a row with every key masked
    fill = np.array(-np.inf if form == "masked_fill" else -10000.0, "float32")
    where = (helper.make_node("Where", ["m", "fill", "s2"], ["s3"]) if form == "masked_fill"
             else helper.make_node("Where", ["m", "s2", "fill"], ["s3"]))
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "c"], ["s2"]), where, helper.make_node("Softmax", ["s3"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info(a, TensorProto.FLOAT, q.shape) for a in "qkv"] +
                          [helper.make_tensor_value_info("m", TensorProto.BOOL, [length, length])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(8.0, "float32"), "c"), numpy_helper.from_array(fill, "fill")])
    mod = tessera.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    fused, unfused = (tessera.build(mod, db=False, opt_level=level) for level in (3, 2))
    assert kernel_ops(fused) == ["attention"] and "attention" not in kernel_ops(unfused)
    for m in (causal, masked):
        m = m if form == "masked_fill" else ~m
        got, want = fused.run([q, k, v, m])[0], unfused.run([q, k, v, m])[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    bias = np.where(causal, -np.inf, 0.0)
    np.testing.assert_allclose(fused.run([q, k, v, causal if form == "masked_fill" else ~causal])[0],
                               masked_reference(q, k, v, bias), rtol=1e-5, atol=1e-5)


def test_attention_with_a_padding_mask_of_symbolic_lengths(rng, tmp_path):
    mod = masked_model(["N", 2, "L", 16], ["N", 2, "L", 16], ["N", "L"])
    lib = tessera.build(mod, db=False)
    lib.export(str(tmp_path / "masked.so"))
    module = tessera.load(str(tmp_path / "masked.so"))
    assert "attention" in kernel_ops(lib)[-1]
    for n, length in [(2, 19), (1, 1), (3, 40)]:
        q, k, v = inputs(rng, [n, 2], length, length, 16, 16)
        m = (rng.random((n, length)) < 0.6).astype("float32")
        m[:, 0] = 1
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([q, k, v, m])[0], masked_reference(q, k, v, (1 - m[:, None, None, :]) * -10000.0),
                                       rtol=1e-5, atol=1e-5)


def test_keys_given_transposed_and_on_avx2(rng):
    q, k, v = inputs(rng, [2, 2], 20, 45, 32, 64)
    kt = np.ascontiguousarray(np.swapaxes(k, -1, -2))
    mod = attention_model(q.shape, kt.shape, v.shape, transpose_k=False)
    for target in ["llvm", "llvm -mcpu=x86-64-v3"]:
        if target != "llvm" and "avx2" not in host_cpu.flags():
            continue
        lib = tessera.build(mod, target=target, db=False)
        assert kernel_ops(lib) == ["attention"]
        np.testing.assert_allclose(lib.run([q, kt, v])[0], reference(q, k, v), rtol=1e-5, atol=1e-5)


def test_attention_of_symbolic_lengths_builds_once(rng, tmp_path):
    """Queries of length L and keys of length S, both symbolic: one build, run at lengths that
    divide no tile, one query row, one key, no keys at all (zeros, as the unfused product of an
    empty softmax gives), and from the exported module."""
    mod = attention_model(["N", 2, "L", 64], ["N", 2, "S", 64], ["N", 2, "S", 32])
    lib = tessera.build(mod, db=False)
    lib.export(str(tmp_path / "attention.so"))
    module = tessera.load(str(tmp_path / "attention.so"))
    assert lib.symbolic and "attention" in kernel_ops(lib)
    for n, length, keys in [(2, 37, 70), (1, 1, 1), (3, 5, 0), (1, 0, 4), (2, 130, 16)]:
        q, k, v = inputs(rng, [n, 2], length, keys, 64, 32)
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([q, k, v])[0], reference(q, k, v), rtol=1e-5, atol=1e-5)


def test_a_nan_reaches_its_row_as_without_fusion(rng):
    q, k, v = inputs(rng, [1, 2], 12, 20, 16, 16)
    q[0, 1, 3, 5] = np.nan
    k[0, 0, 7, 2] = np.inf
    mod = attention_model(q.shape, k.shape, v.shape)
    fused, unfused = (tessera.build(mod, db=False, opt_level=level) for level in (3, 2))
    assert kernel_ops(fused) == ["attention"]
    got, want = fused.run([q, k, v])[0], unfused.run([q, k, v])[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0, 1, 3]).all() and np.isnan(got[0, 0]).any()  # rows whose score of key 7 is +inf
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["scores read elsewhere", "softmax along another axis", "broadcast batch",
                                  "few value columns", "few query rows"])
def test_attention_stays_three_kernels_where_fusion_does_not_apply(rng, case):
    shapes = {"q": [2, 2, 12, 16], "k": [2, 2, 20, 16], "v": [2, 2, 20, 32]}
    options = {}
    if case == "scores read elsewhere":
        options["extra_output"] = True
    elif case == "softmax along another axis":
        shapes["k"], shapes["v"], options["axis"] = [2, 2, 12, 16], [2, 2, 12, 32], 2
    elif case == "broadcast batch":
        shapes["k"], shapes["v"] = [1, 2, 20, 16], [1, 2, 20, 32]
    elif case == "few value columns":
        shapes["v"] = [2, 2, 20, 8]
    else:
        shapes["q"] = [2, 2, 3, 16]
    q, k, v = (rng.standard_normal(shapes[n]).astype("float32") for n in "qkv")
    lib = tessera.build(attention_model(q.shape, k.shape, v.shape, **options), db=False)
    assert "attention" not in kernel_ops(lib)
    s = q.astype("float64") @ np.swapaxes(k, -1, -2) * 0.125
    p = np.exp(s - s.max(axis=options.get("axis", -1), keepdims=True))
    want = p / p.sum(axis=options.get("axis", -1), keepdims=True) @ v
    np.testing.assert_allclose(lib.run([q, k, v])[0], want, rtol=1e-5, atol=1e-5)


def test_the_attention_op_from_the_graph_api(rng):
    """tessera.relay's attention with keys [.., S, D] (trans_k) and a scale; shapes that do not fit
    are an error naming them."""
    r = tessera.relay
    q, k, v = inputs(rng, [3], 10, 21, 24, 16)
    x = [r.var(n, a.shape) for n, a in zip("qkv", (q, k, v))]
    lib = tessera.build(r.function(x, r.op.attention(*x, scale=0.5, trans_k=1)), db=False)
    np.testing.assert_allclose(lib.run([q, k, v])[0], reference(q, k, v, 0.5), rtol=1e-5, atol=1e-5)
    bad = [r.var("q", (3, 10, 24)), r.var("k", (3, 21, 23)), r.var("v", (3, 21, 16))]
    with pytest.raises(tessera.Error, match=r"attention: q \(3, 10, 24\), k \(3, 21, 23\) \(transposed\) and v"):
        tessera.build(r.function(bad, r.op.attention(*bad, trans_k=1)), db=False)

"""Graph optimization levels (standard_passes in relay_ir/transforms/passes.h): every level 0..3
computes what level 0 does, on small graphs of convolutions, products and batch normalizations
(against numpy too) and on the real models; BatchNormalization folds into the preceding
Conv/Gemm/MatMul from level 1, a layer normalization written as arithmetic becomes one layer_norm
from level 1, and level 3's prepacked weights (AlterOpLayout) change no bit."""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import host_cpu
import tessera
from nn_testing import conv_reference, load

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LEVELS = [0, 1, 2, 3]


def graph(nodes, x, inits, out_name="y"):
    """A model of `nodes` over input "x" (the array x) and the initializers {name: array}."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info(out_name, TensorProto.UNDEFINED, None)],
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()])
    return load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def bn_params(rng, c):
    p = {"scale": rng.standard_normal(c), "bias": rng.standard_normal(c), "mean": rng.standard_normal(c),
         "var": rng.random(c) + 0.5}
    return {k: v.astype("float32") for k, v in p.items()}


def bn_reference(y, p, eps):
    shape = (1, -1) + (1,) * (y.ndim - 2)
    r = {k: v.astype("float64").reshape(shape) for k, v in p.items()}
    return (y - r["mean"]) / np.sqrt(r["var"] + eps) * r["scale"] + r["bias"]


def bn_node(inp, eps):
    return helper.make_node("BatchNormalization", [inp, "scale", "bias", "mean", "var"], ["y"], epsilon=eps)


def kernel_ops(lib):
    return [k["op"] for k in lib.kernels]


def run_levels(mod, x):
    """{level: (outputs, kernel ops)} for every level."""
    out = {}
    for level in LEVELS:
        lib = tessera.build(mod, opt_level=level)
        out[level] = (lib.run([x])[0], kernel_ops(lib))
    return out


def check_levels(results, want, rtol=1e-4):
    base = results[0][0]
    np.testing.assert_allclose(base, want, rtol=rtol, atol=rtol * np.abs(want).max())
    for level, (y, _) in results.items():
        np.testing.assert_allclose(y, base, rtol=1e-5, atol=1e-5 * np.abs(base).max(), err_msg=f"opt level {level}")


def saved_model(folder, nodes, x_shape, inits, opset, extra_output=None):
    """The model of `nodes` over input "x" of x_shape (a dimension may be a name) with output "y"
    (and `extra_output`), saved in `folder` and loaded from there: a model of symbolic sizes is
    read again at its first run."""
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ["y", extra_output] if name]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)], outputs,
                          initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()])
    path = os.path.join(folder, "model.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return tessera.onnx.load(path)


# --- BatchNormalization folding ---------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("groups,channels", [(1, 32), (1, 24), (4, 32), (8, 8)])
def test_conv_batch_norm(rng, bias, groups, channels):
    # Blocked (32 and 24 channels), grouped and depthwise convolutions, with and without bias.
    c = 8
    x = rng.standard_normal((1, c, 9, 11)).astype("float32")
    w = rng.standard_normal((channels, c // groups, 3, 3)).astype("float32")
    b = rng.standard_normal(channels).astype("float32")
    p = bn_params(rng, channels)
    inits = dict(w=w, **p, **({"b": b} if bias else {}))
    conv = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"], pads=[1, 1, 1, 1], group=groups)
    results = run_levels(graph([conv, bn_node("c", 1e-3)], x, inits), x)
    want = bn_reference(conv_reference(x, w, b if bias else None, pads=[1, 1, 1, 1], groups=groups), p, 1e-3)
    check_levels(results, want)
    assert "batch_norm" in results[0][1]
    for level in (1, 2, 3):
        assert not any("batch_norm" in op for op in results[level][1]), results[level][1]


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("with_c,beta", [(True, 1.0), (True, 0.5), (False, 1.0)])
def test_gemm_batch_norm(rng, trans_b, with_c, beta):
    x = rng.standard_normal((3, 20)).astype("float32")
    w = rng.standard_normal((40, 20) if trans_b else (20, 40)).astype("float32")
    c = rng.standard_normal(40).astype("float32")
    p = bn_params(rng, 40)
    inits = dict(w=w, **p, **({"c": c} if with_c else {}))
    gemm = helper.make_node("Gemm", ["x", "w"] + (["c"] if with_c else []), ["g"], transB=trans_b, alpha=1.5, beta=beta)
    results = run_levels(graph([gemm, bn_node("g", 1e-5)], x, inits), x)
    y = 1.5 * x.astype("float64") @ (w.T if trans_b else w).astype("float64") + (beta * c if with_c else 0)
    check_levels(results, bn_reference(y, p, 1e-5))
    assert not any("batch_norm" in op for op in results[1][1])


def test_matmul_batch_norm(rng):
    x = rng.standard_normal((5, 24)).astype("float32")
    w = rng.standard_normal((24, 48)).astype("float32")
    p = bn_params(rng, 48)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), bn_node("m", 1e-5)]
    results = run_levels(graph(nodes, x, dict(w=w, **p)), x)
    check_levels(results, bn_reference(x.astype("float64") @ w, p, 1e-5))
    assert not any("batch_norm" in op for op in results[1][1])


def test_batch_norm_of_a_value_read_elsewhere_stays(rng):
    # The convolution's output also feeds the Add, which needs it unnormalized.
    x = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    w = rng.standard_normal((16, 4, 3, 3)).astype("float32")
    p = bn_params(rng, 16)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), bn_node("c", 1e-5),
             helper.make_node("Add", ["c", "y"], ["z"])]
    results = run_levels(graph(nodes, x, dict(w=w, **p), out_name="z"), x)
    conv = conv_reference(x, w, pads=[1, 1, 1, 1])
    check_levels(results, conv + bn_reference(conv, p, 1e-5))
    assert any("batch_norm" in op for op in results[2][1])


# --- LayerNormFusion ------------------------------------------------------------------


def decomposed_layer_norm(folder, x_shape, axes, affine, opset, extra_output=None):
    """A layer normalization as exporters before opset 17 write it (opset 18 gives the axes as an
    input), over input "x" of x_shape (a dimension may be a name), saved in `folder`; its scale and
    bias."""
    rng = np.random.default_rng(7)
    normalized = [x_shape[a] for a in sorted(a % len(x_shape) for a in axes)]
    inits = {"two": np.array(2.0, "float32"), "eps": np.array(1e-3, "float32")}
    mean = lambda i, o: (helper.make_node("ReduceMean", [i, "axes"], [o]) if opset >= 18 else
                         helper.make_node("ReduceMean", [i], [o], axes=axes))
    if opset >= 18:
        inits["axes"] = np.array(axes, "int64")
    nodes = [mean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"]), helper.make_node("Pow", ["d", "two"], ["d2"]),
             mean("d2", "v"), helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n" if affine else "y"])]
    if affine:
        inits["scale"] = rng.standard_normal(normalized).astype("float32")
        inits["bias"] = rng.standard_normal(normalized[-1:]).astype("float32")
        nodes += [helper.make_node("Mul", ["scale", "n"], ["ns"]), helper.make_node("Add", ["ns", "bias"], ["y"])]
    return saved_model(folder, nodes, x_shape, inits, opset, extra_output), inits


def layer_norm_reference(x, axes, inits, affine):
    x = x.astype("float64")
    d = x - x.mean(axis=tuple(axes), keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=tuple(axes), keepdims=True) + 1e-3)
    return y * inits["scale"] + inits["bias"] if affine else y


@pytest.mark.parametrize("x_shape,run_shape,axes", [([2, 5, 7], [2, 5, 7], [-1]), ([3, 4, 6], [3, 4, 6], [1, 2]),
                                                    (["N", "L", 33], [3, 17, 33], [-1]), ([4, 1], [4, 1], [-1])])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("opset", [14, 18])
def test_layer_norm_written_as_arithmetic_is_one_kernel(rng, tmp_path, x_shape, run_shape, axes, affine, opset):
    mod, inits = decomposed_layer_norm(tmp_path, x_shape, axes, affine, opset)
    x = rng.standard_normal(run_shape).astype("float32")
    results = run_levels(mod, x)
    check_levels(results, layer_norm_reference(x, axes, inits, affine))
    assert len(results[0][1]) > 1
    for level in (1, 2, 3):
        assert results[level][1] == ["layer_norm"], results[level][1]


def test_layer_norm_arithmetic_read_elsewhere_stays(rng, tmp_path):
    # The difference from the mean is an output too: the arithmetic stays as it is.
    mod, inits = decomposed_layer_norm(tmp_path, [2, 5, 7], [-1], True, 14, extra_output="d")
    x = rng.standard_normal((2, 5, 7)).astype("float32")
    lib = tessera.build(mod)
    y, d = lib.run([x])
    np.testing.assert_allclose(y, layer_norm_reference(x, [-1], inits, True), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(d, x - x.mean(axis=-1, keepdims=True), rtol=1e-5, atol=1e-5)
    assert "layer_norm" not in kernel_ops(lib)


# --- RowsBeforeProducts: batch_first attention's transposes ------------------------------


def batch_first_projection(folder, x_shape, gemm, extra_output=None):
    """The end of nn.MultiheadAttention(batch_first=True) as exported: x [N, L, E] -> [L, N, E] ->
    [L*N, E] -> Gemm (transB=1, bias) or MatMul -> Reshape to [L, N, E] -> [N, L, E], + x."""
    e = x_shape[-1]
    rng = np.random.default_rng(3)
    inits = {"w": (rng.standard_normal((e, e)) / np.sqrt(e)).astype("float32"),
             "b": rng.standard_normal(e).astype("float32"), "rows": np.array([-1, e], "int64")}
    product = (helper.make_node("Gemm", ["flat", "w", "b"], ["p"], transB=1) if gemm else
               helper.make_node("MatMul", ["flat", "w"], ["p"]))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Reshape", ["t", "rows"], ["flat"]), product,
             helper.make_node("Shape", ["t"], ["t_shape"]),
             helper.make_node("Reshape", ["p", "t_shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["back"], perm=[1, 0, 2]),
             helper.make_node("Add", ["x", "back"], ["y"])]
    return saved_model(folder, nodes, x_shape, inits, 14, extra_output), inits


def batch_first_reference(x, inits, gemm):
    x = x.astype("float64")
    p = x @ inits["w"].T.astype("float64") + inits["b"] if gemm else x @ inits["w"].astype("float64")
    return x + p


@pytest.mark.parametrize("x_shape,run_shapes", [([3, 5, 16], [(3, 5, 16)]), ([1, 7, 33], [(1, 7, 33)]),
                                                (["N", "L", 24], [(2, 9, 24), (1, 1, 24), (5, 3, 24), (0, 4, 24)])])
@pytest.mark.parametrize("gemm", [True, False])
def test_batch_first_transposes_move_before_the_product(rng, tmp_path, x_shape, run_shapes, gemm):
    # The transpose back to [N, L, E] moves onto the product's left operand, where it cancels the
    # first one; the residual sum joins the product: one kernel.
    mod, inits = batch_first_projection(tmp_path, x_shape, gemm)
    for level in LEVELS:
        lib = tessera.build(mod, opt_level=level)
        for shape in run_shapes:
            x = rng.standard_normal(shape).astype("float32")
            np.testing.assert_allclose(lib.run([x])[0], batch_first_reference(x, inits, gemm), rtol=1e-4, atol=1e-4,
                                       err_msg=f"opt level {level}, {shape}")
        if level >= 1:
            ops = kernel_ops(lib)
            assert len(ops) == 1 and ops[0].startswith("fused_matmul_add"), ops


def test_batch_first_product_read_elsewhere_stays(rng, tmp_path):
    # The product's rows in their own order are an output too: nothing moves.
    mod, inits = batch_first_projection(tmp_path, [2, 3, 8], True, extra_output="p")
    x = rng.standard_normal((2, 3, 8)).astype("float32")
    lib = tessera.build(mod)
    y, p = lib.run([x])
    np.testing.assert_allclose(y, batch_first_reference(x, inits, True), rtol=1e-4, atol=1e-4)
    want_p = x.transpose(1, 0, 2).reshape(-1, 8) @ inits["w"].T + inits["b"]
    np.testing.assert_allclose(p, want_p, rtol=1e-4, atol=1e-4)
    assert "gemm" in kernel_ops(lib)


# --- AlterOpLayout: prepacked weights --------------------------------------------------


def conv_relu(rng, x, m, kernel, stride=1):
    """A model of x through Conv (random constant weight and bias, padding that keeps the size at
    stride 1) and Relu, and numpy's result for it."""
    w = rng.standard_normal((m, x.shape[1], kernel, kernel)).astype("float32")
    b = rng.standard_normal(m).astype("float32")
    pad = kernel // 2
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[pad] * 4, strides=[stride] * 2)
    mod = graph([conv, helper.make_node("Relu", ["c"], ["y"])], x, {"w": w, "b": b})
    return mod, np.maximum(conv_reference(x, w, b, strides=[stride] * 2, pads=[pad] * 4), 0)


def exact_at_level3(mod, x):
    """Outputs at levels 2 and 3 (which differ only by AlterOpLayout) and level 3's kernel ops."""
    lib2, lib3 = tessera.build(mod, opt_level=2), tessera.build(mod, opt_level=3)
    return lib2.run([x])[0], lib3.run([x])[0], kernel_ops(lib3)


@pytest.mark.parametrize("channels,kernel,stride", [(32, 3, 1), (24, 3, 2), (20, 1, 2), (64, 5, 1), (45, 1, 1), (8, 1, 1)])
def test_prepacked_conv_weights_are_exact(rng, channels, kernel, stride):
    # Blocks of two vectors, one vector with a padded block, a strided 1x1 (blocked, not
    # pointwise), a wider kernel, and pointwise ones (in tiles of 8 rows, the last one padded;
    # one tile) over 195 positions, which end in a partial column panel.
    x = rng.standard_normal((2, 6, 13, 15)).astype("float32")
    mod, want = conv_relu(rng, x, channels, kernel, stride)
    y2, y3, ops = exact_at_level3(mod, x)
    np.testing.assert_array_equal(y3, y2)
    np.testing.assert_allclose(y3, want, rtol=1e-4, atol=1e-4)
    assert not any("pack" in op for op in ops), ops  # packed at compile time


@pytest.mark.parametrize("n,c,m,size", [
    (1, 160, 96, (7, 7)),  # a MobileNet layer: 49 positions, 7 row tiles of 7, 3 panels of 32
    (2, 64, 56, (5, 7)),  # two images, a partly filled panel of channels
    (1, 64, 144, (7, 7)),  # 144 channels: three panels of three vectors (48), none padded
    (1, 128, 64, (4, 5)),  # 20 positions: row tiles of 8, the last one padded
    (1, 1024, 512, (14, 14)),  # a ResNet-50 layer: 196 positions, long enough a reduction to pay
    (2, 192, 64, (14, 14)),  # two images of a MobileNet layer
])
def test_pointwise_convolutions_with_positions_as_rows(rng, n, c, m, size):
    # With a packed weight and positions that pad badly as columns, a 1x1 convolution computes
    # X^T W^T: positions are the rows of the product, the weight's channels its column panels
    # (packed in blocks of 32, or 48 where only that fills whole panels). 14x14 positions take it
    # only with a long reduction; their row tiles take two rows of 7, a row of the plane. (The
    # layout is AVX-512's; the host's computes.)
    x = rng.standard_normal((n, c) + size).astype("float32")
    mod, want = conv_relu(rng, x, m, 1)
    lib = tessera.build(mod, opt_level=3)
    layout = tessera.build(mod, target=host_cpu.AVX512, opt_level=3, jit=False).kernels[0]
    block = 48 if m % 32 and m % 48 == 0 else 32
    assert f"float32[{-(-m // block)}, {c}, 1, 1, {block}]" in layout["signature"], layout["signature"]
    if size == (14, 14):
        assert "unrolled (i, 0, 14)" in layout["lowered"]
    np.testing.assert_allclose(lib.run([x])[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("m,kernel,stride", [(32, 3, 2), (64, 7, 2), (24, 3, 1)])
def test_stem_convolutions_vectorize_positions(rng, m, kernel, stride):
    # A first layer (3 input channels) keeps positions in the lanes and blocks of output channels,
    # an accumulator each, in half the registers (16 with AVX-512's 32, 8 with AVX2's 16), its
    # weight packed in those blocks at level 3: the same loops as level 2's per-call packing, so
    # the same values.
    x = rng.standard_normal((1, 3, 45, 38)).astype("float32")
    mod, want = conv_relu(rng, x, m, kernel, stride)
    y2, y3, _ = exact_at_level3(mod, x)
    np.testing.assert_array_equal(y3, y2)
    np.testing.assert_allclose(y3, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    for target, block in [("llvm", host_cpu.vector_registers() // 2), (host_cpu.AVX512, 16), ("llvm -mcpu=haswell", 8)]:
        signature = tessera.build(mod, target=target, opt_level=3, jit=False).kernels[0]["signature"]
        assert f"float32[{-(-m // block)}, 3, {kernel}, {kernel}, {block}]" in signature, (target, signature)


@pytest.mark.parametrize("y_shape", [(32,), (5, 2, 4, 32)])
def test_batch_folding_matmul_with_epilogue(rng, y_shape):
    # [2, 4, 16] @ W is one product of 8 rows; an Add of its shape fuses (the tiles span the
    # folded rows), one broadcasting it to [5, 2, 4, 32] runs after it.
    x = rng.standard_normal((2, 4, 16)).astype("float32")
    w = rng.standard_normal((16, 32)).astype("float32")
    y = rng.standard_normal(y_shape).astype("float32")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "y"], ["z"])]
    results = run_levels(graph(nodes, x, {"w": w, "y": y}, out_name="z"), x)
    check_levels(results, x.astype("float64") @ w + y)
    assert results[2][1] == (["fused_matmul_add"] if len(y_shape) == 1 else ["matmul", "add"]), results[2][1]


def test_matmul_epilogue_of_another_shape_keeps_the_product_stage(rng):
    # add(a, b) has the bias's shape, not the product's: the tiles store the product (15 folded
    # rows) and the epilogue runs after them, in the same kernel.
    text = """def @main(%x: float32[5, 3, 4], %w: float32[4, 17], %a: float32[17], %b: float32[17]) -> float32[5, 3, 17] {
  %0 = matmul(%x, %w);
  %1 = add(%a, %b);
  add(%0, %1)
}"""
    x, w = rng.standard_normal((5, 3, 4)).astype("float32"), rng.standard_normal((4, 17)).astype("float32")
    a, b = rng.standard_normal(17).astype("float32"), rng.standard_normal(17).astype("float32")
    lib = tessera.build(tessera.relay.parse(text))
    assert kernel_ops(lib) == ["fused_matmul_add_add"]
    np.testing.assert_allclose(lib.run([x, w, a, b])[0], x.astype("float64") @ w + a + b, rtol=1e-5, atol=1e-5)


def test_one_element_constants_of_fused_kernels_are_literals(rng):
    # Two products whose epilogues differ only in their constants: each kernel holds its own
    # values (no scalar parameters, two kernels), and the constant the lone Add reads too still
    # reaches it as the build plan's constant.
    x = rng.standard_normal((7, 12)).astype("float32")
    w, v = (rng.standard_normal((12, 9)).astype("float32") for _ in range(2))
    consts = {"c1": np.float32(0.5), "c2": np.float32(1.25), "c3": np.array([[0.75]], "float32"),
              "c4": np.float32(-2.0)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m1"]), helper.make_node("Mul", ["m1", "c1"], ["a1"]),
             helper.make_node("Add", ["a1", "c2"], ["y1"]), helper.make_node("MatMul", ["x", "v"], ["m2"]),
             helper.make_node("Mul", ["m2", "c3"], ["a2"]), helper.make_node("Add", ["a2", "c4"], ["y2"]),
             helper.make_node("Add", ["x", "c1"], ["y3"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in ["y1", "y2", "y3"]],
                          initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in
                                       {"w": w, "v": v, **consts}.items()])
    lib = tessera.build(load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])), opt_level=2)
    y1, y2, y3 = lib.run([x])
    np.testing.assert_allclose(y1, x.astype("float64") @ w * 0.5 + 1.25, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y2, x.astype("float64") @ v * 0.75 - 2.0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y3, x + 0.5, rtol=1e-6)
    fused = [k for k in lib.kernels if k["op"] == "fused_matmul_mul_add"]
    assert len(fused) == 2, lib.kernels
    for k in fused:
        assert k["signature"].count("float32[]") == 0 and "float32[1, 1]" not in k["signature"], k["signature"]


@pytest.mark.parametrize("rows", [1, 3, 16])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_prepacked_gemm_weights(rng, rows, trans_b):
    # 1000 columns pad the last panel. With 4 rows or more the kernel packed per call before, and
    # now reads the same panels: exact. Fewer rows (the classifier of a CNN) move from the
    # unpacked kernel to the packed one, whose sums LLVM may reassociate differently.
    x = rng.standard_normal((rows, 64)).astype("float32")
    w = rng.standard_normal((1000, 64) if trans_b else (64, 1000)).astype("float32")
    c = rng.standard_normal(1000).astype("float32")
    mod = graph([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=trans_b)], x, {"w": w, "c": c})
    y2, y3, _ = exact_at_level3(mod, x)
    if rows >= 4:
        np.testing.assert_array_equal(y3, y2)
    np.testing.assert_allclose(y3, y2, rtol=1e-6, atol=1e-6 * np.abs(y2).max())
    np.testing.assert_allclose(y3, x.astype("float64") @ (w.T if trans_b else w) + c, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("wshape", [(48, 40), (3, 48, 40)])
def test_prepacked_matmul_weights_are_exact(rng, wshape):
    # A 2-D weight under batched activations, and a batched weight. 40 rows make whole register
    # tiles on every CPU (8 rows with 32 registers, 5 with 16): in a partial tile the back end may
    # sum the rows that repeat the last one (computed, then dropped) in another order, as fast
    # math allows, and the tile's live rows with them.
    x = rng.standard_normal((3, 40, 48)).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    mod = graph([helper.make_node("MatMul", ["x", "w"], ["y"])], x, {"w": w})
    y2, y3, _ = exact_at_level3(mod, x)
    np.testing.assert_array_equal(y3, y2)
    np.testing.assert_allclose(y3, np.matmul(x.astype("float64"), w), rtol=1e-4, atol=1e-4)


def test_variable_weights_are_not_packed(rng):
    x = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    w = rng.standard_normal((32, 4, 3, 3)).astype("float32")
    text = """def @main(%x: float32[1, 4, 8, 8], %w: float32[32, 4, 3, 3]) -> float32[1, 32, 8, 8] {
  conv(%x, %w, pads=[1, 1, 1, 1])
}"""
    lib = tessera.build(tessera.relay.parse(text), opt_level=3)
    (y,) = lib.run([x, w])
    np.testing.assert_allclose(y, conv_reference(x, w, pads=[1, 1, 1, 1]), rtol=1e-4, atol=1e-4)
    assert [k["op"] for k in lib.kernels] == ["conv"]


@pytest.mark.parametrize("n,c,m,size,pads", [
    (1, 8, 16, (12, 12), (1, 1, 1, 1)),  # exactly 3x3 tiles, one vector of output channels
    (2, 13, 40, (13, 15), (1, 1, 1, 1)),  # tiles past both edges, channels filling no vector, a partial panel
    (1, 16, 33, (14, 17), (0, 2, 1, 0)),  # asymmetric pads
    (1, 64, 64, (28, 28), (1, 1, 1, 1)),  # a ResNet layer
    (3, 64, 72, (7, 7), (1, 1, 1, 1)),  # 2x2 tiles, a quarter of their outputs padding (ResNet's last stage), 3 images
])
def test_winograd_convolutions(rng, n, c, m, size, pads):
    # Level 3 takes 3x3 stride-1 convolutions with constant weights to Winograd's F(4x4, 3x3),
    # its transformed weight ([36, panels, C, columns]) folded at compile time; level 2 keeps the
    # direct form. F(4x4, 3x3) rounds differently from a direct sum, by about 1e-6 relative.
    x = rng.standard_normal((n, c) + size).astype("float32")
    w = rng.standard_normal((m, c, 3, 3)).astype("float32")
    b = rng.standard_normal(m).astype("float32")
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=list(pads))
    mod = graph([conv, helper.make_node("Relu", ["c"], ["y"])], x, {"w": w, "b": b})
    lib2, lib3 = tessera.build(mod, opt_level=2), tessera.build(mod, opt_level=3)
    assert "float32[36, " in lib3.kernels[0]["signature"] and "winograd" not in lib2.kernels[0]["lowered"]
    want = np.maximum(conv_reference(x, w, b, pads=list(pads)), 0)
    for lib in (lib2, lib3):
        np.testing.assert_allclose(lib.run([x])[0], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("n,size,stride,c,m", [(4, (7, 7), 1, 64, 32), (4, (5, 5), 1, 64, 64), (16, (4, 4), 1, 128, 128),
                                               (1, (28, 28), 2, 64, 32), (1, (28, 28), 1, 4, 32)])
def test_winograd_needs_enough_tiles_stride_one_and_channels(rng, n, size, stride, c, m):
    # Outputs of fewer than 9 tiles stay direct unless they are 4 tiles or more of which padding
    # takes at most a quarter, with 64 channels in and out: 7x7 with 32 output channels, 5x5 (4
    # tiles for 25 outputs) and 4x4 (one tile) stay direct; so do strided and narrow convolutions.
    x = rng.standard_normal((n, c) + size).astype("float32")
    w = rng.standard_normal((m, c, 3, 3)).astype("float32")
    mod = graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4, strides=[stride] * 2)], x, {"w": w})
    lib = tessera.build(mod, opt_level=3)
    assert "winograd" not in lib.kernels[0]["lowered"]
    np.testing.assert_allclose(lib.run([x])[0], conv_reference(x, w, pads=[1] * 4, strides=[stride] * 2), rtol=1e-4, atol=1e-4)


def test_winograd_on_7x7_outputs_takes_a_batch_on_16_lane_vectors(rng):
    # 7x7 outputs (4 tiles, a quarter of their outputs padding) of 64 channels: on AVX-512's 16
    # lanes the direct form's arithmetic is fast enough that Winograd's transformed weight, 4 times
    # the direct one's, pays from 9 tiles over the batch (3 images); on AVX2's 8 from one image.
    w = rng.standard_normal((64, 64, 3, 3)).astype("float32")
    for target, takes in ((host_cpu.AVX512, {1: False, 2: False, 3: True}), ("llvm -mcpu=x86-64-v3", {1: True, 2: True})):
        for n, winograd in takes.items():
            x = np.zeros((n, 64, 7, 7), "float32")
            mod = graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4)], x, {"w": w})
            lib = tessera.build(mod, opt_level=3, target=target, jit=False)
            assert ("winograd" in lib.kernels[0]["lowered"]) == winograd, (target, n)


# --- ConvertLayout: channels-last depthwise-separable networks ---------------------------


def conv_node(rng, inits, x, y, cin, cout, kernel=1, stride=1, groups=1):
    """A Conv of constant weight and bias, padding that keeps the size at stride 1."""
    name = f"w_{y}"
    inits[name] = (rng.standard_normal((cout, cin // groups, kernel, kernel)) / np.sqrt(cin // groups * kernel * kernel)).astype("float32")
    inits[f"b_{y}"] = rng.standard_normal(cout).astype("float32")
    return helper.make_node("Conv", [x, name, f"b_{y}"], [y], pads=[kernel // 2] * 4, strides=[stride] * 2, group=groups)


def clip(x, y):
    return helper.make_node("Clip", [x, "lo", "hi"], [y])


def mobile_block_net(rng, between_nodes=()):
    """A MobileNet in miniature: a stem (3 colours, stride 2), a depthwise and a 1x1 layer, an
    inverted residual block (1x1 expansion, depthwise, 1x1 projection, residual add), a strided
    depthwise layer, the classifier. `between_nodes(inits)` may put nodes between the first
    depthwise layer's output "d1" and the 1x1 layer, which then reads "between"."""
    inits = {"lo": np.array(0, "float32"), "hi": np.array(6, "float32")}
    nodes = [conv_node(rng, inits, "x", "c0", 3, 16, 3, 2), clip("c0", "a0"),
             conv_node(rng, inits, "a0", "c1", 16, 16, 3, 1, 16), clip("c1", "d1")]
    src = "d1"
    if between_nodes:
        nodes += list(between_nodes(inits))
        src = "between"
    nodes += [conv_node(rng, inits, src, "p1", 16, 24),
              conv_node(rng, inits, "p1", "e2", 24, 72), clip("e2", "a2"),
              conv_node(rng, inits, "a2", "c2", 72, 72, 3, 1, 72), clip("c2", "d2"),
              conv_node(rng, inits, "d2", "p2", 72, 24), helper.make_node("Add", ["p1", "p2"], ["r2"]),
              conv_node(rng, inits, "r2", "c3", 24, 24, 3, 2, 24), clip("c3", "d3"),
              helper.make_node("GlobalAveragePool", ["d3"], ["g"]), helper.make_node("Flatten", ["g"], ["f"])]
    inits["fc"] = rng.standard_normal((10, 24)).astype("float32")
    nodes.append(helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1))
    return nodes, inits


def test_depthwise_separable_network_runs_channels_last(rng):
    # Every convolution becomes a conv_nhwc kernel (the stem reading the NCHW image as it is) or
    # a matrix product, the clips and the residual add fuse into them, the pooling is a mean
    # over rows and columns, and no transpose is left: the levels agree.
    x = rng.standard_normal((2, 3, 29, 23)).astype("float32")
    nodes, inits = mobile_block_net(rng)
    results = run_levels(graph(nodes, x, inits), x)
    check_levels(results, results[0][0])
    ops = results[3][1]
    assert ops.count("fused_conv_nhwc_clip") == 4 and ops.count("fused_matmul_add_add") == 1, ops
    assert not any("transpose" in op or op.startswith("fused_conv_clip") for op in ops), ops
    assert "reduce_mean" in ops and all("nhwc" not in op for op in results[2][1])


def test_layout_sensitive_ops_and_broadcasts_keep_transposes(rng):
    # A max pooling (which reads NCHW) and a product with a per-channel constant [C, 1, 1]
    # between two converted layers: the transposes around them stay, the results agree.
    def between(inits):
        inits["scale"] = rng.standard_normal((16, 1, 1)).astype("float32")
        return [helper.make_node("MaxPool", ["d1"], ["m"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1]),
                helper.make_node("Mul", ["m", "scale"], ["between"])]

    x = rng.standard_normal((1, 3, 20, 18)).astype("float32")
    nodes, inits = mobile_block_net(rng, between)
    results = run_levels(graph(nodes, x, inits), x)
    check_levels(results, results[0][0])
    ops = results[3][1]
    assert sum("transpose" in op for op in ops) == 2 and "fused_conv_nhwc_clip" in ops, ops


def test_unaligned_inputs_are_copied_in_shares(rng):
    # An input not 64-byte aligned is copied (over the threads, each a contiguous share) before
    # the kernels read it: the same outputs as from an aligned array.
    x = rng.standard_normal((1, 3, 96, 80)).astype("float32")
    nodes, inits = mobile_block_net(rng)
    lib = tessera.build(graph(nodes, x, inits), opt_level=3)
    buf = np.zeros(x.size + 1, "float32")
    shifted = buf[1:].reshape(x.shape)
    shifted[:] = x
    assert shifted.ctypes.data % 64 != 0
    np.testing.assert_array_equal(lib.run([shifted])[0], lib.run([x])[0])


def test_networks_with_other_convolutions_keep_nchw(rng):
    # A dense 3x3 layer of 8 input channels beside a depthwise one: nothing changes layout.
    x = rng.standard_normal((1, 8, 12, 12)).astype("float32")
    inits = {}
    nodes = [conv_node(rng, inits, "x", "d", 8, 8, 3, 1, 8), conv_node(rng, inits, "d", "y", 8, 16, 3)]
    results = run_levels(graph(nodes, x, inits), x)
    check_levels(results, results[0][0])
    assert not any("nhwc" in op or "transpose" in op for op in results[3][1]), results[3][1]


# --- real models -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "transformer"])
def test_models_agree_across_levels(name):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_models  # needs python3-torch and python3-torchvision, which scripts/test.sh installs
    model_dir = os.path.join(ROOT, "models")
    mod = tessera.onnx.load(make_models.ensure(name, model_dir))
    x = np.load(os.path.join(model_dir, f"{name}.input.npy"))
    outs = {level: tessera.build(mod, opt_level=level).run([x])[0] for level in LEVELS}
    scale = np.abs(outs[0]).max()
    for level in LEVELS:
        assert np.abs(outs[level] - outs[0]).max() <= 1e-5 * scale, f"{name}: opt level {level} differs from level 0"

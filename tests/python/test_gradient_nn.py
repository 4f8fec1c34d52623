"""Gradients of the nn family's ops against central differences in float64: convolutions (every
geometry: strides, pads, dilations, groups, depthwise, 1-D to 3-D) and the ops their gradients
use, matrix products, pooling, normalizations (batch_norm_train with all its outputs), softmax
and losses; gradients of gradients where the ops involved have them."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def fmt(shape):
    return ", ".join(map(str, shape))


def params(**shapes):
    return ", ".join(f"%{name}: float64[{fmt(s)}]" for name, s in shapes.items())


def output_shape(text, *shapes):
    """The shape of the output of module `text` on inputs of these shapes."""
    return tessera.build(tessera.relay.parse(text)).run([r(*s) for s in shapes])[0].shape


def attrs(**kw):
    def value(v):
        if isinstance(v, str):
            return f'"{v}"'
        return str(list(v)) if isinstance(v, (list, tuple)) else str(v)
    return "".join(f", {k}={value(v)}" for k, v in kw.items())


# --- convolutions ---------------------------------------------------------------------------

CONV_2D = [  # x shape, w shape, attributes
    ((2, 3, 5, 6), (4, 3, 3, 3), dict()),
    ((1, 4, 7, 6), (6, 2, 3, 2), dict(strides=[2, 1], pads=[1, 0, 1, 2], groups=2)),
    ((2, 2, 7, 7), (3, 2, 3, 3), dict(strides=[2, 3], pads=[1, 1, 0, 2], dilations=[2, 1])),
    ((1, 3, 6, 5), (6, 1, 3, 3), dict(pads=[1, 1, 1, 1], groups=3)),                  # depthwise, multiplier 2
    ((2, 9, 3, 4), (13, 9, 1, 1), dict()),                                            # 1x1, odd channel counts
    ((1, 2, 9, 8), (5, 2, 2, 4), dict(strides=[3, 2], pads=[0, 2, 1, 1], dilations=[1, 2])),
    ((1, 2, 7, 8), (3, 2, 1, 1), dict(strides=[2, 3], pads=[1, 0, 0, 1])),              # strided 1x1: one phase
    ((1, 2, 9, 9), (2, 2, 3, 2), dict(strides=[2, 4], dilations=[2, 2], pads=[1, 2, 0, 1])),  # phases no tap reaches
]


@pytest.mark.parametrize("xs,ws,kw", CONV_2D)
def test_conv2d(xs, ws, kw):
    check_gradient(f"def @main({params(x=xs, w=ws, b=(ws[0],))}) {{ conv(%x, %w, %b{attrs(**kw)}) }}",
                   [r(*xs), r(*ws), r(ws[0])], ["x", "w", "b"])


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 11), (4, 3, 3), dict(strides=[2], pads=[1, 2], dilations=[2])),
    ((1, 4, 9), (4, 1, 5), dict(pads=[2, 2], groups=4)),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(strides=[1, 2, 2], pads=[1, 0, 1, 0, 1, 0])),
    ((1, 4, 3, 4, 5), (4, 2, 3, 1, 2), dict(groups=2, dilations=[1, 1, 2], pads=[1, 0, 0, 1, 0, 1])),
])
def test_conv_1d_3d(xs, ws, kw):
    check_gradient(f"def @main({params(x=xs, w=ws)}) {{ conv(%x, %w{attrs(**kw)}) }}", [r(*xs), r(*ws)], ["x", "w"])


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 4, 3), (3, 2, 3, 3), dict()),
    ((1, 4, 3, 4), (4, 3, 3, 2), dict(strides=[2, 3], pads=[1, 0, 0, 1], output_padding=[1, 2], groups=2)),
    ((1, 2, 5), (2, 3, 3), dict(strides=[2], dilations=[2], pads=[1, 1])),
    ((1, 2, 2, 3, 2), (2, 1, 2, 2, 3), dict(strides=[2, 1, 2], output_padding=[1, 0, 0])),
])
def test_conv_transpose(xs, ws, kw):
    groups = kw.get("groups", 1)
    b = ws[1] * groups
    check_gradient(f"def @main({params(x=xs, w=ws, b=(b,))}) {{ conv_transpose(%x, %w, %b{attrs(**kw)}) }}",
                   [r(*xs), r(*ws), r(b)], ["x", "w", "b"])


@pytest.mark.parametrize("xs,ws,kw", [CONV_2D[1], CONV_2D[2], CONV_2D[3]])
def test_conv_weight_grad_is_differentiable(xs, ws, kw):
    """conv_weight_grad (what a convolution's weight gradient is) against differences in both
    inputs: the second derivatives of convolutions."""
    ys = output_shape(f"def @main({params(x=xs, w=ws)}) {{ conv(%x, %w{attrs(**kw)}) }}", xs, ws)
    check_gradient(f"def @main({params(x=xs, dy=ys)}) {{ conv_weight_grad(%x, %dy, kernel={list(ws[2:])}{attrs(**kw)}) }}",
                   [r(*xs), r(*ys)], ["x", "dy"])


def test_conv_weight_grad_matches_numpy_on_tiles():
    """The register-tiled weight gradient in float32 where channel counts do not divide its tiles
    and the flattened positions do not divide the vectors."""
    x, dy = rng.standard_normal((3, 10, 9, 7)).astype("float32"), rng.standard_normal((3, 13, 5, 7)).astype("float32")
    mod = tessera.relay.parse("def @main(%x: float32[3, 10, 9, 7], %dy: float32[3, 13, 5, 7]) { "
                              "conv_weight_grad(%x, %dy, kernel=[3, 3], strides=[2, 1], pads=[1, 1, 1, 1]) }")
    dw = tessera.build(mod).run([x, dy])[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((13, 10, 3, 3))
    for kh in range(3):
        for kw in range(3):
            patch = xp[:, :, kh:kh + 9:2, kw:kw + 7]
            ref[:, :, kh, kw] = np.einsum("nchw,nmhw->mc", patch, dy)
    np.testing.assert_allclose(dw, ref, rtol=1e-4, atol=1e-4)


def test_conv_weight_grad_float16_accumulates_in_float32():
    x, dy = rng.standard_normal((2, 4, 6, 5)).astype("float16"), rng.standard_normal((2, 3, 6, 5)).astype("float16")
    mod = tessera.relay.parse("def @main(%x: float16[2, 4, 6, 5], %dy: float16[2, 3, 6, 5]) { "
                              "conv_weight_grad(%x, %dy, kernel=[3, 1], pads=[1, 0, 1, 0]) }")
    dw = tessera.build(mod).run([x, dy])[0]
    assert dw.dtype == np.float16
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (1, 1), (0, 0)))
    ref = np.stack([np.einsum("nchw,nmhw->mc", xp[:, :, k:k + 6], dy.astype("float64")) for k in range(3)], -1)[..., None]
    np.testing.assert_allclose(dw.astype("float64"), ref, rtol=2e-3, atol=2e-2)


def test_second_order_through_conv():
    """The gradient of a gradient: d/dw of sum(d loss / dx) for loss = sum(tanh(conv(x, w)))."""
    mod = tessera.relay.parse(f"def @main({params(x=(1, 2, 5, 5), w=(3, 2, 3, 3))}) {{ "
                              "%0 = conv(%x, %w, strides=[2, 2], pads=[1, 1, 1, 1]); %1 = tanh(%0); "
                              "reduce_sum(%1, axes=[], keepdims=0) }")
    first = tessera.relay.gradient(mod, ["x"])
    check_gradient(str(first), [r(1, 2, 5, 5), r(3, 2, 3, 3)], ["x", "w"])


# --- matrix products ------------------------------------------------------------------------

@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("cs", [(3, 5), (5,), (3, 1), (1, 1)])
def test_gemm(ta, tb, cs):
    a, b = (4, 3) if ta else (3, 4), (5, 4) if tb else (4, 5)
    check_gradient(f"def @main({params(a=a, b=b, c=cs)}) {{ gemm(%a, %b, %c, trans_a={ta}, trans_b={tb}, alpha=0.7, beta=-1.3) }}",
                   [r(*a), r(*b), r(*cs)], ["a", "b", "c"])


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ij,jk", [(2, 3), (3, 4)]),                      # implicit output
    ("ii->i", [(3, 3)]),                              # diagonal
    ("ii", [(4, 4)]),                                 # trace
    ("ij->", [(2, 3)]),
    ("ij->j", [(3, 4)]),                              # a letter only one operand has
    ("i,j->ij", [(3,), (2,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),  # broadcasting under '...'
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum(eq, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    args = ", ".join(f"%{n}" for n in names)
    check_gradient(f"def @main({params(**dict(zip(names, shapes)))}) {{ einsum({args}, equation=\"{eq}\") }}",
                   [r(*s) for s in shapes], names)


# --- pooling --------------------------------------------------------------------------------

def distinct(*shape):
    """Values with no ties (a maximum moved by a central difference stays the maximum)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.1 + rng.uniform(0, 0.01, shape))


POOL = [  # x shape, window attributes
    ((2, 2, 5, 6), dict(kernel=[2, 2], strides=[2, 2])),
    ((1, 3, 7, 7), dict(kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 2, 6, 7), dict(kernel=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1], ceil_mode=1)),
    ((1, 2, 8, 7), dict(kernel=[2, 3], strides=[1, 2], dilations=[2, 2], pads=[1, 1, 0, 1])),
    ((2, 2, 9), dict(kernel=[4], strides=[3], pads=[2, 1], ceil_mode=1)),
    ((1, 2, 4, 5, 4), dict(kernel=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])),
]


@pytest.mark.parametrize("xs,kw", POOL)
def test_max_pool(xs, kw):
    check_gradient(f"def @main({params(x=xs)}) {{ max_pool(%x{attrs(**kw)}) }}", [distinct(*xs)], ["x"])


@pytest.mark.parametrize("xs,kw", [((1, 2, 9), dict(kernel=[3], strides=[2], pads=[1, 1])), ((1, 2, 5, 5), dict(kernel=[3, 3], strides=[2, 2]))])
def test_max_pool_with_indices(xs, kw):
    check_gradient(f"def @main({params(x=xs)}) {{ %0 = max_pool_with_indices(%x{attrs(**kw)}); mul(%0.0, %0.0) }}", [distinct(*xs)], ["x"])


@pytest.mark.parametrize("xs,kw", POOL)
@pytest.mark.parametrize("include_pad", [0, 1])
def test_avg_pool(xs, kw, include_pad):
    check_gradient(f"def @main({params(x=xs)}) {{ avg_pool(%x{attrs(**kw)}, count_include_pad={include_pad}) }}", [r(*xs)], ["x"])


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("xs,kw", [POOL[1], POOL[4]])
def test_lp_pool(xs, kw, p):
    x = r(*xs)
    x += np.sign(x) * 0.2  # away from 0, where |x| has a kink
    check_gradient(f"def @main({params(x=xs)}) {{ lp_pool(%x{attrs(**kw)}, p={float(p)}) }}", [x], ["x"])


@pytest.mark.parametrize("op", ["global_avg_pool", "global_max_pool", "global_lp_pool"])
@pytest.mark.parametrize("xs", [(2, 3, 4, 5), (1, 2, 7), (1, 2, 2, 3, 2)])
def test_global_pool(op, xs):
    check_gradient(f"def @main({params(x=xs)}) {{ {op}(%x) }}", [distinct(*xs) - 1.0], ["x"])


def test_max_pool_ties_go_to_the_first_maximum_as_in_pytorch():
    torch = pytest.importorskip("torch")
    import torch_numpy
    x = rng.integers(0, 3, (2, 3, 7, 8)).astype("float32")  # many ties
    dy = rng.standard_normal((2, 3, 4, 4)).astype("float32")
    mod = tessera.relay.parse("def @main(%x: float32[2, 3, 7, 8]) { max_pool(%x, kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 0]) }")
    dx = tessera.build(tessera.relay.gradient(mod, ["x"], cotangents=True)).run([x, dy])[1]
    xt = torch_numpy.tensor(x, requires_grad=True)
    y = torch.nn.functional.max_pool2d(torch.nn.functional.pad(xt, (1, 0, 1, 1), value=-np.inf), 3, 2)
    y.backward(torch_numpy.tensor(dy))
    np.testing.assert_allclose(dx, torch_numpy.array(xt.grad), rtol=1e-6)


@pytest.mark.parametrize("unpooled", [[], [1, 2, 7, 6]])
def test_max_unpool(unpooled):
    # Flat positions in the [1, 2, 4, 6] unpooled input, each inside its 2x2 window.
    indices = np.array([[[[0, 3, 4], [13, 14, 17]], [[31, 32, 35], [43, 38, 46]]]])
    extra = f", output_shape={unpooled}" if unpooled else ""
    check_gradient(f"def @main(%v: float64[1, 2, 2, 3], %i: int64[1, 2, 2, 3]) {{ max_unpool(%v, %i, kernel=[2, 2], strides=[2, 2]{extra}) }}",
                   [r(1, 2, 2, 3), indices], ["v"])


@pytest.mark.parametrize("xs,kw", [POOL[2], POOL[3], POOL[4]])
def test_pooling_gradient_ops_are_differentiable(xs, kw):
    ys = output_shape(f"def @main({params(x=xs)}) {{ avg_pool(%x{attrs(**kw)}) }}", xs)
    check_gradient(f"def @main({params(v=ys)}) {{ window_sum_grad(%v{attrs(**kw)}, input_shape={list(xs)}) }}", [r(*ys)], ["v"])


# --- normalizations -------------------------------------------------------------------------

@pytest.mark.parametrize("xs", [(3, 4), (2, 3, 5), (2, 3, 2, 3)])
def test_batch_norm_inference(xs):
    c = xs[1]
    var = np.abs(r(c)) + 0.5
    check_gradient(f"def @main({params(x=xs, s=(c,), b=(c,), m=(c,), v=(c,))}) {{ batch_norm(%x, %s, %b, %m, %v, epsilon=0.01) }}",
                   [r(*xs), r(c), r(c), r(c), var], ["x", "s", "b", "m", "v"])


@pytest.mark.parametrize("xs", [(4, 3), (2, 3, 5), (2, 3, 2, 3)])
@pytest.mark.parametrize("unbiased", [0, 1])
def test_batch_norm_train(xs, unbiased):
    """Every output gets a random cotangent: y through the batch statistics, and the running and
    saved statistics."""
    c = xs[1]
    text = (f"def @main({params(x=xs, s=(c,), b=(c,), m=(c,), v=(c,))}) {{ "
            f"%0 = batch_norm_train(%x, %s, %b, %m, %v, epsilon=0.01, momentum=0.8, unbiased_running_var={unbiased}); "
            "(%0.0, %0.1, %0.2, %0.3, %0.4) }")
    check_gradient(text, [r(*xs), r(c), r(c), r(c), np.abs(r(c)) + 0.5], ["x", "s", "b", "m", "v"])


def test_batch_norm_train_forward():
    x = rng.standard_normal((4, 3, 2, 5))
    s, b, m, v = r(3), r(3), r(3), np.abs(r(3))
    text = (f"def @main({params(x=x.shape, s=(3,), b=(3,), m=(3,), v=(3,))}) {{ "
            "%0 = batch_norm_train(%x, %s, %b, %m, %v, epsilon=0.001, momentum=0.7, unbiased_running_var=1); "
            "(%0.0, %0.1, %0.2, %0.3, %0.4) }")
    y, rm, rv, sm, si = tessera.build(tessera.relay.parse(text)).run([x, s, b, m, v])
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    inv = 1 / np.sqrt(var + 0.001)
    np.testing.assert_allclose(y, (x - mean[:, None, None]) * (inv * s)[:, None, None] + b[:, None, None], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm, 0.7 * m + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv, 0.7 * v + 0.3 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-12)
    np.testing.assert_allclose(sm, mean, rtol=1e-12)
    np.testing.assert_allclose(si, inv, rtol=1e-12)


@pytest.mark.parametrize("xs", [(2, 3, 4), (1, 2, 3, 3)])
def test_instance_norm(xs):
    c = xs[1]
    check_gradient(f"def @main({params(x=xs, s=(c,), b=(c,))}) {{ instance_norm(%x, %s, %b, epsilon=0.01) }}",
                   [r(*xs), r(c), r(c)], ["x", "s", "b"])


@pytest.mark.parametrize("xs,axis,ss,bs", [
    ((3, 5), -1, (5,), (5,)),
    ((2, 3, 4), 1, (3, 4), (1, 4)),
    ((2, 3, 4), -2, (4,), None),
    ((2, 2, 3), 0, (2, 1, 3), (3,)),
])
def test_layer_norm(xs, axis, ss, bs):
    shapes = dict(x=xs, s=ss) if bs is None else dict(x=xs, s=ss, b=bs)
    args = "%x, %s" if bs is None else "%x, %s, %b"
    names = list(shapes)
    # All three outputs get cotangents (the statistics too).
    check_gradient(f"def @main({params(**shapes)}) {{ %0 = layer_norm({args}, axis={axis}, epsilon=0.01, stat_dtype=\"float64\"); "
                   "(%0.0, %0.1, %0.2) }", [r(*s) for s in shapes.values()], names)


@pytest.mark.parametrize("xs,axis,bias", [((3, 5), -1, True), ((2, 3, 4), 1, False)])
def test_layer_norm_returning_y_alone(xs, axis, bias):
    """statistics=0 (what inference reads) returns no statistics: the gradient recomputes them."""
    shapes = dict(x=xs, s=xs[axis:] if axis > 0 else xs[axis:])
    if bias:
        shapes["b"] = shapes["s"]
    args = ", ".join("%" + n for n in shapes)
    check_gradient(f"def @main({params(**shapes)}) {{ layer_norm({args}, axis={axis}, epsilon=0.01, statistics=0) }}",
                   [r(*s) for s in shapes.values()], list(shapes))


def test_layer_norm_with_float32_statistics():
    check_gradient(f"def @main({params(x=(2, 6), s=(6,))}) {{ %0 = layer_norm(%x, %s, epsilon=0.01); %0.0 }}", [r(2, 6), r(6)], ["x", "s"])


@pytest.mark.parametrize("xs,axes", [((2, 3, 4), [0, 2]), ((2, 3, 2, 2), [0, 2, 3]), ((3, 4), [-1])])
def test_mean_variance_normalization(xs, axes):
    check_gradient(f"def @main({params(x=xs)}) {{ mean_variance_normalization(%x, axes={axes}) }}", [r(*xs)], ["x"])


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("xs", [(2, 6), (1, 5, 2, 3)])
def test_lrn(size, xs):
    check_gradient(f"def @main({params(x=xs)}) {{ lrn(%x, size={size}, alpha=0.3, beta=0.7, bias=1.5) }}", [r(*xs)], ["x"])


# --- softmax and losses ---------------------------------------------------------------------

@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis,trailing", [(-1, 0), (1, 0), (0, 0), (1, 1)])
def test_softmax(op, axis, trailing):
    check_gradient(f"def @main({params(x=(2, 3, 4))}) {{ {op}(%x, axis={axis}, trailing={trailing}) }}", [r(2, 3, 4)], ["x"])


def test_hardmax_is_piecewise_constant():
    mod = tessera.relay.parse(f"def @main({params(x=(2, 3))}) {{ hardmax(%x) }}")
    out, dx = tessera.build(tessera.relay.gradient(mod, ["x"])).run([r(2, 3)])
    np.testing.assert_array_equal(dx, np.zeros((2, 3)))


NLL = [  # input shape, reduction, weighted, ignore_index
    ((4, 3), "mean", False, None),
    ((4, 3), "sum", True, None),
    ((4, 5), "none", True, 2),
    ((2, 3, 2, 3), "mean", True, 1),
    ((3, 4, 5), "mean", False, 0),
]


@pytest.mark.parametrize("xs,reduction,weighted,ignore", NLL)
@pytest.mark.parametrize("tdtype", ["int64", "int32"])
def test_nll_loss(xs, reduction, weighted, ignore, tdtype):
    ts = (xs[0],) + xs[2:]
    target = rng.integers(0, xs[1], ts).astype(tdtype)
    target.flat[0] = 0 if ignore is None else ignore  # an ignored target when there is an ignore_index
    target.flat[-1] = xs[1] - 1
    extra = attrs(reduction=reduction) + ("" if ignore is None else f", ignore_index={ignore}")
    weight = f", %w: float64[{xs[1]}]" if weighted else ""
    text = (f"def @main(%x: float64[{fmt(xs)}], %t: {tdtype}[{fmt(ts)}]{weight}) {{ "
            f"nll_loss(%x, %t{', %w' if weighted else ''}{extra}) }}")
    inputs = [r(*xs), target] + ([np.abs(r(xs[1])) + 0.5] if weighted else [])
    check_gradient(text, inputs, ["x", "w"] if weighted else ["x"])


def test_softmax_cross_entropy_loss_from_onnx(tmp_path):
    """SoftmaxCrossEntropyLoss imports as log_softmax + nll_loss; its gradient flows."""
    from onnx import TensorProto, helper
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels", "weights"], ["loss"], reduction="mean", ignore_index=1)
    graph = helper.make_graph([node], "sce", [helper.make_tensor_value_info("scores", TensorProto.DOUBLE, [3, 4, 2]),
                                              helper.make_tensor_value_info("labels", TensorProto.INT64, [3, 2]),
                                              helper.make_tensor_value_info("weights", TensorProto.DOUBLE, [4])],
                              [helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "sce.onnx"
    path.write_bytes(model.SerializeToString())
    mod = tessera.onnx.load(path)
    labels = np.array([[0, 1], [3, 2], [1, 0]])
    check_gradient(str(mod), [r(3, 4, 2), labels, np.abs(r(4)) + 0.5], ["scores", "weights"])


def test_second_order_through_softmax_and_layer_norm():
    mod = tessera.relay.parse(f"def @main({params(x=(2, 5), s=(5,))}) {{ %0 = layer_norm(%x, %s, epsilon=0.1, stat_dtype=\"float64\"); "
                              "%1 = softmax(%0.0); %2 = log_softmax(%1, axis=0); reduce_sum(mul(%2, %2), axes=[], keepdims=0) }")
    first = tessera.relay.gradient(mod, ["x"])
    check_gradient(str(first), [r(2, 5), r(5)], ["x", "s"])

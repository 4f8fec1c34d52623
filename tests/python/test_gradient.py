"""Reverse-mode autodiff: every gradient builder against central differences in float64,
accumulation, broadcasting, non-differentiable inputs, gradients of gradients, and errors."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


UNARY = {
    "neg": lambda x: x, "exp": lambda x: x, "tanh": lambda x: x, "sigmoid": lambda x: x,
    "log": lambda x: np.abs(x) + 0.5, "sqrt": lambda x: np.abs(x) + 0.5,
    "relu": lambda x: x + np.sign(x) * 0.1,  # away from the kink
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    x = UNARY[op](r(3, 5))
    check_gradient(f"def @main(%x: float64[3, 5]) {{ {op}(%x) }}", [x], ["x"])


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3))])
def test_broadcasting_binary(op, shapes):
    a, b = r(*shapes[0]), r(*shapes[1])
    if op == "div":
        b = np.abs(b) + 0.5
    fmt = lambda s: ", ".join(map(str, s))
    check_gradient(f"def @main(%a: float64[{fmt(shapes[0])}], %b: float64[{fmt(shapes[1])}]) {{ {op}(%a, %b) }}",
                   [a, b], ["a", "b"])


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul(shapes):
    fmt = lambda s: ", ".join(map(str, s))
    check_gradient(f"def @main(%a: float64[{fmt(shapes[0])}], %b: float64[{fmt(shapes[1])}]) {{ matmul(%a, %b) }}",
                   [r(*shapes[0]), r(*shapes[1])], ["a", "b"])


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean"])
@pytest.mark.parametrize("axes,keepdims", [([1], 0), ([0, 2], 1), ([], 0), ([-1], 1)])
def test_reductions(op, axes, keepdims):
    check_gradient(f"def @main(%x: float64[2, 3, 4]) {{ {op}(%x, axes={axes}, keepdims={keepdims}) }}", [r(2, 3, 4)], ["x"])


def test_shape_ops():
    check_gradient("def @main(%x: float64[2, 3, 4]) { %0 = transpose(%x, perm=[2, 0, 1]); %1 = reshape(%0, shape=[8, 3]); "
                   "%2 = expand_dims(%1, axes=[0]); %3 = squeeze(%2, axes=[0]); broadcast_to(%3, shape=[2, 8, 3]) }",
                   [r(2, 3, 4)], ["x"])


def test_values_used_twice_accumulate():
    # y = x * x + exp(x) * x: x is read four times.
    check_gradient("def @main(%x: float64[5]) { %0 = mul(%x, %x); %1 = exp(%x); %2 = mul(%1, %x); add(%0, %2) }", [r(5)], ["x"])


def test_tuples_and_several_outputs():
    check_gradient("def @main(%x: float64[3], %y: float64[3]) { %0 = (%x, %y); %1 = %0.0; %2 = mul(%1, %y); (%2, exp(%x)) }",
                   [r(3), r(3)], ["x", "y"])


def test_only_wrt_parameters_and_ones_by_default():
    mod = tessera.relay.parse("def @main(%x: float64[3], %w: float64[3]) { reduce_sum(mul(%x, %w), axes=[], keepdims=0) }")
    g = tessera.relay.gradient(mod, ["w"])
    assert g.input_names == ["x", "w"]
    x, w = r(3), r(3)
    loss, dw = tessera.build(g).run([x, w])
    np.testing.assert_allclose(loss, np.sum(x * w))
    np.testing.assert_allclose(dw, x)


def test_integer_inputs_are_not_differentiated():
    mod = tessera.relay.parse("def @main(%x: float64[4], %i: int64[4]) { mul(%x, cast(%i, dtype=\"float64\")) }")
    with pytest.raises(tessera.Error, match="parameter 'i' is int64\\[4\\], which is not differentiable"):
        tessera.relay.gradient(mod, ["i"])
    g = tessera.relay.gradient(mod, ["x"])
    x, i = r(4), np.array([1, 2, 3, 4])
    out, dx = tessera.build(g).run([x, i])
    np.testing.assert_allclose(dx, i)


def test_gradient_of_gradient():
    # f = sum(tanh(x) * w); df/dx = (1 - tanh^2) w; d/dw of sum(df/dx) = 1 - tanh(x)^2.
    mod = tessera.relay.parse("def @main(%x: float64[4], %w: float64[4]) { %0 = tanh(%x); reduce_sum(mul(%0, %w), axes=[], keepdims=0) }")
    g1 = tessera.relay.gradient(mod, ["x"])                        # (f, df/dx)
    g2 = tessera.relay.gradient(g1, ["w"], cotangents=True)        # cotangents: 0 for f, ones for df/dx
    x, w = r(4), r(4)
    f, dfdx, ddw = tessera.build(g2).run([x, w, np.array(0.0), np.ones(4)])[:3]
    np.testing.assert_allclose(dfdx, (1 - np.tanh(x) ** 2) * w)
    np.testing.assert_allclose(ddw, 1 - np.tanh(x) ** 2)


def test_missing_gradient_is_named():
    mod = tessera.relay.parse("def @main(%q: int8[4], %s: float64[], %z: int8[]) { dequantize_linear(%q, %s, %z) }")
    with pytest.raises(tessera.Error, match="operator dequantize_linear has no gradient, and it is on a differentiated path"):
        tessera.relay.gradient(mod, ["s"])
    # Off the differentiated path it does not matter.
    mod = tessera.relay.parse("def @main(%x: float64[4], %y: float64[4]) { add(%x, floor(%y)) }")
    tessera.relay.gradient(mod, ["x"])
    with pytest.raises(tessera.Error, match="no parameter 'z'"):
        tessera.relay.gradient(mod, ["z"])

"""Gradients of gradients: every math gradient is built from differentiable graph ops, so the
gradient function differentiates again. Checked against central differences of the first
gradient (itself checked by test_gradient_math*.py) for elementwise ops and reductions."""
import numpy as np
import pytest

import tessera
from gradcheck import numeric_gradient

rng = np.random.default_rng(3)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


def fmt(shape):
    return ", ".join(map(str, shape))


def check_module_gradient(mod, inputs, wrt, rtol=1e-5, atol=1e-7):
    """gradcheck.check_gradient for a module rather than text."""
    lib = tessera.build(mod)
    outs = lib.run(inputs)
    seeds = [rng.standard_normal(o.shape) for o in outs]
    grads = tessera.build(tessera.relay.gradient(mod, wrt, cotangents=True)).run(list(inputs) + seeds)[len(outs):]
    for name, analytic in zip(wrt, grads):
        numeric = numeric_gradient(lib, list(inputs), mod.input_names.index(name), seeds)
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol, err_msg=f"d/d{name}")


def check_second_order(text, inputs, wrt, **tolerances):
    """Differentiates `text` w.r.t. `wrt` (cotangents as inputs), then checks the gradient of
    that gradient function w.r.t. the same parameters."""
    first = tessera.relay.gradient(tessera.relay.parse(text), wrt, cotangents=True)
    outs = tessera.build(tessera.relay.parse(text)).run(inputs)
    cotangents = [r(*o.shape) for o in outs]
    check_module_gradient(first, list(inputs) + cotangents, wrt, **tolerances)


def unit(x):
    return (np.tanh(x) + 1) / 2


UNARY = {
    "neg": r, "exp": r, "log": lambda x: np.abs(x) + 0.5, "sqrt": lambda x: np.abs(x) + 0.5, "tanh": r, "sigmoid": r,
    "relu": lambda x: x + 0.1 * np.sign(x), "abs": lambda x: x + 0.1 * np.sign(x), "reciprocal": lambda x: x + 0.5 * np.sign(x),
    "sin": r, "cos": r, "tan": lambda x: unit(x) - 0.5, "asin": lambda x: unit(x) * 1.6 - 0.8, "acos": lambda x: unit(x) * 1.6 - 0.8,
    "atan": r, "sinh": r, "cosh": r, "asinh": r, "acosh": lambda x: np.abs(x) + 1.2, "atanh": lambda x: unit(x) * 1.6 - 0.8,
    "erf": r, "softplus": r, "softsign": lambda x: x + 0.1 * np.sign(x), "mish": r, "selu": lambda x: x + 0.1 * np.sign(x),
    "elu": lambda x: x + 0.1 * np.sign(x), "celu": lambda x: x + 0.1 * np.sign(x), "hard_swish": lambda x: 2 * x,
    "leaky_relu": lambda x: x + 0.1 * np.sign(x), "clip": r, "floor": lambda x: x,
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    make = UNARY[op]
    x = make(r(2, 3)) if make is not r else r(2, 3)
    if op == "hard_swish":
        x = np.where(np.abs(np.abs(x) - 3) < 0.1, 1.0, x)
    check_second_order(f"def @main(%x: float64[2, 3]) {{ {op}(%x) }}", [x], ["x"])


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod"])
def test_binary(op):
    a, b = r(2, 3), r(3)
    if op in ("div", "pow", "mod"):
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    if op == "mod":
        a = b * (np.floor(a / b) + 0.2 + 0.6 * unit(a))  # a / b clear of integers
    check_second_order(f"def @main(%a: float64[2, 3], %b: float64[3]) {{ {op}(%a, %b) }}", [a, b], ["a", "b"])


def test_where_and_prelu():
    check_second_order("def @main(%c: bool[2, 3], %x: float64[2, 3], %y: float64[3]) { where(%c, mul(%x, %x), exp(%y)) }",
                       [r(2, 3) > 0, r(2, 3), r(3)], ["x", "y"])
    x = r(2, 4, 3)
    check_second_order("def @main(%x: float64[2, 4, 3], %s: float64[4]) { prelu(mul(%x, %x), %s, channel_axis=1) }",
                       [x + 0.1 * np.sign(x), r(4)], ["x", "s"])
    check_second_order("def @main(%x: float64[2, 4, 3], %s: float64[4, 1]) { %0 = prelu(%x, %s); mul(%0, %0) }",
                       [x + 0.1 * np.sign(x), r(4, 1)], ["x", "s"])


REDUCTIONS = {
    "reduce_sum": r, "reduce_mean": r, "reduce_max": r, "reduce_min": r, "reduce_prod": r,
    "reduce_l1": lambda x: x + 0.1 * np.sign(x), "reduce_l2": r, "reduce_sum_square": r,
    "reduce_log_sum": lambda x: np.abs(x) + 0.2, "reduce_log_sum_exp": r,
}


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes,keepdims", [([1], 0), ([], 1)])
def test_reductions(op, axes, keepdims):
    make = REDUCTIONS[op]
    x = make(r(2, 3, 2)) if make is not r else r(2, 3, 2)
    # The square makes the first gradient depend on x even where the reduction's is constant.
    check_second_order(f"def @main(%x: float64[2, 3, 2]) {{ %0 = {op}(%x, axes={axes}, keepdims={keepdims}); mul(%0, %0) }}", [x], ["x"])


def test_cumsum_and_prod_with_zero():
    check_second_order("def @main(%x: float64[3, 4]) { %0 = cumsum(%x, axis=1, exclusive=1); mul(%0, %x) }", [r(3, 4)], ["x"])
    x = r(2, 3)
    x[0, 1] = 0  # a single zero: the second derivative still comes out right where no other zero is
    check_second_order("def @main(%x: float64[2, 3]) { reduce_prod(%x, axes=[0], keepdims=0) }", [x], ["x"])

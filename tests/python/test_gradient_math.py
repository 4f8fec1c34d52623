"""Gradients of the math family's elementwise ops against central differences in float64:
unary functions and activations (inputs kept away from kinks), broadcasting binary ops,
where, cast, prelu, and the tie and zero conventions (PyTorch's)."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient

rng = np.random.default_rng(1)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


def fmt(shape):
    return ", ".join(map(str, shape))


def away(x, *points, gap=0.05):
    """x moved at least `gap` away from each kink."""
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.where(x >= p, gap, -gap), x)
    return x


def uniform(lo, hi):
    return lambda x: lo + (hi - lo) * (np.tanh(x) + 1) / 2


# op -> (attributes, input from standard normals)
UNARY = {
    "abs": ("", lambda x: away(x, 0)),
    "reciprocal": ("", lambda x: away(x, 0, gap=0.3)),
    "sin": ("", lambda x: 2 * x), "cos": ("", lambda x: 2 * x),
    "tan": ("", uniform(-1.2, 1.2)),
    "asin": ("", uniform(-0.9, 0.9)), "acos": ("", uniform(-0.9, 0.9)), "atan": ("", lambda x: 2 * x),
    "sinh": ("", lambda x: x), "cosh": ("", lambda x: x), "asinh": ("", lambda x: 2 * x),
    "acosh": ("", lambda x: 1.1 + np.abs(x)), "atanh": ("", uniform(-0.9, 0.9)),
    "erf": ("", lambda x: x),
    "softplus": ("", lambda x: 3 * x), "softsign": ("", lambda x: away(2 * x, 0)), "mish": ("", lambda x: 3 * x),
    "leaky_relu": ("alpha=0.2", lambda x: away(x, 0)),
    "elu": ("alpha=0.7", lambda x: away(x, 0)),
    "selu": ("", lambda x: away(x, 0)),
    "celu": ("alpha=1.5", lambda x: away(x, 0)),
    "hard_sigmoid": ("alpha=0.3, beta=0.4", lambda x: away(3 * x, -4 / 3, 2)),
    "hard_swish": ("", lambda x: away(4 * x, -3, 3)),
    "thresholded_relu": ("alpha=0.5", lambda x: away(x, 0.5)),
    "shrink": ("bias=0.2, lambd=0.4", lambda x: away(x, -0.4, 0.4)),
    "clip": ("a_min=-0.5, a_max=0.7", lambda x: away(x, -0.5, 0.7)),
    "floor": ("", lambda x: away(3 * x, *range(-12, 13))),
    "ceil": ("", lambda x: away(3 * x, *range(-12, 13))),
    "round": ("", lambda x: away(3 * x, *np.arange(-12.5, 13))),
    "sign": ("", lambda x: away(x, 0)),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    attrs, make = UNARY[op]
    x = make(r(3, 7))
    call = f"{op}(%x, {attrs})" if attrs else f"{op}(%x)"
    check_gradient(f"def @main(%x: float64[3, 7]) {{ {call} }}", [x], ["x"])


def test_unary_float32():
    # float32 values: the derivatives' constants take the dtype; compared with float64's.
    x = uniform(-0.9, 0.9)(r(4, 5))
    for op in ["asin", "erf", "mish", "softsign"]:
        mod = lambda dt: tessera.relay.parse(f"def @main(%x: {dt}[4, 5]) {{ {op}(%x) }}")
        seed = r(4, 5)
        g64 = tessera.build(tessera.relay.gradient(mod("float64"), ["x"], cotangents=True)).run([x, seed])[1]
        g32 = tessera.build(tessera.relay.gradient(mod("float32"), ["x"], cotangents=True)).run(
            [x.astype("float32"), seed.astype("float32")])[1]
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5, err_msg=op)


def gradients(text, inputs, wrt, seed):
    """The gradients of `text` w.r.t. `wrt` for output cotangent `seed` (one output)."""
    mod = tessera.relay.parse(text)
    return tessera.build(tessera.relay.gradient(mod, wrt, cotangents=True)).run(list(inputs) + [seed])[1:]


SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((), (2, 3))]


def clear_of(shapes, kink, tries=100):
    """Operands of the shapes such that kink(a, b) (broadcast) stays away from 0."""
    for _ in range(tries):
        a, b = r(*shapes[0]), r(*shapes[1])
        if np.all(np.abs(kink(a, b)) > 0.05):
            return a, b
    raise AssertionError("no operands clear of the kink")


def fractional(q):
    return q - np.round(q)


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("op", ["pow", "maximum", "minimum", "mod", "fmod"])
def test_binary(op, shapes):
    call = f"{op}(%a, %b)"
    if op == "pow":
        a, b = r(*shapes[0]), r(*shapes[1])
        a = np.abs(a) + 0.3
    elif op in ("mod", "fmod"):
        # a mod b jumps where a / b is an integer.
        a, b = clear_of(shapes, lambda a, b: fractional(a / b))
        call = f"mod(%a, %b, fmod={int(op == 'fmod')})"
    else:
        a, b = clear_of(shapes, lambda a, b: a - b)
    check_gradient(f"def @main(%a: float64[{fmt(shapes[0])}], %b: float64[{fmt(shapes[1])}]) {{ {call} }}",
                   [np.asarray(a), np.asarray(b)], ["a", "b"])


def test_maximum_minimum_split_ties():
    # Equal operands share the cotangent in halves (PyTorch); elsewhere it goes to the winner.
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 5.0, 0.0, -1.0])
    seed = np.array([1.0, 2.0, 4.0, 8.0])
    for op, to_a in [("maximum", [0.5, 0, 4, 4]), ("minimum", [0.5, 2, 0, 4])]:
        ga, gb = gradients(f"def @main(%a: float64[4], %b: float64[4]) {{ {op}(%a, %b) }}", [a, b], ["a", "b"], seed)
        np.testing.assert_allclose(ga, to_a)
        np.testing.assert_allclose(gb, seed - np.array(to_a))
    # max(x, x) = x: both halves reach x.
    (gx,) = gradients("def @main(%x: float64[4]) { maximum(%x, %x) }", [a], ["x"], seed)
    np.testing.assert_allclose(gx, seed)


def test_pow_conventions():
    # d/db of 0^b is 0 for b >= 0, and d/da is 0 where b == 0 (PyTorch's choices).
    a = np.array([0.0, 0.0, 2.0, 3.0])
    b = np.array([2.0, 0.0, 0.0, 1.5])
    ga, gb = gradients("def @main(%a: float64[4], %b: float64[4]) { pow(%a, %b) }", [a, b], ["a", "b"], np.ones(4))
    np.testing.assert_allclose(ga, [0, 0, 0, 1.5 * 3 ** 0.5])
    np.testing.assert_allclose(gb, [0, 0, np.log(2), 3 ** 1.5 * np.log(3)])


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((2, 1, 4), (1,), (3, 4))])
def test_where(shapes):
    cs, xs, ys = shapes
    cond = rng.standard_normal(cs) > 0
    check_gradient(f"def @main(%c: bool[{fmt(cs)}], %x: float64[{fmt(xs)}], %y: float64[{fmt(ys)}]) {{ where(%c, %x, %y) }}",
                   [cond, r(*xs), r(*ys)], ["x", "y"])


def test_cast():
    # Between floats the cotangent is cast back; through an integer nothing flows.
    x, seed = r(5), r(5).astype("float32")
    (gx,) = gradients('def @main(%x: float64[5]) { cast(%x, dtype="float32") }', [x], ["x"], seed)
    assert gx.dtype == np.float64
    np.testing.assert_allclose(gx, seed)
    (gx,) = gradients('def @main(%x: float64[5]) { %0 = cast(%x, dtype="int32"); mul(%x, cast(%0, dtype="float64")) }',
                      [3 * x], ["x"], np.ones(5))
    np.testing.assert_allclose(gx, np.trunc(3 * x))
    x32 = r(2, 3).astype("float32")
    (gx,) = gradients('def @main(%x: float32[2, 3]) { %0 = cast(%x, dtype="float64"); mul(%0, %0) }', [x32], ["x"], np.ones((2, 3)))
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx, 2 * x32)


@pytest.mark.parametrize("xs,ss,attrs", [
    ((3, 4, 5), (4, 1), ""), ((3, 4, 5), (5,), ""), ((3, 4, 5), (3, 4, 5), ""),
    ((3, 4, 5), (4,), ", channel_axis=1"), ((2, 3), (3,), ", channel_axis=1"), ((6,), (6,), ", channel_axis=0"),
])
def test_prelu(xs, ss, attrs):
    check_gradient(f"def @main(%x: float64[{fmt(xs)}], %s: float64[{fmt(ss)}]) {{ prelu(%x, %s{attrs}) }}",
                   [away(r(*xs), 0), r(*ss)], ["x", "s"])


def test_zero_gradient_ops_still_train():
    # floor and sign on the path: the loss still has a gradient through the other term.
    check_gradient("def @main(%x: float64[6]) { %0 = floor(%x); %1 = sign(%x); add(mul(%x, %x), add(%0, %1)) }",
                   [away(3 * r(6), *range(-12, 13))], ["x"])

"""Gradients of the reductions and cumsum against central differences in float64, and the
conventions where the derivative is not unique (ties of max/min, zeros of prod, a zero norm)."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient

rng = np.random.default_rng(2)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


INPUTS = {
    "reduce_max": lambda x: x, "reduce_min": lambda x: x, "reduce_prod": lambda x: x,
    "reduce_l1": lambda x: np.where(np.abs(x) < 0.05, 0.1, x), "reduce_l2": lambda x: x,
    "reduce_sum_square": lambda x: x, "reduce_log_sum": lambda x: np.abs(x) + 0.2,
    "reduce_log_sum_exp": lambda x: 3 * x, "reduce_sum": lambda x: x, "reduce_mean": lambda x: x,
}
AXES = [([1], 0), ([0, 2], 1), ([], 0), ([], 1), ([-1], 1), ([-3, -2], 0)]


@pytest.mark.parametrize("op", sorted(INPUTS))
@pytest.mark.parametrize("axes,keepdims", AXES)
def test_reductions(op, axes, keepdims):
    x = INPUTS[op](r(2, 3, 4))
    check_gradient(f"def @main(%x: float64[2, 3, 4]) {{ {op}(%x, axes={axes}, keepdims={keepdims}) }}", [x], ["x"])


@pytest.mark.parametrize("op", ["reduce_max", "reduce_prod", "reduce_l2", "reduce_log_sum_exp"])
def test_size_one_and_scalar_inputs(op):
    check_gradient(f"def @main(%x: float64[1, 5, 1]) {{ {op}(%x, axes=[0, 2], keepdims=0) }}", [r(1, 5, 1)], ["x"])
    check_gradient(f"def @main(%x: float64[]) {{ {op}(%x, axes=[], keepdims=1) }}", [r()], ["x"])


def gradient(text, x, seed):
    mod = tessera.relay.parse(text)
    return tessera.build(tessera.relay.gradient(mod, ["x"], cotangents=True)).run([x, seed])[1]


def test_max_min_ties_share_evenly():
    # As PyTorch's amax / amin: the cotangent is split evenly between equal extrema.
    x = np.array([[3.0, 1.0, 3.0, 3.0], [0.0, 2.0, -1.0, -1.0]])
    g = gradient("def @main(%x: float64[2, 4]) { reduce_max(%x, axes=[1], keepdims=0) }", x, np.array([6.0, 2.0]))
    np.testing.assert_allclose(g, [[2, 0, 2, 2], [0, 2, 0, 0]])
    g = gradient("def @main(%x: float64[2, 4]) { reduce_min(%x, axes=[1], keepdims=0) }", x, np.array([6.0, 2.0]))
    np.testing.assert_allclose(g, [[0, 6, 0, 0], [0, 0, 1, 1]])


def test_prod_with_zeros():
    # One zero: only it gets the product of the others; two zeros: nothing gets anything.
    x = np.array([[2.0, 0.0, 3.0], [0.0, 5.0, 0.0], [1.0, 2.0, 4.0]])
    g = gradient("def @main(%x: float64[3, 3]) { reduce_prod(%x, axes=[1], keepdims=1) }", x, np.ones((3, 1)))
    np.testing.assert_allclose(g, [[0, 6, 0], [0, 0, 0], [8, 4, 2]])
    check_gradient("def @main(%x: float64[3, 3]) { reduce_prod(%x, axes=[0], keepdims=0) }", [x], ["x"])


def test_l2_of_zeros():
    g = gradient("def @main(%x: float64[2, 3]) { reduce_l2(%x, axes=[1], keepdims=0) }", np.array([[0.0] * 3, [3.0, 0, 4]]), np.ones(2))
    np.testing.assert_allclose(g, [[0, 0, 0], [0.6, 0, 0.8]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(axis, exclusive, reverse):
    check_gradient(f"def @main(%x: float64[3, 5]) {{ cumsum(%x, axis={axis}, exclusive={exclusive}, reverse={reverse}) }}",
                   [r(3, 5)], ["x"])

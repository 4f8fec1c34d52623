"""Gradients of the index-driven ops against central differences in float64: take (repeated,
negative and multi-dimensional indices), gather_elements, gather_nd (with batch dims),
scatter_elements and scatter_nd (replace, add, multiply; duplicate indices), topk, one_hot,
and the op take_grad that take's gradient uses. Indices never get a gradient."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient
from test_gradient_math_second_order import check_second_order

rng = np.random.default_rng(5)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


def fmt(shape):
    return ", ".join(map(str, shape))


def ints(values, dtype="int64"):
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("axis,indices", [(0, ints([1, -1, 1, 0])), (1, ints([[2, 0], [2, 2]])), (-1, ints(3)),
                                          (0, ints([7, -9], "int32"))])  # out of range: clamped like the forward op
def test_take(axis, indices):
    itype = "int32" if indices.dtype == np.int32 else "int64"
    check_gradient(f"def @main(%x: float64[4, 4, 2], %i: {itype}[{fmt(indices.shape)}]) {{ take(%x, %i, axis={axis}) }}",
                   [r(4, 4, 2), indices], ["x"])


def test_take_grad_and_its_gradient():
    check_gradient("def @main(%g: float64[3, 4], %i: int64[4]) { take_grad(%g, %i, axis=1, size=5) }", [r(3, 4), ints([4, 0, 4, -2])],
                   ["g"])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    indices = rng.integers(-3, 3, size=(2, 3, 2))
    check_gradient(f"def @main(%x: float64[3, 3, 2], %i: int64[2, 3, 2]) {{ gather_elements(%x, %i, axis={axis}) }}",
                   [r(3, 3, 2), indices], ["x"])


@pytest.mark.parametrize("data,indices,batch_dims", [
    ((4, 3), [[1, 2], [1, 2], [-1, 0]], 0),        # whole elements, one repeated
    ((4, 3, 2), [[3], [0], [3]], 0),               # slices
    ((2, 4, 3), [[[1], [3]], [[0], [0]]], 1),      # batch dims
    ((2, 3, 4, 2), [[[2, 1]], [[0, 3]]], 1),
])
def test_gather_nd(data, indices, batch_dims):
    indices = ints(indices)
    check_gradient(f"def @main(%x: float64[{fmt(data)}], %i: int64[{fmt(indices.shape)}]) {{ gather_nd(%x, %i, batch_dims={batch_dims}) }}",
                   [r(*data), indices], ["x"])


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements(reduction, axis):
    # Duplicates along the axis: the last one wins (none), all count (add, mul).
    indices = ints([[1, 0, 2], [1, 3, 2]]) if axis == 0 else ints([[3, 3, 0], [1, -1, 1]])
    updates = r(2, 3)
    if reduction == "mul":
        updates[0, 1] = 0.0  # a zero update: its gradient still flows, the others' at its target do not
    check_gradient(f'def @main(%d: float64[4, 4], %i: int64[2, 3], %u: float64[2, 3]) '
                   f'{{ scatter_elements(%d, %i, %u, axis={axis}, reduction="{reduction}") }}',
                   [r(4, 4), indices, updates], ["d", "u"])


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_nd(reduction):
    indices = ints([[[1, 2], [0, 0]], [[1, 2], [-1, 1]]])  # rows (2, 2), duplicate (1, 2)
    check_gradient(f'def @main(%d: float64[3, 4, 2], %i: int64[2, 2, 2], %u: float64[2, 2, 2]) '
                   f'{{ scatter_nd(%d, %i, %u, reduction="{reduction}") }}',
                   [r(3, 4, 2), indices, r(2, 2, 2)], ["d", "u"])
    check_gradient(f'def @main(%d: float64[5, 2], %i: int64[3, 1], %u: float64[3, 2]) {{ scatter_nd(%d, %i, %u, reduction="{reduction}") }}',
                   [r(5, 2), ints([[4], [0], [4]]), r(3, 2)], ["d", "u"])


def test_scatter_mul_with_zeros():
    # Two zeros at one target: no update there gets anything; one zero: only it does.
    d, u = np.array([2.0, 3.0, 5.0]), np.array([0.0, 4.0, 0.0, 0.0, 6.0])
    i = ints([0, 0, 1, 1, 1])
    mod = tessera.relay.parse('def @main(%d: float64[3], %i: int64[5], %u: float64[5]) { scatter_elements(%d, %i, %u, reduction="mul") }')
    out, dd, du = tessera.build(tessera.relay.gradient(mod, ["d", "u"])).run([d, i, u])
    np.testing.assert_allclose(out, [0, 0, 5])
    np.testing.assert_allclose(dd, [0, 0, 1])
    np.testing.assert_allclose(du, [8, 0, 0, 0, 0])


@pytest.mark.parametrize("k,axis,largest", [(2, -1, 1), (3, 0, 0), (1, 1, 1)])
def test_topk(k, axis, largest):
    check_gradient(f"def @main(%x: float64[4, 5]) {{ %0 = topk(%x, k={k}, axis={axis}, largest={largest}); %0.0 }}", [r(4, 5)], ["x"])


def test_one_hot_values():
    indices = ints([[0, 3], [-1, 5]])  # 5 is out of range: no hot position
    check_gradient("def @main(%i: int64[2, 2], %v: float64[2]) { one_hot(%i, %v, depth=4, axis=1) }", [indices, r(2)], ["v"])


def test_second_order_through_gathers_and_scatters():
    i = ints([2, 0, 2])
    check_second_order("def @main(%x: float64[3, 2], %i: int64[3]) { %0 = take(%x, %i, axis=0); mul(%0, %0) }", [r(3, 2), i], ["x"])
    check_second_order('def @main(%d: float64[4], %i: int64[3], %u: float64[3]) { %0 = scatter_elements(%d, %i, %u, reduction="mul"); '
                       'mul(%0, %0) }', [r(4), i, r(3)], ["d", "u"])
    check_second_order("def @main(%x: float64[3, 4]) { %0 = topk(%x, k=2, axis=1); mul(%0.0, %0.0) }", [r(3, 4)], ["x"])

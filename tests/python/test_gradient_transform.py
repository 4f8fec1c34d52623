"""Gradients of the transform family's shape and data-movement ops against central differences
in float64: concat, split, tile, slice (negative and strided steps), pad (constant, reflect,
edge, wrap, with crops), depth_to_space / space_to_depth, trilu, reverse_sequence, and the op
unslice that slice's gradient uses."""
import numpy as np
import pytest

from gradcheck import check_gradient
from test_gradient_math_second_order import check_second_order

rng = np.random.default_rng(4)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


def fmt(shape):
    return ", ".join(map(str, shape))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for s, n in zip(shapes, [1, 3, 2]):
        s[axis] = n
    params = ", ".join(f"%x{i}: float64[{fmt(s)}]" for i, s in enumerate(shapes))
    check_gradient(f"def @main({params}) {{ concat(%x0, %x1, %x2, axis={axis}) }}", [r(*s) for s in shapes], ["x0", "x1", "x2"])
    # One input read twice: the two halves accumulate.
    check_gradient(f"def @main(%x: float64[2, 3]) {{ concat(%x, %x, axis={axis % 2}) }}", [r(2, 3)], ["x"])


def test_split():
    check_gradient("def @main(%x: float64[3, 7]) { %0 = split(%x, axis=1, sizes=[2, 0, 5]); (%0.0, %0.1, %0.2) }", [r(3, 7)], ["x"])
    # Parts left unused get zeros; a part used twice accumulates.
    check_gradient("def @main(%x: float64[6, 2]) { %0 = split(%x, axis=-2, sizes=[1, 3, 2]); mul(%0.1, %0.1) }", [r(6, 2)], ["x"])


@pytest.mark.parametrize("shape,repeats", [((2, 3), [2, 3]), ((1, 3), [4, 1]), ((2, 1, 3), [1, 1, 1]), ((3,), [5])])
def test_tile(shape, repeats):
    check_gradient(f"def @main(%x: float64[{fmt(shape)}]) {{ tile(%x, repeats={repeats}) }}", [r(*shape)], ["x"])


SLICES = [
    "starts=[1], ends=[4]",
    "starts=[0, 1], ends=[5, 100], axes=[0, 1], steps=[2, 3]",
    "starts=[-1], ends=[-100], axes=[1], steps=[-1]",  # the whole axis reversed
    "starts=[4, -2], ends=[0, 0], axes=[0, -1], steps=[-2, -3]",
    "starts=[2], ends=[2], axes=[1]",  # empty
    "starts=[0, 0], ends=[5, 7], axes=[-1, 0]",  # everything
]


@pytest.mark.parametrize("attrs", SLICES)
def test_slice(attrs):
    check_gradient(f"def @main(%x: float64[5, 7]) {{ slice(%x, {attrs}) }}", [r(5, 7)], ["x"])


def test_unslice_and_its_gradient():
    # unslice is slice's transpose; its own gradient is the slice again.
    check_gradient("def @main(%x: float64[2, 3]) { unslice(%x, shape=[5, 7], starts=[4, 1], ends=[0, 7], steps=[-2, 2]) }",
                   [r(2, 3)], ["x"])


PADS = [
    ("constant", [1, 0, 2, 3]), ("constant", [-1, 2, 1, -3]),
    ("reflect", [1, 2, 3, 1]), ("reflect", [4, 0, 0, 7]),  # wider than the axis: reflected again
    ("reflect", [-1, 1, 0, -2]),
    ("edge", [2, 0, 1, 3]), ("edge", [0, 5, 3, 0]), ("edge", [-2, 1, 1, -1]),
    ("wrap", [1, 2, 3, 1]), ("wrap", [5, 0, 0, 7]), ("wrap", [-1, 1, 0, -2]),  # wider than the axis: wrapped again
]


@pytest.mark.parametrize("mode,pads", PADS)
def test_pad(mode, pads):
    check_gradient(f'def @main(%x: float64[4, 3]) {{ pad(%x, pads={pads}, mode="{mode}", value=2.5) }}', [r(4, 3)], ["x"])


@pytest.mark.parametrize("pads", [[1, 0, 2, 2], [0, -1, 1, 0]])
def test_pad_of_a_value_given_as_a_tensor(pads):
    # The value's cotangent sums g over the padding.
    check_gradient(f'def @main(%x: float64[4, 3], %v: float64[]) {{ pad(%x, %v, pads={pads}) }}', [r(4, 3), r()],
                   ["x", "v"])


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_pad_single_element_axes(mode):
    check_gradient(f'def @main(%x: float64[1, 2, 1]) {{ pad(%x, pads=[2, 3, 1, 1, 0, 2], mode="{mode}") }}', [r(1, 2, 1)], ["x"])


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    check_gradient(f'def @main(%x: float64[2, 8, 2, 3]) {{ depth_to_space(%x, blocksize=2, mode="{mode}") }}', [r(2, 8, 2, 3)], ["x"])


def test_space_to_depth():
    check_gradient("def @main(%x: float64[1, 2, 6, 3]) { space_to_depth(%x, blocksize=3) }", [r(1, 2, 6, 3)], ["x"])


@pytest.mark.parametrize("upper,k", [(1, 0), (0, 0), (1, -1), (0, 2)])
def test_trilu(upper, k):
    check_gradient(f"def @main(%x: float64[2, 3, 4]) {{ trilu(%x, upper={upper}, k={k}) }}", [r(2, 3, 4)], ["x"])


def test_reverse_sequence():
    lengths = np.array([3, 0, 5, 1])
    check_gradient("def @main(%x: float64[5, 4, 2], %l: int64[4]) { reverse_sequence(%x, %l, batch_axis=1, time_axis=0) }",
                   [r(5, 4, 2), lengths], ["x"])
    check_gradient("def @main(%x: float64[3, 4], %l: int32[3]) { reverse_sequence(%x, %l, batch_axis=0, time_axis=1) }",
                   [r(3, 4), np.array([4, 2, 1], dtype="int32")], ["x"])


def test_second_order_through_data_movement():
    # Squares make the first gradient depend on x; its gradient then runs each op's gradient's gradient.
    check_second_order("def @main(%x: float64[4, 3]) { %0 = pad(%x, pads=[1, 2, 2, 1], mode=\"reflect\"); mul(%0, %0) }",
                       [r(4, 3)], ["x"])
    check_second_order("def @main(%x: float64[5, 4]) { %0 = slice(%x, starts=[4, 0], ends=[0, 4], steps=[-2, 3]); "
                       "%1 = tile(%0, repeats=[1, 2]); %2 = concat(%1, %x, axis=0); mul(%2, %2) }", [r(5, 4)], ["x"])

"""Gradients of resize (nearest, linear, cubic; every coordinate transformation; up and down;
antialiased downsampling; extrapolated crops) and of weighted_gather, the op its gradient is made of, against central
differences in float64."""
import numpy as np
import pytest

import tessera
from gradcheck import check_gradient
from test_gradient_math_second_order import check_second_order

rng = np.random.default_rng(6)


def r(*shape):
    return np.asarray(rng.standard_normal(shape))


COORDINATES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("sizes", [[1, 2, 7, 5], [1, 2, 2, 1]])
def test_resize(mode, coordinates, sizes):
    check_gradient(f'def @main(%x: float64[1, 2, 4, 3]) {{ resize(%x, sizes={sizes}, mode="{mode}", '
                   f'coordinate_transformation_mode="{coordinates}") }}', [r(1, 2, 4, 3)], ["x"])


@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_modes(nearest):
    # asymmetric x2: coordinates land exactly on halves, where the rounding modes differ.
    check_gradient(f'def @main(%x: float64[3, 5]) {{ resize(%x, sizes=[6, 10], mode="nearest", '
                   f'coordinate_transformation_mode="asymmetric", nearest_mode="{nearest}") }}', [r(3, 5)], ["x"])


def test_resize_cubic_exclude_outside_and_scales():
    check_gradient('def @main(%x: float64[5, 4]) { resize(%x, sizes=[8, 9], scales=[1.6, 2.25], mode="cubic", '
                   'cubic_coeff_a=-0.5, exclude_outside=1) }', [r(5, 4)], ["x"])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("exclude", [0, 1])
def test_resize_antialias_downsampling(mode, exclude):
    # 11 -> 4 (the kernel stretched to 2.75 and 5.5 input elements), 9 -> 9 (unchanged).
    check_gradient(f'def @main(%x: float64[11, 9]) {{ resize(%x, sizes=[4, 9], mode="{mode}", antialias=1, '
                   f'exclude_outside={exclude}) }}', [r(11, 9)], ["x"])


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_crop_with_extrapolation(mode):
    check_gradient(f'def @main(%x: float64[4, 5]) {{ resize(%x, sizes=[6, 7], roi=[-0.2, 0.1, 0.9, 1.3], mode="{mode}", '
                   f'coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.0) }}', [r(4, 5)], ["x"])


def test_resize_one_axis_only():
    check_gradient('def @main(%x: float64[2, 3, 4]) { resize(%x, sizes=[2, 3, 9], mode="linear") }', [r(2, 3, 4)], ["x"])


def test_resize_float32():
    x = r(1, 1, 3, 4)
    text = 'def @main(%x: {}[1, 1, 3, 4]) {{ resize(%x, sizes=[1, 1, 5, 7], mode="linear") }}'
    seed = r(1, 1, 5, 7)
    grads = [tessera.build(tessera.relay.gradient(tessera.relay.parse(text.format(dt)), ["x"], cotangents=True))
             .run([x.astype(dt), seed.astype(dt)])[1] for dt in ("float32", "float64")]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_weighted_gather():
    index = np.array([[0, 2, -1], [3, 3, 1]])
    weight = r(2, 3)
    for axis in (1, -2):
        # Tables given as inputs: the input's gradient scatters every (row, tap).
        check_gradient(f"def @main(%x: float64[3, 4, 2], %i: int64[2, 3], %w: float64[2, 3]) {{ weighted_gather(%x, %i, %w, axis={axis}) }}",
                       [r(3, 4, 2), index, weight], ["x", "w"])


def test_second_order_resize():
    check_second_order('def @main(%x: float64[3, 4]) { %0 = resize(%x, sizes=[5, 7], mode="cubic"); mul(%0, %0) }', [r(3, 4)], ["x"])

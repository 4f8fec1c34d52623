"""Det against numpy.linalg.det: batches, sizes 1 to 20, singular and permuted matrices, NaN."""
import numpy as np
import pytest

import tessera
from extra_testing import assert_close, run


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 5), (4, 7, 7), (2, 3, 4, 4), (17, 17), (0, 3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_det(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    (y,) = run("Det", [x], opset=11)
    want = np.linalg.det(x.astype(np.float64))
    assert y.dtype == dtype and y.shape == shape[:-2]
    # Relative to the determinant, or absolute where it is below 1.
    scale = np.maximum(np.abs(want), 1)
    np.testing.assert_allclose(y / scale, want / scale, rtol=0, atol=1e-5 if dtype == "float32" else 1e-11)


def test_det_needs_pivoting_and_handles_singular_matrices():
    x = np.array([
        [[0, 1, 2], [3, 4, 5], [6, 7, 9]],          # zero leading entry: a swap
        [[1, 2, 3], [2, 4, 6], [1, 0, 1]],          # rank 2
        [[0, 0, 0], [1, 2, 3], [4, 5, 6]],          # zero row
        [[0, 0, 1], [0, 1, 0], [1, 0, 0]],          # a permutation (odd)
        [[0, 1, 0], [0, 0, 1], [1, 0, 0]],          # a permutation (even)
        [[1e-30, 1, 0], [1, 1e-30, 0], [0, 0, 2]],  # tiny pivots
    ], np.float64)
    (y,) = run("Det", [x], opset=11)
    np.testing.assert_allclose(y, np.linalg.det(x), rtol=1e-12, atol=1e-12)


def test_det_nan_and_float16(rng):
    x = rng.standard_normal((3, 4, 4)).astype("float32")
    x[1, 2, 0] = np.nan
    x[2, 0, 3] = np.nan
    (y,) = run("Det", [x], opset=11)
    assert np.isnan(y[1]) and np.isnan(y[2]) and np.isclose(y[0], np.linalg.det(x[0]), rtol=1e-5)
    h = rng.standard_normal((2, 3, 3)).astype("float16")
    (y,) = run("Det", [h], opset=11)
    assert_close(y, np.linalg.det(h.astype(np.float64)), "float16", 1e-2)


def test_det_rejects_non_square_and_huge_matrices(rng):
    with pytest.raises(tessera.Error, match="square"):
        run("Det", [np.zeros((3, 4), np.float32)], opset=11)
    with pytest.raises(tessera.Error, match="largest supported size"):
        run("Det", [np.zeros((65, 65), np.float32)], opset=11)
    with pytest.raises(tessera.Error, match="float"):
        run("Det", [np.zeros((2, 2), np.int32)], opset=11)

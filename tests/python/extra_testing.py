"""Helpers of the extra family's operator tests (test_ops_extra_*.py): the one-node ONNX models
of nn_testing, with this family's tolerances."""
import numpy as np

from nn_testing import run  # noqa: F401  (the tests import it from here)


def assert_close(got, want, dtype, tol=None):
    dtype = np.dtype(dtype)
    assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)}"
    tight = tol or {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-4, np.dtype("float64"): 1e-9}[dtype]
    np.testing.assert_allclose(got.astype("float64"), np.asarray(want, "float64"), rtol=tight, atol=tight)

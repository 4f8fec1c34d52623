"""Tessera's arrays, in TVM's manner (tvm.nd): dense, row-major, in 64-byte aligned memory that
kernels take as it is, and shared with other frameworks without copying through DLPack.

    a = tessera.nd.array(np.ones((2, 3), "float32"))   # a copy, aligned
    t = torch.utils.dlpack.from_dlpack(a)              # a PyTorch view of the same memory
    b = tessera.nd.from_dlpack(t)                      # and back, still the same memory
    lib.run([b]); f(a, b)                              # graphs and kernels take them (and tensors)
    a.numpy()                                          # a numpy copy; np.asarray(a) views

Only CPU memory for now: arrays of other devices are refused with the device's name."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _tessera as _t
from ._tessera import NDArray

__all__ = ["NDArray", "array", "from_dlpack", "empty"]


def _check_device(device: str | None) -> None:
    if device not in (None, "cpu"):
        raise ValueError(f"tessera.nd arrays live in CPU memory only for now (device='cpu'), got device={device!r}")


def array(x: Any, device: str | None = None) -> NDArray:
    """A new array holding a copy of `x`: a numpy array, a tessera.nd array, any array with
    __dlpack__ (a PyTorch tensor, ...), or what np.asarray takes (lists, numbers). Like np.array,
    it always copies; from_dlpack shares."""
    _check_device(device)
    return _t.nd_array(x)


def from_dlpack(x: Any) -> NDArray:
    """The array `x` (anything with __dlpack__, or a DLPack capsule) as a tessera.nd array
    sharing its memory, so writes through either are seen by the other. A strided `x`
    (transposed, sliced with a step, broadcast) or a read-only one is copied into a compact
    array instead, since tessera.nd arrays are row-major and writable. Raises tessera.Error for
    arrays outside CPU memory and element types Tessera lacks (bfloat16, complex, ...)."""
    return _t.nd_from_dlpack(x)


def empty(shape: Sequence[int], dtype: str = "float32", device: str | None = None) -> NDArray:
    """A new zero-filled array of `shape` and `dtype` ("float32", "int64", "bool", ...)."""
    _check_device(device)
    return _t.nd_empty([int(d) for d in shape], dtype)

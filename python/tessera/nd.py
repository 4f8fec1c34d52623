"""Tessera's arrays, in TVM's manner (tvm.nd): dense, row-major, on a device (the CPU, an OpenCL or
a CUDA device); in CPU memory 64-byte aligned, so kernels take them as they are, and shared with
other frameworks without copying through DLPack.

    a = tessera.nd.array(np.ones((2, 3), "float32"))   # a copy, aligned
    t = torch.utils.dlpack.from_dlpack(a)              # a PyTorch view of the same memory
    b = tessera.nd.from_dlpack(t)                      # and back, still the same memory
    lib.run([b]); f(a, b)                              # graphs and kernels take them (and tensors)
    a.numpy()                                          # a numpy copy; np.asarray(a) views
    g = tessera.nd.array(x, device=tessera.device("opencl"))   # a copy in the device's memory
    g.numpy()                                          # copied back

DLPack shares CPU and CUDA arrays; OpenCL buffers are refused with the device's name."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from . import _tessera as _t
from ._tessera import Device, NDArray

__all__ = ["NDArray", "array", "from_dlpack", "empty"]


DeviceLike = Union[Device, str, None]


def array(x: Any, device: DeviceLike = None) -> NDArray:
    """A new array holding a copy of `x`: a numpy array, a tessera.nd array, any array with
    __dlpack__ (a PyTorch tensor, ...), or what np.asarray takes (lists, numbers). Like np.array,
    it always copies; from_dlpack shares. `device` is a tessera.device, a kind's name ("opencl":
    its device 0) or None (the CPU); tessera.Error names a device that is missing."""
    return _t.nd_array(x, device)


def from_dlpack(x: Any) -> NDArray:
    """The array `x` (anything with __dlpack__, or a DLPack capsule) as a tessera.nd array
    sharing its memory, so writes through either are seen by the other. A strided `x`
    (transposed, sliced with a step, broadcast) or a read-only one is copied into a compact
    array instead, since tessera.nd arrays are row-major and writable (a CUDA one must be compact).
    Raises tessera.Error for arrays outside CPU and CUDA memory, a CUDA device that is missing and
    element types Tessera lacks (complex, float8 (DLPack 1.0 has no code for it), ...)."""
    return _t.nd_from_dlpack(x)


def empty(shape: Sequence[int], dtype: str = "float32", device: DeviceLike = None) -> NDArray:
    """A new zero-filled array of `shape` and `dtype` ("float32", "int64", "bool", ...) on `device`
    (as for array)."""
    return _t.nd_empty([int(d) for d in shape], dtype, device)

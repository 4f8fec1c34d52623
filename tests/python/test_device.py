"""Devices from Python: tessera.device (kinds, ids, .exists, attributes, errors) and tessera.nd
arrays on PoCL's OpenCL device (scripts/setup.sh installs it), copied there and back for every
element type and layout; CUDA where a driver is found, its clear error where none is."""
import ctypes

import numpy as np
import pytest

import tessera
from tessera import nd


@pytest.fixture
def opencl():
    d = tessera.device("opencl", 0)
    assert d.exists, "no OpenCL device: scripts/setup.sh installs pocl-opencl-icd"
    return d


def cuda_driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_devices_by_kind_and_id(opencl):
    cpu = tessera.device("cpu")
    assert cpu.exists and cpu.kind == "cpu" and cpu.id == 0 and cpu.compute_units >= 1
    assert repr(opencl) == "tessera.device('opencl', 0)"
    assert opencl == tessera.device("opencl") and opencl != cpu and len({opencl, tessera.device("opencl", 0)}) == 1
    assert opencl.name and opencl.max_threads_per_block > 0 and opencl.max_shared_memory_per_block > 0
    assert opencl.compute_units > 0 and opencl.global_memory_bytes > 0 and opencl.warp_size >= 1
    assert opencl.compute_capability is None
    # PoCL's device is the CPU: its local memory is global memory standing in (CL_GLOBAL).
    assert not cpu.dedicated_shared_memory and opencl.dedicated_shared_memory == ("pthread" not in opencl.name)
    opencl.synchronize()


def test_missing_devices_say_what_is_missing():
    assert not tessera.device("opencl", 7).exists
    with pytest.raises(tessera.Error, match=r"opencl\(7\): only 1 OpenCL device\(s\) found"):
        tessera.device("opencl", 7).name
    with pytest.raises(ValueError, match="unknown device kind 'vulkan'"):
        tessera.device("vulkan")
    with pytest.raises(ValueError, match="device ids start at 0"):
        tessera.device("cuda", -1)
    with pytest.raises(tessera.Error, match=r"opencl\(7\): only"):
        nd.array(np.ones(2), device=tessera.device("opencl", 7))
    with pytest.raises(TypeError, match="expected a device"):
        nd.empty((2,), device=3)


def test_cuda_exists_or_says_why_not():
    cuda = tessera.device("cuda")
    if cuda.exists:
        assert cuda.warp_size == 32 and cuda.compute_capability[0] >= 3
        x = np.arange(10, dtype="float32")
        np.testing.assert_array_equal(nd.array(x, device=cuda).numpy(), x)
        return
    expected = "no CUDA driver found \\(libcuda.so.1 could not be loaded: " if not cuda_driver_loads() else "CUDA"
    with pytest.raises(tessera.Error, match=expected):
        cuda.name
    with pytest.raises(tessera.Error, match=expected):
        nd.array(np.ones(2), device="cuda")


@pytest.mark.parametrize("x", [
    np.arange(12, dtype="float32").reshape(3, 4) / 7,
    np.arange(-5, 6, dtype="int64") * (1 << 40),
    np.array([True, False, True, True]),
    np.zeros((0, 3), "float32"),
    np.arange(24, dtype="float64").reshape(2, 3, 4).transpose(2, 0, 1),  # not contiguous
    np.arange(20, dtype="int32")[::3],                                   # a step
    np.float16([1.5, -2.25]),
    np.uint8(200),                                                       # zero dimensions
])
def test_arrays_round_trip_through_opencl(opencl, x):
    a = nd.array(x, device=opencl)
    assert a.device == opencl and a.shape == x.shape and a.dtype == str(x.dtype)
    back = a.numpy()
    assert back.dtype == x.dtype and back.flags.c_contiguous
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(a.copy_to(opencl).numpy(), x)     # within the device
    np.testing.assert_array_equal(a.copy_to("cpu").numpy(), x)
    assert a.copy_to("cpu").device == tessera.device("cpu")


def test_empty_arrays_on_a_device_are_zero(opencl):
    a = nd.empty((5, 2), "int32", device="opencl")
    assert a.device == opencl and repr(a) == "tessera.nd.NDArray((5, 2), int32, opencl(0))"
    np.testing.assert_array_equal(a.numpy(), np.zeros((5, 2), "int32"))
    assert nd.empty((2,)).device == tessera.device("cpu") and repr(nd.empty((2,))) == "tessera.nd.NDArray((2,), float32)"


def test_device_memory_is_never_read_as_host_memory(opencl):
    a = nd.array(np.ones(4, "float32"), device=opencl)
    with pytest.raises(BufferError) as refused:
        memoryview(a)
    # pybind11 reports "Error getting buffer", caused by the binding's own message.
    assert "on opencl(0), which the host cannot address" in str(refused.value) + str(refused.value.__cause__)
    with pytest.raises(BufferError, match=r"on opencl\(0\), whose buffers DLPack cannot share: copy it to the CPU"):
        a.__dlpack__()
    with pytest.raises(BufferError, match=r"on opencl\(0\), whose buffers DLPack cannot share"):
        nd.from_dlpack(a)
    assert a.__dlpack_device__() == (4, 0)  # kDLOpenCL
    x = tessera.te.placeholder((4,), "float32", name="x")
    y = tessera.te.compute((4,), lambda i: x[i] * 2, name="y")
    f = tessera.te.build(tessera.te.create_schedule(y), [x, y], target="llvm")
    with pytest.raises(BufferError, match=r"the array is on opencl\(0\)"):
        f(a, np.zeros(4, "float32"))

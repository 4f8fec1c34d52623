"""Arrays in and out of Tessera without copies: tessera.nd (array, from_dlpack, __dlpack__) with
PyTorch tensors and numpy arrays, lib.run and compiled kernels on any DLPack-capable array
(strided ones copied, never misread), and the errors a wrong input gets."""
import ctypes
import gc

import numpy as np
import pytest

import tessera
from tessera import nd, relay, te


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def to_torch(x):
    """A tensor holding a copy of `x` (DLPack: torch's numpy bridge needs numpy 1)."""
    from torch_numpy import tensor
    return tensor(x)


def to_numpy(t):
    from torch_numpy import array
    return array(t)


def address(x):
    """Where the elements of a numpy or tessera.nd array start."""
    return np.asarray(x).__array_interface__["data"][0]


# A DLPack 1.0 producer written with ctypes, for tensors no library at hand makes: other devices,
# TVM's uint1 bool, read-only ones. It counts how often its deleter runs.
class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter),
                ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_VERSIONED_NAME = b"dltensor_versioned"
_READ_ONLY = 1


class Producer:
    def __init__(self, array, device=(1, 0), dtype=(2, 32), flags=0):
        self.array = np.ascontiguousarray(array)
        self.shape = (ctypes.c_int64 * self.array.ndim)(*self.array.shape)
        self.deleted = 0
        self.deleter = _Deleter(self._delete)
        tensor = _Tensor(self.array.ctypes.data, _Device(*device), self.array.ndim, _DataType(*dtype, 1),
                         ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
        self.managed = _ManagedVersioned(_Version(1, 0), None, self.deleter, flags, tensor)

    def _delete(self, _):
        self.deleted += 1

    def __dlpack__(self, max_version=None, **_):
        # Without a destructor: a capsule nobody takes over leaves the tensor to this object.
        return _capsule_new(ctypes.addressof(self.managed), _VERSIONED_NAME, None)


# --- tessera.nd and the DLPack protocol ----------------------------------------------------------

def test_torch_tensors_and_tessera_arrays_share_memory(torch):
    import torch.utils.dlpack
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = nd.from_dlpack(t)
    assert (a.shape, a.dtype) == ((2, 3), "float32")
    assert address(a) == t.data_ptr()
    np.asarray(a)[0, 0] = 42
    assert t[0, 0].item() == 42
    back = torch.utils.dlpack.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr()
    back[1, 2] = -1
    assert a.numpy()[1, 2] == -1


def test_numpy_arrays_and_tessera_arrays_share_memory():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    a = nd.from_dlpack(x)
    assert address(a) == address(x)
    x[0, 0] = 7
    assert a.numpy()[0, 0] == 7
    y = np.from_dlpack(a)
    assert np.shares_memory(y, x)
    np.testing.assert_array_equal(y, x)
    # nd.array and .numpy() copy, like np.array.
    assert not np.shares_memory(nd.array(x).numpy(), x)


def test_arrays_live_as_long_as_anyone_uses_them(torch):
    import torch.utils.dlpack
    t = torch.utils.dlpack.from_dlpack(nd.array(np.arange(1000, dtype="float32")))  # the nd array is gone
    a = nd.from_dlpack(torch.arange(1000, dtype=torch.float32))  # and so is the tensor
    gc.collect()
    np.testing.assert_array_equal(to_numpy(t), np.arange(1000))
    np.testing.assert_array_equal(a.numpy(), np.arange(1000))


def test_the_producers_deleter_runs_once_when_the_last_user_goes():
    p = Producer(np.arange(4, dtype="float32"))
    a = nd.from_dlpack(p)
    b = np.asarray(a)
    assert address(a) == address(p.array)
    del a
    gc.collect()
    assert p.deleted == 0  # b still uses the memory
    del b
    gc.collect()
    assert p.deleted == 1


@pytest.mark.parametrize("view", ["transposed", "sliced with a step", "expanded", "negative steps"])
def test_strided_arrays_are_copied_in_row_major_order(view):
    base = np.arange(24, dtype="float32").reshape(4, 6)
    x = {"transposed": base.T, "sliced with a step": base[:, ::2], "expanded": np.broadcast_to(base[0], (4, 6)),
         "negative steps": base[::-1, ::-2]}[view]
    if not x.flags.writeable and np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("numpy 1 exports no read-only arrays through DLPack")
    a = nd.from_dlpack(x)
    assert a.shape == x.shape
    np.testing.assert_array_equal(a.numpy(), x)
    assert address(a) % 64 == 0 and not np.shares_memory(np.asarray(a), base)


@pytest.mark.parametrize("view", ["transposed", "sliced with a step", "expanded"])
def test_strided_torch_tensors_are_copied(torch, view):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    t = {"transposed": base.t(), "sliced with a step": base[:, ::2], "expanded": base[0].expand(4, 6)}[view]
    a = nd.from_dlpack(t)
    np.testing.assert_array_equal(a.numpy(), to_numpy(t))
    assert address(a) != base.data_ptr()


def test_compact_but_unaligned_tensors_are_shared(torch):
    base = torch.arange(10, dtype=torch.float32)
    a = nd.from_dlpack(base[1:])
    assert address(a) == base.data_ptr() + 4
    np.testing.assert_array_equal(a.numpy(), np.arange(1, 10))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"])
def test_dtypes_cross_both_ways(torch, dtype):
    import torch.utils.dlpack
    x = (np.arange(-6, 6) * 3).astype(dtype).reshape(3, 4)
    a = nd.from_dlpack(to_torch(x))
    assert a.dtype == dtype
    np.testing.assert_array_equal(a.numpy(), x)
    t = torch.utils.dlpack.from_dlpack(a)
    assert str(t.dtype) == f"torch.{dtype}"
    np.testing.assert_array_equal(to_numpy(t), x)


def test_bool_arrays():
    # DLPack's bool (numpy, PyTorch) and TVM's uint1 both store a byte per element.
    for dtype in [(6, 8), (1, 1)]:
        p = Producer(np.array([True, False, True]), dtype=dtype)
        a = nd.from_dlpack(p)
        assert a.dtype == "bool" and address(a) == address(p.array)
        np.testing.assert_array_equal(a.numpy(), [True, False, True])
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # numpy 1 reads no DLPack bool
        np.testing.assert_array_equal(np.from_dlpack(nd.array(np.array([False, True]))), [False, True])


def test_zero_size_arrays(torch):
    import torch.utils.dlpack
    assert nd.from_dlpack(torch.zeros(0, 3)).shape == (0, 3)
    assert nd.from_dlpack(np.zeros((2, 0), "int32")).shape == (2, 0)
    assert tuple(torch.utils.dlpack.from_dlpack(nd.empty((0, 3))).shape) == (0, 3)
    assert np.from_dlpack(nd.empty((0, 3), "int64")).shape == (0, 3)


def test_bfloat16_crosses_both_ways(torch):
    import torch.utils.dlpack
    t = torch.tensor([1.5, -2.25, 3e38, float("nan")], dtype=torch.bfloat16)
    a = nd.from_dlpack(t)
    assert a.dtype == "bfloat16" and a.shape == (4,)
    back = torch.utils.dlpack.from_dlpack(a)
    assert back.dtype == torch.bfloat16
    assert torch.equal(back.view(torch.int16), t.view(torch.int16))


def test_element_types_and_devices_tessera_lacks_are_refused_by_name(torch):
    with pytest.raises(tessera.Error, match="element type complex64 has no Tessera counterpart"):
        nd.from_dlpack(torch.ones(2, dtype=torch.complex64))
    p = Producer(np.ones(3, "float32"), device=(7, 1))
    with pytest.raises(tessera.Error, match="the array is on vulkan:1; Tessera takes DLPack arrays in CPU or CUDA memory"):
        nd.from_dlpack(p)
    assert p.deleted == 1  # taken over, so freed
    if not tessera.device("cuda", 1).exists:
        p = Producer(np.ones(3, "float32"), device=(2, 1))
        with pytest.raises(tessera.Error, match="the array is on cuda:1: "):
            nd.from_dlpack(p)
        assert p.deleted == 1
    with pytest.raises(TypeError, match="expected an array with __dlpack__"):
        nd.from_dlpack([1, 2])
    with pytest.raises(ValueError, match="unknown device kind 'vulkan'"):
        nd.array([1, 2], device="vulkan")


def test_read_only_tensors_are_copied():
    p = Producer(np.arange(4, dtype="float32"), flags=_READ_ONLY)
    a = nd.from_dlpack(p)
    assert address(a) != address(p.array) and p.deleted == 1
    np.testing.assert_array_equal(a.numpy(), np.arange(4))


def test_capsules_follow_the_protocol():
    a = nd.array(np.arange(3, dtype="float32"))
    assert '"dltensor"' in repr(a.__dlpack__())  # consumers older than DLPack 1.0
    capsule = a.__dlpack__(max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(capsule)
    b = nd.from_dlpack(capsule)
    assert '"used_dltensor_versioned"' in repr(capsule) and address(b) == address(a)
    with pytest.raises(TypeError, match="expected an unused DLPack capsule, got a capsule named .used_dltensor_versioned."):
        nd.from_dlpack(capsule)
    copied = nd.from_dlpack(a.__dlpack__(max_version=(1, 0), copy=True))
    assert address(copied) != address(a)
    np.testing.assert_array_equal(copied.numpy(), [0, 1, 2])
    assert a.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="stream=None"):
        a.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"the array is on cpu\(0\); cannot export to device"):
        a.__dlpack__(dl_device=(2, 0))


# --- lib.run ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def matmul():
    """relu(x @ w) for x (2, 3) and w (3, 4), with inputs and the expected output."""
    x, w = relay.var("x", (2, 3)), relay.var("w", (3, 4))
    lib = tessera.build(relay.function([x, w], relay.op.relu(relay.op.matmul(x, w))), db=False)
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((3, 4)).astype("float32")
    return lib, xv, wv, np.maximum(xv @ wv, 0)


def test_run_takes_tensors_tessera_arrays_and_numpy_arrays(torch, matmul):
    lib, x, w, want = matmul
    for inputs in ([to_torch(x), to_torch(w)], [nd.array(x), w], {"w": nd.array(w), "x": to_torch(x)}, (x, w)):
        out = lib.run(inputs)
        assert isinstance(out[0], np.ndarray)
        np.testing.assert_allclose(out[0], want, rtol=1e-6, atol=1e-6)


def test_run_copies_strided_and_unaligned_inputs(torch, matmul):
    lib, x, w, want = matmul
    transposed = to_torch(np.ascontiguousarray(x.T)).t()
    expanded_w = to_torch(w[:, :1]).expand(3, 4)
    unaligned = np.zeros(7, "float32")[1:].reshape(2, 3)
    unaligned[...] = x
    for inputs, expected in [([transposed, w], want), ([x, expanded_w], np.maximum(x @ np.repeat(w[:, :1], 4, 1), 0)),
                             ([unaligned, to_torch(w.T.copy()).t()], want), ([x, np.asfortranarray(w)], want)]:
        np.testing.assert_allclose(lib.run(inputs)[0], expected, rtol=1e-6, atol=1e-6)


def test_run_errors_name_the_input_and_say_what_was_expected(torch, matmul):
    lib, x, w, _ = matmul
    with pytest.raises(tessera.Error, match=r"input 'w' \(#1\): expected shape \(3, 4\) float32, got \(3, 5\) float32"):
        lib.run([x, np.zeros((3, 5), "float32")])
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): expected shape \(2, 3\) float32, got \(2, 3\) float64"):
        lib.run([torch.zeros(2, 3, dtype=torch.float64), w])
    with pytest.raises(tessera.Error, match=r"the model takes 2 inputs, got 1 \(its inputs are: x, w\)"):
        lib.run([x])
    with pytest.raises(tessera.Error, match=r"input 'w' \(#1\) is not given \(the model's inputs are: x, w\)"):
        lib.run({"x": x})
    with pytest.raises(tessera.Error, match=r"the model has no input 'y' \(its inputs are: x, w\)"):
        lib.run({"x": x, "w": w, "y": w})
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): dtype complex64 has no Tessera counterpart"):
        lib.run([x.astype("complex64"), w])
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): the array is on cuda:0"):
        lib.run([Producer(x, device=(2, 0)), w])
    with pytest.raises(TypeError, match="expected a list of inputs or a dict"):
        lib.run(x)


# --- kernels built with te.build ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def double():
    """B = 2 * A on (4, 5) float32."""
    A = te.placeholder((4, 5), "float32", name="A")
    B = te.compute((4, 5), lambda i, j: A[i, j] * 2, name="B")
    return te.build(te.create_schedule(B), [A, B])


def test_kernels_write_into_tensors_in_place(torch, double):
    a = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    b = torch.zeros(4, 5)
    double(a, b)
    np.testing.assert_array_equal(to_numpy(b), 2 * np.arange(20).reshape(4, 5))
    c = nd.empty((4, 5))
    double(nd.from_dlpack(a), c)
    np.testing.assert_array_equal(c.numpy(), 2 * np.arange(20).reshape(4, 5))


def test_kernels_write_back_through_strides(torch, double):
    a = torch.arange(20, dtype=torch.float32).reshape(5, 4).t()  # strided input
    out = torch.zeros(5, 4)
    double(a, out.t())  # a strided output: written back into `out`
    np.testing.assert_array_equal(to_numpy(out), 2 * np.arange(20).reshape(5, 4))
    flat = torch.zeros(21)
    double(a, flat[1:].view(4, 5))  # compact but unaligned
    np.testing.assert_array_equal(to_numpy(flat[1:]), 2 * np.arange(20).reshape(5, 4).T.reshape(-1))
    assert flat[0].item() == 0


def test_kernel_errors_name_the_argument(torch, double):
    good = torch.zeros(4, 5)
    with pytest.raises(tessera.Error, match=r"kernel 'main' argument 'A' \(#0\): expected shape \(4, 5\) float32, got \(5, 4\) float32"):
        double(torch.zeros(5, 4), good)
    with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): expected shape \(4, 5\) float32, got \(4, 5\) int32"):
        double(good, torch.zeros(4, 5, dtype=torch.int32))
    with pytest.raises(tessera.Error, match=r"argument 'B' \(#1\): the kernel writes this array, but it is read-only"):
        double(good, Producer(np.zeros((4, 5), "float32"), flags=_READ_ONLY))
    with pytest.raises(TypeError, match=r"argument 'B' \(#1\): expected a numpy array, a tessera.nd array or one with __dlpack__, got str"):
        double(good, "B")

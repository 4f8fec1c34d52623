// Arrays between Python and Tessera: the NDArray class of tessera.nd (buffer protocol, DLPack
// producer) and the conversions every entry point uses to take numpy arrays, tessera.nd arrays and
// any DLPack-capable array (PyTorch, JAX, CuPy, ...) as NDArrays, in the manner of TVM's tvm.nd.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <type_traits>

#include "python/src/bindings.h"
#include "runtime/device_api.h"
#include "runtime/error.h"

namespace tessera::python {

using runtime::DataType;
using runtime::DLManagedTensor;
using runtime::DLManagedTensorVersioned;
using runtime::NDArray;

namespace {

// The capsule names of the Python DLPack protocol; a consumer that takes the tensor over renames
// the capsule to the "used_" name, which tells the capsule's destructor to leave the tensor alone.
template <typename Managed>
constexpr const char* capsule_name() {
  return std::is_same_v<Managed, DLManagedTensorVersioned> ? "dltensor_versioned" : "dltensor";
}
template <typename Managed>
constexpr const char* used_capsule_name() {
  return std::is_same_v<Managed, DLManagedTensorVersioned> ? "used_dltensor_versioned" : "used_dltensor";
}

// The managed tensor in capsule `c` if it is of this kind and nobody has used it yet, else null.
template <typename Managed>
Managed* unused_tensor(PyObject* c) {
  if (!PyCapsule_IsValid(c, capsule_name<Managed>())) return nullptr;
  return static_cast<Managed*>(PyCapsule_GetPointer(c, capsule_name<Managed>()));
}

template <typename Managed>
py::object make_capsule(Managed* managed) {
  PyCapsule_Destructor destructor = [](PyObject* c) {
    if (Managed* m = unused_tensor<Managed>(c); m && m->deleter) m->deleter(m);
  };
  PyObject* c = PyCapsule_New(managed, capsule_name<Managed>(), destructor);
  if (!c) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(c);
}

// Runs f, putting `what` (the input or argument concerned) before the message of an Error.
template <typename F>
auto about(const std::string& what, F f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

std::string type_name(const py::handle& obj) { return Py_TYPE(obj.ptr())->tp_name; }

// What __dlpack__ gave when it is not an unused DLPack capsule, for the error message.
std::string describe_capsule(PyObject* c) {
  if (!PyCapsule_CheckExact(c)) return "a " + type_name(c);
  const char* name = PyCapsule_GetName(c);
  return name ? "a capsule named '" + std::string(name) + "'" : "a capsule without a name";
}

// A numpy array as an NDArray: a view when it is C-contiguous (the array is kept alive),
// otherwise a compact copy.
NDArray from_numpy(const py::array& a, const std::string& what) {
  std::string kind = py::str(a.dtype());
  DataType dtype = about(what, [&] {
    try {
      return DataType::parse(kind);
    } catch (const Error&) {
      fail("dtype ", kind,
           " has no Tessera counterpart (Tessera has float16/32/64, int8/16/32/64, uint8/16/32/64 and bool)");
    }
  });
  // Copied by numpy straight into aligned memory: a copy of numpy's own need not be 64-byte
  // aligned, and the executor would copy that again.
  if (!(a.flags() & py::array::c_style)) return aligned_copy(a, dtype);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  auto owner = std::make_shared<py::object>(a);
  // The deleter needs the GIL to drop the Python reference.
  std::shared_ptr<void> keep(nullptr, [owner](void*) {
    py::gil_scoped_acquire gil;
    const_cast<std::shared_ptr<py::object>&>(owner).reset();
  });
  return NDArray::view(const_cast<void*>(a.data()), shape, dtype, keep);
}

// The capsule of obj.__dlpack__() (or obj itself, a capsule), versioned where the producer can.
py::object dlpack_capsule(const py::handle& obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return py::reinterpret_borrow<py::object>(obj);
  try {
    return obj.attr("__dlpack__")(py::arg("max_version") =
                                      py::make_tuple(runtime::kDLPackMajorVersion, runtime::kDLPackMinorVersion));
  } catch (py::error_already_set& e) {
    // Producers older than DLPack 1.0 (numpy 1, PyTorch 1.x) take no max_version.
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return obj.attr("__dlpack__")();
}

// Takes the tensor of a capsule over (renaming the capsule, as the protocol asks).
NDArray take_capsule(const py::object& capsule, const std::string& what) {
  PyObject* c = capsule.ptr();
  if (auto* m = unused_tensor<DLManagedTensorVersioned>(c)) {
    PyCapsule_SetName(c, used_capsule_name<DLManagedTensorVersioned>());
    return about(what, [&] { return runtime::from_dlpack(m); });
  }
  if (auto* m = unused_tensor<DLManagedTensor>(c)) {
    PyCapsule_SetName(c, used_capsule_name<DLManagedTensor>());
    return about(what, [&] { return runtime::from_dlpack(m); });
  }
  throw py::type_error(what + ": expected an unused DLPack capsule, got " + describe_capsule(c));
}

// NDArray.__dlpack__ of the Python array API standard.
py::object export_dlpack(const NDArray& a, const py::object& stream, const py::object& max_version,
                         const py::object& dl_device, const py::object& copy) {
  const runtime::Device device = a.device();
  if (device.type == runtime::DeviceType::OpenCL)
    throw py::buffer_error("the array is on " + device.str() +
                           ", whose buffers DLPack cannot share: copy it to the "
                           "CPU first (.numpy(), or .copy_to(\"cpu\"))");
  const int dl_type = device.type == runtime::DeviceType::CUDA ? runtime::kDLCUDA : runtime::kDLCPU;
  if (!dl_device.is_none()) {
    auto wanted = py::cast<py::tuple>(dl_device);
    if (wanted[0].cast<int>() != dl_type || (dl_type == runtime::kDLCUDA && wanted[1].cast<int>() != device.id))
      throw py::buffer_error("the array is on " + device.str() + "; cannot export to device " +
                             std::string(py::repr(dl_device)));
  }
  if (device.type == runtime::DeviceType::CPU) {
    if (!stream.is_none()) throw py::buffer_error("tessera.nd arrays in CPU memory have no streams: pass stream=None");
  } else if (!stream.is_none() && stream.cast<int64_t>() != -1) {
    // Tessera queues CUDA work on the legacy default stream; a consumer's own stream need not wait
    // for it, so the work is finished first. (None is the legacy default stream itself; -1: no wait.)
    runtime::DeviceAPI::get(device).synchronize();
  }
  const bool fresh = !copy.is_none() && copy.cast<bool>();
  const NDArray out = fresh ? a.copy_to(a.device()) : a;
  // The versioned capsule only for consumers that say they read it (the protocol's rule).
  if (!max_version.is_none() && py::cast<py::tuple>(max_version)[0].cast<int>() >= 1)
    return make_capsule(runtime::to_dlpack_versioned(out, fresh ? runtime::kDLPackFlagIsCopied : 0));
  return make_capsule(runtime::to_dlpack(out));
}

// The struct format characters of the buffer protocol.
std::string buffer_format(DataType t) {
  const int size_index = t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : 3;
  switch (t.code) {
    case runtime::TypeCode::Int:
      return std::string(1, "bhiq"[size_index]);
    case runtime::TypeCode::UInt:
      return std::string(1, "BHIQ"[size_index]);
    case runtime::TypeCode::Float:
      return std::string(1, " efd"[size_index]);
    case runtime::TypeCode::Bool:
      return "?";
    default:
      break;
  }
  fail("no buffer format for ", t.str(), t.is_narrow() ? " (numpy() gives an ml_dtypes array)" : "");
}

}  // namespace

py::array numpy_view(const py::array& like, const NDArray& a) {
  return py::array(like.dtype(), std::vector<py::ssize_t>(like.shape(), like.shape() + like.ndim()), a.data(),
                   py::none());
}

NDArray aligned_copy(const py::array& a, DataType dtype) {
  NDArray copy = NDArray::empty({a.shape(), a.shape() + a.ndim()}, dtype);
  numpy_view(a, copy).attr("__setitem__")(py::ellipsis(), a);
  return copy;
}

py::dtype numpy_dtype(DataType t) {
  if (t.is_narrow()) {
    try {
      py::module_::import("ml_dtypes");  // registers its types' names with numpy
    } catch (py::error_already_set&) {
      throw py::import_error("numpy has no " + t.str() +
                             " type of its own: install the ml_dtypes package (pip install ml_dtypes), whose arrays "
                             "Tessera reads and returns");
    }
  }
  return py::dtype(t.str());
}

py::array to_numpy(const NDArray& a) {
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  py::array out(numpy_dtype(a.dtype()), shape);
  // Copied straight into numpy's memory, from whichever device holds the array.
  NDArray::view(out.mutable_data(), a.shape(), a.dtype(), nullptr).copy_from(a);
  return out;
}

py::array numpy_owning(NDArray a) {
  if (a.numel() == 0 || a.device().type != runtime::DeviceType::CPU) return to_numpy(a);
  auto* kept = new NDArray(std::move(a));
  py::capsule owner(kept, [](void* p) { delete static_cast<NDArray*>(p); });
  std::vector<py::ssize_t> shape(kept->shape().begin(), kept->shape().end());
  return py::array(numpy_dtype(kept->dtype()), shape, kept->data(), owner);
}

NDArray to_ndarray(const py::handle& obj, const std::string& what) {
  if (py::isinstance<NDArray>(obj)) return obj.cast<NDArray>();
  if (py::isinstance<py::array>(obj)) return from_numpy(py::reinterpret_borrow<py::array>(obj), what);
  if (py::hasattr(obj, "__dlpack__") || PyCapsule_CheckExact(obj.ptr())) return take_capsule(dlpack_capsule(obj), what);
  py::array a = py::array::ensure(obj);  // numbers, nested lists, numpy scalars
  if (!a)
    throw py::type_error(what + ": expected an array (numpy, tessera.nd or one with __dlpack__), got " +
                         type_name(obj));
  return from_numpy(a, what);
}

BorrowedTensor borrow_dlpack(const py::handle& obj, const std::string& what) {
  if (!py::hasattr(obj, "__dlpack__") && !PyCapsule_CheckExact(obj.ptr()))
    throw py::type_error(what + ": expected a numpy array, a tessera.nd array or one with __dlpack__, got " +
                         type_name(obj));
  BorrowedTensor b;
  b.capsule = dlpack_capsule(obj);
  if (auto* m = unused_tensor<DLManagedTensorVersioned>(b.capsule.ptr())) {
    if (m->version.major != runtime::kDLPackMajorVersion)
      fail(what, ": a DLPack ", m->version.major, ".", m->version.minor, " tensor: Tessera reads DLPack ",
           runtime::kDLPackMajorVersion, ".x");
    b.tensor = &m->dl_tensor;
    b.read_only = m->flags & runtime::kDLPackFlagReadOnly;
  } else if (auto* m = unused_tensor<DLManagedTensor>(b.capsule.ptr())) {
    b.tensor = &m->dl_tensor;
  } else {
    throw py::type_error(what + ": expected an unused DLPack capsule, got " + describe_capsule(b.capsule.ptr()));
  }
  b.dtype = about(what, [&] { return runtime::dlpack_data_type(*b.tensor); });
  return b;
}

void check_array(const std::string& what, const std::vector<int64_t>& shape, DataType dtype,
                 const std::vector<int64_t>& got_shape, const std::string& got_dtype) {
  if (got_shape == shape && got_dtype == dtype.str()) return;
  fail(what, ": expected shape ", runtime::shape_str(shape), " ", dtype.str(), ", got ", runtime::shape_str(got_shape),
       " ", got_dtype);
}

void bind_ndarray(py::module_& m) {
  py::class_<NDArray>(m, "NDArray", py::buffer_protocol(),
                      "A dense row-major array on a device (tessera.nd.array, tessera.nd.from_dlpack, "
                      "tessera.nd.empty). CPU and CUDA arrays share their memory through DLPack (__dlpack__), CPU "
                      "ones through the buffer protocol too (np.asarray); .numpy() copies, from any device.")
      .def_property_readonly(
          "shape", [](const NDArray& a) { return py::tuple(py::cast(a.shape())); },
          "The extent of each dimension, as a tuple.")
      .def_property_readonly(
          "dtype", [](const NDArray& a) { return a.dtype().str(); },
          "The element type's name (\"float32\", \"int64\", \"bool\", ...).")
      .def_property_readonly("ndim", &NDArray::ndim, "The number of dimensions.")
      .def_property_readonly("device", &NDArray::device, "The device whose memory holds the elements.")
      .def("numpy", &to_numpy, "A numpy array holding a copy of the elements (copied from the device).")
      .def(
          "copy_to", [](const NDArray& a, const py::object& device) { return a.copy_to(to_device(device)); },
          py::arg("device"), "A new array on `device` holding a copy of the elements.")
      .def("__dlpack__", &export_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
           "A DLPack capsule sharing this array's memory (versioned when max_version >= (1, 0); copy=True "
           "exports a copy). CPU and CUDA arrays; OpenCL buffers cannot be shared.")
      .def("__dlpack_device__",
           [](const NDArray& a) {
             const auto type = a.device().type == runtime::DeviceType::CUDA     ? runtime::kDLCUDA
                               : a.device().type == runtime::DeviceType::OpenCL ? runtime::kDLOpenCL
                                                                                : runtime::kDLCPU;
             return py::make_tuple(static_cast<int>(type), a.device().id);
           })
      .def("__repr__",
           [](const NDArray& a) {
             const bool cpu = a.device().type == runtime::DeviceType::CPU;
             return "tessera.nd.NDArray(" + a.shape_str() + ", " + a.dtype().str() +
                    (cpu ? "" : ", " + a.device().str()) + ")";
           })
      .def_buffer([](const NDArray& a) {
        if (a.device().type != runtime::DeviceType::CPU)
          throw py::buffer_error("the array is on " + a.device().str() +
                                 ", which the host cannot address: use .numpy()");
        const py::ssize_t bytes = a.dtype().element_bytes();
        std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end()), strides;
        for (int64_t s : runtime::row_major_strides(a.shape())) strides.push_back(s * bytes);
        return py::buffer_info(a.data(), bytes, buffer_format(a.dtype()), a.ndim(), shape, strides);
      });

  m.def(
      "nd_from_dlpack",
      [](const py::object& x) {
        if (!py::hasattr(x, "__dlpack__") && !PyCapsule_CheckExact(x.ptr()))
          throw py::type_error("from_dlpack: expected an array with __dlpack__ (or a DLPack capsule), got " +
                               type_name(x));
        return take_capsule(dlpack_capsule(x), "from_dlpack");
      },
      py::arg("x"),
      "`x` (with __dlpack__, or a capsule) as an NDArray sharing its memory (backs tessera.nd.from_dlpack).");
  m.def(
      "nd_array",
      [](const py::object& x, const py::object& device) {
        const runtime::Device d = to_device(device);
        return to_ndarray(x, "array").copy_to(d);
      },
      py::arg("x"), py::arg("device") = py::none(), "An aligned copy of `x` on `device` (backs tessera.nd.array).");
  m.def(
      "nd_empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype, const py::object& device) {
        const runtime::Device d = to_device(device);
        return NDArray::empty(shape, DataType::parse(dtype), d);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("device") = py::none(),
      "A zero-filled NDArray on `device` (backs tessera.nd.empty).");
}

}  // namespace tessera::python

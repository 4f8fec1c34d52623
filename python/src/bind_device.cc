// Devices in Python: tessera.device("opencl", 0) names a device whether or not it is present;
// .exists says if it is, and its attributes (name, threads per block, ...) ask its DeviceAPI.
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "runtime/device_api.h"
#include "runtime/error.h"

namespace tessera::python {

using runtime::Device;
using runtime::DeviceAPI;
using runtime::DeviceType;

namespace {

// Device::parse, its error a ValueError as Python expects of a bad argument.
Device parse_device(const std::string& text) {
  try {
    return Device::parse(text);
  } catch (const tessera::Error& e) {
    throw py::value_error(e.what());
  }
}

Device make_device(const std::string& kind, int id) {
  if (kind.find(':') != std::string::npos)
    throw py::value_error("give the device id apart from the kind: tessera.device(\"cuda\", 1), not \"" + kind + "\"");
  if (id < 0) throw py::value_error("device ids start at 0, got " + std::to_string(id));
  Device d = parse_device(kind);
  d.id = id;
  return d;
}

const runtime::DeviceAttributes& attributes(const Device& d) { return DeviceAPI::get(d).attributes(); }

}  // namespace

Device to_device(const py::handle& obj) {
  if (obj.is_none()) return Device::cpu();
  if (py::isinstance<Device>(obj)) return obj.cast<Device>();
  if (py::isinstance<py::str>(obj)) return parse_device(obj.cast<std::string>());
  throw py::type_error("expected a device (tessera.device(...), or \"cpu\", \"opencl\", \"cuda\", \"cuda:1\"), got " +
                       std::string(Py_TYPE(obj.ptr())->tp_name));
}

void bind_device(py::module_& m) {
  py::class_<Device>(m, "Device",
                     "A device by kind and number (tessera.device(\"opencl\", 0)), present or not: .exists says "
                     "whether its driver and the device are there; the attributes ask the device and raise "
                     "tessera.Error, naming what is missing, when it is not.")
      .def(py::init(&make_device), py::arg("kind"), py::arg("id") = 0,
           "The device `id` of `kind` (\"cpu\", \"opencl\" or \"cuda\"); tessera.device(kind, id) says the same.")
      .def_property_readonly(
          "kind", [](const Device& d) { return runtime::device_type_name(d.type); }, "\"cpu\", \"opencl\" or \"cuda\".")
      .def_property_readonly(
          "id", [](const Device& d) { return d.id; }, "The device's number among its kind.")
      .def_property_readonly(
          "exists", [](const Device& d) { return DeviceAPI::exists(d); },
          "Whether the driver and this device are present (never raises).")
      .def_property_readonly(
          "name", [](const Device& d) { return attributes(d).name; }, "The device's name as its driver gives it.")
      .def_property_readonly(
          "max_threads_per_block", [](const Device& d) { return attributes(d).max_threads_per_block; },
          "Threads per block (CUDA), work-items per work-group (OpenCL); 1 on the CPU.")
      .def_property_readonly(
          "max_shared_memory_per_block", [](const Device& d) { return attributes(d).max_shared_memory_per_block; },
          "Bytes of shared (CUDA) or local (OpenCL) memory a block may use.")
      .def_property_readonly(
          "dedicated_shared_memory", [](const Device& d) { return attributes(d).dedicated_shared_memory; },
          "Whether that memory is on the chip (CUDA GPUs, OpenCL's CL_LOCAL) rather than global memory standing "
          "in for it (OpenCL's CL_GLOBAL, as on CPU devices): the default GPU schedules stage matrix products in "
          "it only where it is.")
      .def_property_readonly(
          "warp_size", [](const Device& d) { return attributes(d).warp_size; },
          "Threads of a CUDA warp; 1 on OpenCL (a sub-group's size belongs to each kernel) and "
          "the CPU.")
      .def_property_readonly(
          "compute_units", [](const Device& d) { return attributes(d).compute_units; },
          "Streaming multiprocessors (CUDA), compute units (OpenCL), hardware threads (CPU).")
      .def_property_readonly(
          "global_memory_bytes", [](const Device& d) { return attributes(d).global_memory_bytes; },
          "The device's memory in bytes (0 for the CPU).")
      .def_property_readonly(
          "compute_capability",
          [](const Device& d) -> py::object {
            const auto& a = attributes(d);
            if (d.type != DeviceType::CUDA) return py::none();
            return py::make_tuple(a.compute_capability_major, a.compute_capability_minor);
          },
          "A CUDA device's compute capability, (9, 0) for sm_90; None for other kinds.")
      .def(
          "synchronize", [](const Device& d) { DeviceAPI::get(d).synchronize(); },
          "Waits until all work queued on the device is done.")
      .def(
          "__eq__", [](const Device& a, const Device& b) { return a == b; }, py::arg("other"))
      .def("__hash__", [](const Device& d) { return py::hash(py::make_tuple(static_cast<int>(d.type), d.id)); })
      .def("__repr__", [](const Device& d) {
        return "tessera.device('" + std::string(runtime::device_type_name(d.type)) + "', " + std::to_string(d.id) + ")";
      });
}

}  // namespace tessera::python

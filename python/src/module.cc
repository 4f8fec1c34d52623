#include <pybind11/pybind11.h>

#include <cstdlib>
#include <string>

#include "python/src/bindings.h"
#include "runtime/error.h"

namespace {

namespace py = pybind11;

// pybind11 reads numpy's array structures itself; before 2.12 it knew only numpy 1's, and with
// numpy 2 it misread every array's strides (outputs became copies of their first value).
constexpr int kNewestNumpyMajor = PYBIND11_VERSION_MAJOR > 2 || PYBIND11_VERSION_MINOR >= 12 ? 2 : 1;

// Refuses, at import, a numpy whose arrays this extension may misread: never compute with it.
void check_numpy() {
  std::string version = py::module_::import("numpy").attr("__version__").cast<std::string>();
  int major = std::atoi(version.c_str());
  if (major >= 1 && major <= kNewestNumpyMajor) return;
  std::string supported =
      kNewestNumpyMajor == 1 ? "numpy 1.x" : "numpy 1.x and " + std::to_string(kNewestNumpyMajor) + ".x";
  throw py::import_error("tessera's extension reads " + supported + " arrays (it was built with pybind11 " +
                         std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR) +
                         "), but this environment has numpy " + version +
                         ": install a supported numpy, or rebuild tessera (pip install .) with a pybind11 that "
                         "supports numpy " +
                         std::to_string(major));
}

}  // namespace

PYBIND11_MODULE(_tessera, m) {
  check_numpy();
  m.doc() = "Tessera's C++ core; use the `tessera` package rather than this module.";
  static pybind11::exception<tessera::Error> error(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") =
      "A failure reported by Tessera's C++ core (bad input, an invalid schedule, a corrupt module or database); "
      "the message names the thing (op, node, file, loop, shape) and what was expected.";
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tessera::Error& e) {
      pybind11::set_error(error, e.what());
    }
  });
  tessera::python::bind_runtime(m);
  tessera::python::bind_device(m);
  tessera::python::bind_ndarray(m);
  tessera::python::bind_expr(m);
  tessera::python::bind_tensor(m);
  tessera::python::bind_schedule(m);
  tessera::python::bind_build(m);
  tessera::python::bind_options(m);
  tessera::python::bind_graph(m);
  tessera::python::bind_dynamic(m);
  tessera::python::bind_program(m);
  tessera::python::bind_relay(m);
  tessera::python::bind_autotune(m);
}

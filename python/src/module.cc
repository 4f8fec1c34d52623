#include <pybind11/pybind11.h>

#include "python/src/bindings.h"
#include "runtime/error.h"

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera's C++ core; use the `tessera` package rather than this module.";
  static pybind11::exception<tessera::Error> error(m, "Error", PyExc_RuntimeError);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tessera::Error& e) {
      error(e.what());
    }
  });
  tessera::python::bind_runtime(m);
  tessera::python::bind_expr(m);
  tessera::python::bind_tensor(m);
  tessera::python::bind_schedule(m);
  tessera::python::bind_build(m);
  tessera::python::bind_graph(m);
  tessera::python::bind_relay(m);
  tessera::python::bind_autotune(m);
}

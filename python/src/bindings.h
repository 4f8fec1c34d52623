// Shared declarations of the pybind11 module `tessera._tessera`: one bind_* function per file.
#pragma once
#include <pybind11/pybind11.h>

#include "tensor_ir/tensor.h"

namespace tessera::python {

namespace py = pybind11;

void bind_runtime(py::module_& m);
void bind_autotune(py::module_& m);
void bind_expr(py::module_& m);
void bind_tensor(py::module_& m);
void bind_schedule(py::module_& m);
void bind_build(py::module_& m);
void bind_graph(py::module_& m);
void bind_relay(py::module_& m);

// A Python value as an expression: Expr, IterVar, bool, int (int64) or float (float64); the
// operators then give constants the other operand's type. Throws TypeError otherwise.
tensor_ir::Expr to_expr(const py::handle& value);

// `C.op` in TVM's API: the operation behind a tensor, with its axes.
struct Operation {
  tensor_ir::Tensor tensor;
};

}  // namespace tessera::python

// Shared declarations of the pybind11 module `tessera._tessera`: one bind_* function per file.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "driver/build.h"
#include "relay_ir/program.h"
#include "runtime/dlpack.h"
#include "runtime/kernel.h"
#include "runtime/module_loader.h"
#include "runtime/shape_expr.h"
#include "tensor_ir/tensor.h"

namespace tessera::python {

namespace py = pybind11;

void bind_runtime(py::module_& m);
void bind_device(py::module_& m);
void bind_ndarray(py::module_& m);
void bind_autotune(py::module_& m);
void bind_options(py::module_& m);  // before bind_graph and bind_autotune, whose functions take them
void bind_expr(py::module_& m);
void bind_tensor(py::module_& m);
void bind_schedule(py::module_& m);
void bind_build(py::module_& m);
void bind_graph(py::module_& m);
void bind_dynamic(py::module_& m);  // after bind_graph, whose Library and build_module it extends
void bind_program(py::module_& m);
void bind_relay(py::module_& m);

// A Python value as an expression: Expr, IterVar, bool, int (int64) or float (float64); the
// operators then give constants the other operand's type. Throws TypeError otherwise.
tensor_ir::Expr to_expr(const py::handle& value);

// A device argument as a Device: a tessera.device, a kind's name ("opencl": its device 0) or None
// (the CPU). Throws TypeError or ValueError otherwise.
runtime::Device to_device(const py::handle& obj);

// A Python array as an NDArray: a tessera.nd array as it is; a numpy array (or what numpy makes an
// array of) viewed when C-contiguous, else copied once; any object with __dlpack__ (or a DLPack
// capsule) taken over, viewed when compact, else copied once. Errors start with `what`.
runtime::NDArray to_ndarray(const py::handle& obj, const std::string& what);
// The numpy dtype of `t` (an ml_dtypes one for a narrow type; ImportError without ml_dtypes).
py::dtype numpy_dtype(runtime::DataType t);
// A numpy array holding a copy of `a`.
py::array to_numpy(const runtime::NDArray& a);
// A numpy array over a CPU array's own memory, which it keeps alive (a copy when `a` is empty).
py::array numpy_owning(runtime::NDArray a);
// A numpy view of `a`'s memory shaped and typed like `like` (`a` must outlive the view).
py::array numpy_view(const py::array& like, const runtime::NDArray& a);
// `a`'s elements copied, whatever its strides, into a new compact 64-byte aligned array of `dtype`.
runtime::NDArray aligned_copy(const py::array& a, runtime::DataType dtype);

// The tensor of obj.__dlpack__() (or of obj, a DLPack capsule), borrowed rather than taken over:
// it stays valid while `capsule` lives, whose destructor lets the producer free it. For calls
// that write into the caller's array in place, whatever its strides. Errors start with `what`.
struct BorrowedTensor {
  py::object capsule;
  const runtime::DLTensor* tensor = nullptr;
  runtime::DataType dtype;
  bool read_only = false;
};
BorrowedTensor borrow_dlpack(const py::handle& obj, const std::string& what);

// Throws "WHAT: expected shape (2, 3) float32, got (2, 4) float32" unless shape and dtype agree.
void check_array(const std::string& what, const std::vector<int64_t>& shape, runtime::DataType dtype,
                 const std::vector<int64_t>& got_shape, const std::string& got_dtype);

// run()'s inputs (a list in order or a dict by name) in the order of `specs`; throws naming an
// input that is missing or unknown.
std::vector<py::object> ordered_inputs(const py::object& inputs, const std::vector<runtime::BufferSpec>& specs);

// A ProgramLibrary (bind_program.cc) running `program` for `target`.
py::object program_library(std::shared_ptr<const relay_ir::Program> program, const std::string& target,
                           const driver::BuildOptions& options);
// A ProgramLibrary of a module holding a program (`loaded.program`).
py::object loaded_program_library(runtime::LoadedModule loaded);

// A dimension as Python shows it: its number, or a symbolic one's expression as a str ("N").
py::object dimension_object(const runtime::ShapeExpr& dim);

// `C.op` in TVM's API: the operation behind a tensor, with its axes.
struct Operation {
  tensor_ir::Tensor tensor;
};

}  // namespace tessera::python

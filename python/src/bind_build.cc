// Compiling a schedule and calling the kernel on numpy arrays without copying them.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "schedule/lower.h"
#include "targets/build.h"
#include "tensor_ir/printer.h"

namespace tessera::python {

using runtime::DataType;
using runtime::NDArray;
using tensor_ir::Tensor;

namespace {

// A compiled kernel callable as f(a, b, c) on numpy arrays. Arrays that are C-contiguous and
// 64-byte aligned are passed as they are; others go through an aligned copy (copied back
// afterwards when the kernel writes them).
class Function {
 public:
  Function(std::shared_ptr<runtime::Module> module, runtime::Kernel kernel, std::vector<bool> written, std::string lowered)
      : module_(std::move(module)), kernel_(std::move(kernel)), written_(std::move(written)), lowered_(std::move(lowered)) {}

  void call(const py::args& args) const {
    const auto& specs = kernel_.signature().args;
    if (args.size() != specs.size())
      throw py::type_error("kernel '" + kernel_.name() + "' takes " + std::to_string(specs.size()) + " arrays, got " +
                           std::to_string(args.size()));
    std::vector<void*> data(args.size());
    std::vector<NDArray> temporaries;  // alive until the kernel has run
    std::vector<std::pair<py::array, NDArray>> copies;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& spec = specs[i];
      std::string where = "kernel '" + kernel_.name() + "' argument " + std::to_string(i) + " ('" + spec.name + "')";
      if (!py::isinstance<py::array>(args[i])) throw py::type_error(where + ": expected a numpy array");
      py::array a = py::reinterpret_borrow<py::array>(args[i]);
      if (!a.dtype().is(py::dtype(numpy_name(spec.dtype))))
        fail(where, ": expected dtype ", spec.dtype.str(), ", got ", std::string(py::str(a.dtype())));
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      if (shape != spec.shape) fail(where, ": expected shape ", runtime::shape_str(spec.shape), ", got ", runtime::shape_str(shape));
      if (written_[i] && !a.writeable()) fail(where, ": the kernel writes this array, but it is read-only");
      bool contiguous = a.flags() & py::array::c_style;
      bool aligned = reinterpret_cast<uintptr_t>(a.data()) % runtime::kAllocAlignment == 0;
      if (contiguous && aligned) {
        data[i] = const_cast<void*>(a.data());
        continue;
      }
      NDArray tmp = NDArray::empty(spec.shape, spec.dtype);
      py::array view = view_of(a, tmp);
      view.attr("__setitem__")(py::ellipsis(), a);
      data[i] = tmp.data();
      temporaries.push_back(tmp);
      if (written_[i]) copies.emplace_back(a, tmp);
    }
    {
      py::gil_scoped_release release;
      kernel_.call_unchecked(data.data());
    }
    for (auto& [a, tmp] : copies) a.attr("__setitem__")(py::ellipsis(), view_of(a, tmp));
  }

  std::string source(const std::string& format) const {
    if (format == "tir") return lowered_;
    return module_->source(format);
  }
  const runtime::KernelSignature& signature() const { return kernel_.signature(); }

  static std::string numpy_name(DataType t) { return t.is_bool() ? "bool" : t.str(); }

  // A numpy view of `tmp` shaped like `a` (tmp outlives every use of the view).
  static py::array view_of(const py::array& a, const NDArray& tmp) {
    std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
    return py::array(a.dtype(), shape, tmp.data(), py::none());
  }

 private:
  std::shared_ptr<runtime::Module> module_;
  runtime::Kernel kernel_;
  std::vector<bool> written_;
  std::string lowered_;
};

}  // namespace

void bind_build(py::module_& m) {
  py::class_<Function>(m, "Function")
      .def("__call__", &Function::call)
      .def("get_source", &Function::source, py::arg("format") = "tir",
           "The kernel as lowered tensor IR ('tir'), LLVM IR ('ll') or assembly ('asm').")
      .def_property_readonly("name", [](const Function& f) { return f.signature().name; })
      .def_property_readonly("arg_names", [](const Function& f) {
        std::vector<std::string> names;
        for (const auto& a : f.signature().args) names.push_back(a.name);
        return names;
      });

  m.def("build", [](schedule::Schedule& s, const std::vector<Tensor>& args, const std::string& target, const std::string& name) {
    tensor_ir::LoweredFunc func = schedule::lower(s, args, name);
    std::vector<bool> written;
    for (const auto& a : args) {
      bool is_output = false;
      for (const auto& o : s.outputs()) is_output |= o.same_as(s[a].op());
      written.push_back(is_output);
    }
    std::string lowered = tensor_ir::to_string(func);
    std::shared_ptr<runtime::Module> module;
    {
      py::gil_scoped_release release;
      module = targets::build({func}, targets::Target::parse(target));
    }
    return Function(module, module->get_kernel(name), written, lowered);
  }, py::arg("schedule"), py::arg("args"), py::arg("target") = "llvm", py::arg("name") = "main");
}

}  // namespace tessera::python

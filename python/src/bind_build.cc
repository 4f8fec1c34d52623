// Compiling a schedule and calling the kernel on arrays (numpy, tessera.nd, DLPack) without copying them.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "python/src/bindings.h"
#include "runtime/device_program.h"
#include "runtime/error.h"
#include "schedule/lower.h"
#include "targets/build.h"
#include "tensor_ir/printer.h"

namespace tessera::python {

using runtime::NDArray;
using tensor_ir::Tensor;

namespace {

// Dtype, rank and, where the argument's shape is static, its dimensions; symbolic dimensions are
// checked against each other once every argument's shape is known (shape_var_values).
void check_argument(const std::string& where, const runtime::BufferSpec& spec, const std::vector<int64_t>& got_shape,
                    const std::string& got_dtype) {
  if (runtime::is_static(spec.shape))
    return check_array(where, runtime::static_shape(spec.shape, where), spec.dtype, got_shape, got_dtype);
  if (got_dtype != spec.dtype.str() || got_shape.size() != spec.shape.size())
    fail(where, ": expected shape ", runtime::symbolic_shape_str(spec.shape), " ", spec.dtype.str(), ", got ",
         runtime::shape_str(got_shape), " ", got_dtype);
}

// A compiled kernel callable as f(a, b, c) on numpy arrays, tessera.nd arrays or any array with
// __dlpack__ (PyTorch tensors, ...). Arrays that are compact and 64-byte aligned are passed as
// they are; others go through an aligned copy, copied back afterwards when the kernel writes them.
class Function {
 public:
  Function(std::shared_ptr<runtime::Module> module, runtime::Kernel kernel, std::vector<bool> written,
           std::string lowered)
      : module_(std::move(module)),
        kernel_(std::move(kernel)),
        written_(std::move(written)),
        lowered_(std::move(lowered)) {}

  void call(const py::args& args) const {
    const auto& specs = kernel_.signature().args;
    if (args.size() != specs.size())
      throw py::type_error("kernel '" + kernel_.name() + "' takes " + std::to_string(specs.size()) + " arrays, got " +
                           std::to_string(args.size()));
    std::vector<void*> data(args.size());
    std::vector<std::vector<int64_t>> shapes;
    std::vector<NDArray> temporaries;  // alive until the kernel has run
    std::vector<std::pair<py::array, NDArray>> copies;
    // Other arrays are borrowed, not taken over, so that a strided one the kernel writes can be
    // written back through its strides; their memory stays valid while the capsules live.
    std::vector<BorrowedTensor> borrowed;
    std::vector<std::pair<const runtime::DLTensor*, NDArray>> borrowed_copies;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& spec = specs[i];
      std::string where = "kernel '" + kernel_.name() + "' argument '" + spec.name + "' (#" + std::to_string(i) + ")";
      if (py::isinstance<py::array>(args[i])) {
        py::array a = py::reinterpret_borrow<py::array>(args[i]);
        shapes.emplace_back(a.shape(), a.shape() + a.ndim());
        check_argument(where, spec, shapes.back(), py::str(a.dtype()));
        if (written_[i] && !a.writeable()) fail(where, ": the kernel writes this array, but it is read-only");
        bool contiguous = a.flags() & py::array::c_style;
        if (contiguous && aligned(a.data())) {
          data[i] = const_cast<void*>(a.data());
          continue;
        }
        NDArray tmp = aligned_copy(a, spec.dtype);
        data[i] = tmp.data();
        temporaries.push_back(tmp);
        if (written_[i]) copies.emplace_back(a, tmp);
        continue;
      }
      BorrowedTensor b = borrow_dlpack(args[i], where);
      const runtime::DLTensor& t = *b.tensor;
      shapes.emplace_back(t.shape, t.shape + t.ndim);
      check_argument(where, spec, shapes.back(), b.dtype.str());
      if (written_[i] && b.read_only) fail(where, ": the kernel writes this array, but it is read-only");
      void* p = runtime::dlpack_data(t);
      if (runtime::dlpack_is_compact(t) && aligned(p)) {
        data[i] = p;
      } else {
        NDArray tmp = NDArray::empty(shapes.back(), spec.dtype);
        runtime::dlpack_copy_to_compact(t, tmp.data());
        data[i] = tmp.data();
        temporaries.push_back(tmp);
        if (written_[i]) borrowed_copies.emplace_back(&t, tmp);
      }
      borrowed.push_back(std::move(b));
    }
    const std::vector<int64_t> shape_vars = kernel_.signature().shape_var_values(shapes);
    if (!shape_vars.empty()) data.push_back(const_cast<int64_t*>(shape_vars.data()));
    {
      py::gil_scoped_release release;
      kernel_.call_unchecked(data.data());
    }
    for (auto& [a, tmp] : copies) a.attr("__setitem__")(py::ellipsis(), numpy_view(a, tmp));
    for (auto& [t, tmp] : borrowed_copies) runtime::dlpack_copy_from_compact(tmp.data(), *t);
  }

  std::string source(const std::string& format) const {
    if (format == "tir") return lowered_;
    return module_->source(format);
  }
  const runtime::KernelSignature& signature() const { return kernel_.signature(); }

  static bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % runtime::kAllocAlignment == 0; }

 private:
  std::shared_ptr<runtime::Module> module_;
  runtime::Kernel kernel_;
  std::vector<bool> written_;
  std::string lowered_;
};

// A compiled device program (te.build for opencl or cuda): f(a, b, c) on tessera.nd arrays on the
// device, or on host arrays, which are copied there and, for the outputs, back.
class DeviceFunction {
 public:
  DeviceFunction(std::shared_ptr<runtime::Module> module, std::shared_ptr<const runtime::DeviceProgram> program,
                 runtime::DeviceType kind, std::vector<bool> written, std::string lowered, std::string main_format)
      : module_(std::move(module)),
        program_(std::move(program)),
        kind_(kind),
        written_(std::move(written)),
        lowered_(std::move(lowered)),
        main_format_(std::move(main_format)) {}

  void call(const py::args& args) const {
    const auto& specs = program_->spec().args;
    const std::string& name = program_->name();
    if (args.size() != specs.size())
      throw py::type_error("kernel '" + name + "' takes " + std::to_string(specs.size()) + " arrays, got " +
                           std::to_string(args.size()));
    // The device of the first array already on one of the program's kind, else the kind's first.
    runtime::Device device{kind_, 0};
    for (const auto& a : args)
      if (py::isinstance<NDArray>(a) && a.cast<NDArray>().device().type == kind_) {
        device = a.cast<NDArray>().device();
        break;
      }
    std::vector<NDArray> arrays;
    std::vector<std::pair<py::array, NDArray>> copy_back;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& spec = specs[i];
      const std::string where = "kernel '" + name + "' argument '" + spec.name + "' (#" + std::to_string(i) + ")";
      NDArray a = to_ndarray(args[i], where);
      if (a.device() == device || py::isinstance<NDArray>(args[i])) {
        arrays.push_back(a);  // the program checks its device
        continue;
      }
      check_argument(where, spec, a.shape(), a.dtype().str());
      if (written_[i] && !py::isinstance<py::array>(args[i]))
        fail(where, ": the kernel writes this array; pass a numpy array or a tessera.nd array on ", device.str());
      if (written_[i] && !py::reinterpret_borrow<py::array>(args[i]).writeable())
        fail(where, ": the kernel writes this array, but it is read-only");
      arrays.push_back(a.copy_to(device));
      if (written_[i]) copy_back.emplace_back(py::reinterpret_borrow<py::array>(args[i]), arrays.back());
    }
    {
      py::gil_scoped_release release;
      (*program_)(arrays);
    }
    for (auto& [a, on_device] : copy_back) a.attr("__setitem__")(py::ellipsis(), to_numpy(on_device));
  }

  std::string source(const std::string& format) const {
    if (format == "tir") return lowered_;
    return module_->source(format.empty() ? main_format_ : format);
  }
  const runtime::DeviceProgramSpec& spec() const { return program_->spec(); }

 private:
  std::shared_ptr<runtime::Module> module_;
  std::shared_ptr<const runtime::DeviceProgram> program_;
  runtime::DeviceType kind_;
  std::vector<bool> written_;
  std::string lowered_, main_format_;
};

}  // namespace

void bind_build(py::module_& m) {
  py::class_<DeviceFunction>(
      m, "DeviceFunction",
      "A compiled device program (te.build for 'opencl' or 'cuda'): f(a, b, ...) launches its kernels in order "
      "on arrays given in the order of its arguments: tessera.nd arrays on the device, used in place, or host "
      "arrays (numpy), copied to the device and, for outputs, back. TypeError or tessera.Error names a wrong "
      "argument.")
      .def("__call__", &DeviceFunction::call)
      .def("get_source", &DeviceFunction::source, py::arg("format") = "",
           "The generated code: by default the device source ('cl' for OpenCL, 'cuda' for CUDA); 'ptx' and "
           "'ptxas' (registers and shared memory per kernel) for CUDA; 'tir' the lowered tensor IR.")
      .def_property_readonly(
          "name", [](const DeviceFunction& f) { return f.spec().name; }, "The program's name.")
      .def_property_readonly(
          "kernels",
          [](const DeviceFunction& f) {
            py::list kernels;
            for (const auto& k : f.spec().kernels)
              kernels.append(py::make_tuple(
                  k.name,
                  py::make_tuple(dimension_object(k.grid[0]), dimension_object(k.grid[1]), dimension_object(k.grid[2])),
                  py::make_tuple(k.config.block[0], k.config.block[1], k.config.block[2])));
            return kernels;
          },
          "The kernels launched in order, each as (name, grid, block); a grid extent of symbolic size is its "
          "expression, a str.");

  py::class_<Function>(
      m, "Function",
      "A compiled kernel (te.build): f(a, b, ...) runs it on arrays given in the order of its arguments "
      "(numpy arrays, tessera.nd arrays or any array with __dlpack__, such as PyTorch tensors), with "
      "their dtypes and shapes; outputs are written into their arrays. Aligned compact arrays are used "
      "in place; others (strided, unaligned) through a copy, copied back into outputs. TypeError or "
      "tessera.Error names a wrong argument.")
      .def("__call__", &Function::call)
      .def("get_source", &Function::source, py::arg("format") = "tir",
           "The kernel as lowered tensor IR ('tir'), LLVM IR ('ll') or assembly ('asm').")
      .def_property_readonly(
          "name", [](const Function& f) { return f.signature().name; }, "The kernel's name.")
      .def_property_readonly(
          "arg_names",
          [](const Function& f) {
            std::vector<std::string> names;
            for (const auto& a : f.signature().args) names.push_back(a.name);
            return names;
          },
          "The names of the arguments (the tensors given to te.build), in order.");

  m.def(
      "build",
      [](schedule::Schedule& s, const std::vector<Tensor>& args, const std::string& target, const std::string& name) {
        const targets::Target t = targets::Target::parse(target);
        const bool device = t.kind == "opencl" || t.kind == "cuda";
        tensor_ir::LoweredFunc func = device ? schedule::lower_for_device(s, args, name, t.warp_size()) : schedule::lower(s, args, name);
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
          module = targets::build({func}, t);
        }
        if (device) {
          const bool cuda = t.kind == "cuda";
          return py::cast(DeviceFunction(module, module->device_program(name),
                                         t.device_type(), written,
                                         lowered, cuda ? "cuda" : "cl"));
        }
        return py::cast(Function(module, module->get_kernel(name), written, lowered));
      },
      py::arg("schedule"), py::arg("args"), py::arg("target") = "llvm", py::arg("name") = "main",
      "Lowers and compiles `schedule` into a Function `name` over the buffers `args` for `target` (backs te.build): "
      "a DeviceFunction for opencl and cuda.");
}

}  // namespace tessera::python

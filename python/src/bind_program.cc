// Models with control flow or data-dependent shapes in Python: tessera.build of such a
// DynamicModule gives a ProgramLibrary, which runs the model's program (driver/program_executor.h),
// built for every size on its first run (else each stage at the shapes it meets); its export()
// writes the build for every size, which tessera.load gives back as a ProgramLibrary.
#include <pybind11/stl.h>

#include "driver/export.h"
#include "driver/program_build.h"
#include "driver/program_executor.h"
#include "runtime/module_loader.h"
#include "python/src/bindings.h"
#include "runtime/error.h"

namespace tessera::python {

namespace {

// A Python value as a program's: a list or tuple of arrays is a sequence, None an empty optional.
runtime::ProgramValue to_value(const py::handle& obj, const std::string& what) {
  auto host = [](runtime::NDArray a) {
    return a.device().type == runtime::DeviceType::CPU ? a : a.copy_to(runtime::Device::cpu());
  };
  if (obj.is_none()) return {};
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    std::vector<runtime::NDArray> elements;
    for (const py::handle& e : py::reinterpret_borrow<py::sequence>(obj))
      elements.push_back(host(to_ndarray(e, what + " element " + std::to_string(elements.size()))));
    return runtime::ProgramValue::of_sequence(std::move(elements));
  }
  return host(to_ndarray(obj, what));
}

py::object to_python(const runtime::ProgramValue& v) {
  if (v.is_tensor()) return to_numpy(v.tensor);
  if (v.is_none()) return py::none();
  py::list elements;
  for (const runtime::NDArray& e : v.sequence) elements.append(to_numpy(e));
  return std::move(elements);
}

// Built in this process (driver/program_executor.h), or loaded from a module (its stages built for
// every size).
class ProgramLibrary {
 public:
  explicit ProgramLibrary(std::shared_ptr<driver::ProgramExecutor> executor)
      : executor_(std::move(executor)), target_(executor_->target().str()) {}
  explicit ProgramLibrary(runtime::LoadedModule loaded)
      : loaded_(std::move(loaded.program)), target_(std::move(loaded.target)) {}

  const runtime::ProgramPlan& plan() const { return executor_ ? *executor_->program().plan : loaded_->plan(); }
  const std::string& target() const { return target_; }

  std::vector<py::object> run(const py::object& given) {
    const std::vector<std::string>& names = plan().inputs;
    std::vector<runtime::BufferSpec> inputs;
    for (const std::string& name : names) inputs.push_back({name, {}, {}});
    std::vector<runtime::ProgramValue> values;
    const std::vector<py::object> ordered = ordered_inputs(given, inputs);
    for (size_t i = 0; i < names.size(); ++i)
      values.push_back(to_value(ordered[i], "input '" + names[i] + "' (#" + std::to_string(i) + ")"));
    std::vector<runtime::ProgramValue> out;
    {
      py::gil_scoped_release release;
      out = executor_ ? executor_->run(values) : loaded_->run(values);
    }
    std::vector<py::object> result;
    for (const runtime::ProgramValue& o : out) result.push_back(to_python(o));
    return result;
  }

  void export_module(const std::string& path) const {
    if (!executor_) fail("export: the program was loaded from a module, which is written already");
    py::gil_scoped_release release;
    if (std::shared_ptr<const driver::ProgramBuild> built = executor_->every_size()) {
      driver::export_module(*built, path);
      return;
    }
    driver::BuildOptions options = executor_->options();
    options.jit = false;  // compiled for the module only (a CUDA module builds where no driver is)
    driver::export_module(driver::build_for_every_size(executor_->program(), executor_->target(), options), path);
  }

  bool symbolic() const { return !executor_ || executor_->every_size() != nullptr; }
  std::string symbolic_reason() const { return executor_ ? executor_->every_size_reason() : ""; }

  std::vector<std::pair<std::string, std::vector<std::string>>> builds() const {
    if (!executor_) return {};
    return executor_->builds();
  }

 private:
  std::shared_ptr<driver::ProgramExecutor> executor_;  // built in this process
  std::shared_ptr<runtime::ProgramModule> loaded_;     // loaded from a module
  std::string target_;
};

}  // namespace

py::object program_library(std::shared_ptr<const relay_ir::Program> program, const std::string& target,
                           const driver::BuildOptions& options) {
  auto executor = std::make_shared<driver::ProgramExecutor>(*program, targets::Target::parse(target), options);
  return py::cast(ProgramLibrary(std::move(executor)));
}

py::object loaded_program_library(runtime::LoadedModule loaded) { return py::cast(ProgramLibrary(std::move(loaded))); }

void bind_program(py::module_& m) {
  py::class_<ProgramLibrary>(
      m, "ProgramLibrary",
      "A model with control flow decided at run time (If, Loop, Scan) or outputs whose size depends on the data "
      "(NonZero, Unique, Compress, NonMaxSuppression), compiled (tessera.build of its DynamicModule). run() runs "
      "its program: the static parts between those nodes are stages, all built on the first run for inputs of "
      "any size (symbolic); where one cannot be (symbolic_reason), each stage is built the first time it meets a "
      "new signature (its inputs' shapes, and the values of inputs the compiler needs as constants) and reused "
      "after that. Branches, loops and the data-dependent operators run between the stages.")
      .def("run", &ProgramLibrary::run, py::arg("inputs"),
           "Runs the model: run([x, ...]) or run({name: x}); the outputs as numpy arrays. A sequence is a list of "
           "arrays, an empty optional None, in the inputs and the outputs.")
      .def(
          "export", [](const ProgramLibrary& l, const py::object& path) { l.export_module(py::str(path)); },
          py::arg("path"),
          "Writes the model as a module that runs at any size with the runtime alone (tessera.load, `tessera run`): "
          "every stage built now for inputs of any size, the program's branches, loops and data-dependent "
          "operators with them. Raises tessera.Error naming the step that cannot be built ahead of time (a stage "
          "that needs a value computed at run time as a constant, a value whose rank only the run tells).")
      .def_property_readonly("target", &ProgramLibrary::target, "The target string.")
      .def_property_readonly(
          "input_names", [](const ProgramLibrary& l) { return l.plan().inputs; },
          "The names of the inputs, in the order run() takes them.")
      .def_property_readonly(
          "program", [](const ProgramLibrary& l) { return runtime::to_text(l.plan()); },
          "The program as text: its steps, stages and bodies.")
      .def_property_readonly(
          "symbolic", &ProgramLibrary::symbolic,
          "True when the program is built once for every size (on its first run; always for a module): every "
          "stage compiled for inputs of any size; else each stage is built at the signatures it meets, and "
          "symbolic_reason says why.")
      .def_property_readonly("symbolic_reason", &ProgramLibrary::symbolic_reason,
                             "Why the program is not built for every size (the stage and the operator), or \"\".")
      .def_property_readonly("builds", &ProgramLibrary::builds,
                             "[(stage, [signature, ...])]: each stage built so far in this process and the input "
                             "signatures of the builds it keeps (the 64 most recently used), or [\"every size\"] "
                             "for each stage of the build for every size; empty for a program loaded from a module.");
}

}  // namespace tessera::python

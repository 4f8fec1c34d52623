// Models with control flow or data-dependent shapes in Python: tessera.build of such a
// DynamicModule gives a ProgramLibrary, which runs the model's program (driver/program_executor.h),
// building each stage at the shapes it meets.
#include <pybind11/stl.h>

#include "driver/program_executor.h"
#include "python/src/bindings.h"
#include "runtime/error.h"

namespace tessera::python {

namespace {

class ProgramLibrary {
 public:
  ProgramLibrary(std::shared_ptr<driver::ProgramExecutor> executor, std::vector<runtime::BufferSpec> inputs)
      : executor_(std::move(executor)), inputs_(std::move(inputs)) {}

  std::vector<py::object> run(const py::object& given) {
    std::vector<runtime::NDArray> arrays;
    const std::vector<py::object> ordered = ordered_inputs(given, inputs_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      runtime::NDArray a = to_ndarray(ordered[i], "input '" + inputs_[i].name + "' (#" + std::to_string(i) + ")");
      arrays.push_back(a.device().type == runtime::DeviceType::CPU ? a : a.copy_to(runtime::Device::cpu()));
    }
    std::vector<runtime::NDArray> out;
    {
      py::gil_scoped_release release;
      out = executor_->run(arrays);
    }
    std::vector<py::object> result;
    for (const runtime::NDArray& o : out) result.push_back(to_numpy(o));
    return result;
  }

  const driver::ProgramExecutor& executor() const { return *executor_; }
  const std::vector<runtime::BufferSpec>& inputs() const { return inputs_; }

 private:
  std::shared_ptr<driver::ProgramExecutor> executor_;
  std::vector<runtime::BufferSpec> inputs_;
};

}  // namespace

py::object program_library(std::shared_ptr<const relay_ir::Program> program, std::vector<runtime::BufferSpec> inputs,
                           const std::string& target, const driver::BuildOptions& options) {
  auto executor =
      std::make_shared<driver::ProgramExecutor>(std::move(program), targets::Target::parse(target), options);
  return py::cast(ProgramLibrary(std::move(executor), std::move(inputs)));
}

void bind_program(py::module_& m) {
  py::class_<ProgramLibrary>(
      m, "ProgramLibrary",
      "A model with control flow decided at run time (If, Loop, Scan) or outputs whose size depends on the data "
      "(NonZero, Unique, Compress, NonMaxSuppression), compiled (tessera.build of its DynamicModule). run() runs "
      "its program: the static parts between those nodes are stages, each built the first time it meets a new "
      "signature (its inputs' shapes, and the values of inputs the compiler needs as constants) and reused after "
      "that; branches, loops and the data-dependent operators run between them.")
      .def("run", &ProgramLibrary::run, py::arg("inputs"),
           "Runs the model: run([x, ...]) or run({name: x}); the outputs as numpy arrays.")
      .def(
          "export",
          [](const ProgramLibrary&, const py::object&) {
            fail(
                "export: a model with control flow or data-dependent shapes cannot be written as a module yet; it "
                "runs in this process only");
          },
          py::arg("path"), "Not yet possible (raises tessera.Error).")
      .def_property_readonly(
          "target", [](const ProgramLibrary& l) { return l.executor().target().str(); }, "The target string.")
      .def_property_readonly(
          "input_names",
          [](const ProgramLibrary& l) {
            std::vector<std::string> names;
            for (const auto& in : l.inputs()) names.push_back(in.name);
            return names;
          },
          "The names of the inputs, in the order run() takes them.")
      .def_property_readonly(
          "builds", [](const ProgramLibrary& l) { return l.executor().builds(); },
          "[(stage, [signature, ...])]: each stage built so far and the input signatures it was built for.");
}

}  // namespace tessera::python

// Models with control flow or data-dependent shapes in Python: tessera.build of such a
// DynamicModule gives a ProgramLibrary, which runs the model's program (driver/program_executor.h),
// building each stage at the shapes it meets.
#include <pybind11/stl.h>

#include "driver/program_executor.h"
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

class ProgramLibrary {
 public:
  explicit ProgramLibrary(std::shared_ptr<driver::ProgramExecutor> executor) : executor_(std::move(executor)) {
    for (const std::string& name : executor_->program().plan->inputs) inputs_.push_back({name, {}, {}});
  }

  std::vector<py::object> run(const py::object& given) {
    std::vector<runtime::ProgramValue> values;
    const std::vector<py::object> ordered = ordered_inputs(given, inputs_);
    for (size_t i = 0; i < inputs_.size(); ++i)
      values.push_back(to_value(ordered[i], "input '" + inputs_[i].name + "' (#" + std::to_string(i) + ")"));
    std::vector<runtime::ProgramValue> out;
    {
      py::gil_scoped_release release;
      out = executor_->run(values);
    }
    std::vector<py::object> result;
    for (const runtime::ProgramValue& o : out) result.push_back(to_python(o));
    return result;
  }

  const driver::ProgramExecutor& executor() const { return *executor_; }
  const std::vector<runtime::BufferSpec>& inputs() const { return inputs_; }

 private:
  std::shared_ptr<driver::ProgramExecutor> executor_;
  std::vector<runtime::BufferSpec> inputs_;  // their names, for ordered_inputs
};

}  // namespace

py::object program_library(std::shared_ptr<const relay_ir::Program> program, const std::string& target,
                           const driver::BuildOptions& options) {
  auto executor = std::make_shared<driver::ProgramExecutor>(*program, targets::Target::parse(target), options);
  return py::cast(ProgramLibrary(std::move(executor)));
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
           "Runs the model: run([x, ...]) or run({name: x}); the outputs as numpy arrays. A sequence is a list of "
           "arrays, an empty optional None, in the inputs and the outputs.")
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
          "[(stage, [signature, ...])]: each stage built so far and the input signatures of the builds it keeps (the "
          "64 most recently used).");
}

}  // namespace tessera::python

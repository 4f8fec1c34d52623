// The graph level in Python: modules (from ONNX or text), build(), and running a compiled graph.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "autotune/database.h"
#include "driver/build.h"
#include "frontend/onnx/importer.h"
#include "python/src/bindings.h"
#include "python/src/library.h"
#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/gradient.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"
#include "runtime/module_loader.h"

namespace tessera::python {

using runtime::NDArray;

namespace {

// name, shape and dtype of the plan's tensors `ids`.
std::vector<py::dict> describe(const runtime::GraphPlan& plan, const std::vector<int>& ids) {
  std::vector<py::dict> out;
  for (int id : ids) {
    const auto& t = plan.tensors.at(id);
    py::list shape;  // a plan of symbolic sizes shows its dimensions as declared ("N")
    for (size_t d = 0; d < t.shape.size(); ++d)
      shape.append(plan.is_symbolic() ? dimension_object(plan.symbolic_shapes.at(id)[d]) : py::int_(t.shape[d]));
    out.push_back(
        py::dict(py::arg("name") = t.name, py::arg("shape") = py::tuple(shape), py::arg("dtype") = t.dtype.str()));
  }
  return out;
}

}  // namespace

void bind_graph(py::module_& m) {
  static py::exception<frontend::onnx::BindingRequired> binding_required(m, "BindingRequired", m.attr("Error"));
  binding_required.attr("__doc__") =
      "Raised by tessera.onnx.load when inputs that set shapes or indices must be bound to values; its `inputs` "
      "names them (pass bind={name: value}).";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const frontend::onnx::BindingRequired& e) {
      py::object exc = py::reinterpret_borrow<py::object>(binding_required.ptr())(e.what());
      exc.attr("inputs") = py::cast(e.inputs);
      PyErr_SetObject(binding_required.ptr(), exc.ptr());
    }
  });

  py::class_<relay_ir::Module>(
      m, "Module",
      "A graph-IR module (from tessera.onnx.load, tessera.relay.function or tessera.relay.parse); "
      "str() prints its text form, which tessera.relay.parse reads back.")
      .def_property_readonly(
          "input_names",
          [](const relay_ir::Module& mod) {
            std::vector<std::string> names;
            for (const auto& p : mod.main()->params) names.push_back(p->name);
            return names;
          },
          "The names of the main function's parameters, in order.")
      .def_property_readonly(
          "input_types",
          [](const relay_ir::Module& mod) {
            std::vector<std::string> types;
            for (const auto& p : mod.main()->params) types.push_back(relay_ir::to_string(p->type_annotation));
            return types;
          },
          "The parameters' types as text, e.g. \"Tensor[(1, 3, 224, 224), float32]\".")
      .def_property_readonly(
          "output_type",
          [](const relay_ir::Module& mod) {
            return relay_ir::to_string(relay_ir::infer_type(relay_ir::Expr(mod.main()->body)));
          },
          "The main function's result type as text (a tuple type for several outputs).")
      .def("__str__", [](const relay_ir::Module& mod) { return relay_ir::to_text(mod); })
      .def(
          "text",
          [](const relay_ir::Module& mod, bool show_types, int64_t max_constant_elements) {
            relay_ir::PrintOptions o;
            o.show_types = show_types;
            o.max_constant_elements = max_constant_elements;
            return relay_ir::to_text(mod, o);
          },
          py::arg("show_types") = false, py::arg("max_constant_elements") = 16,
          "The text form, with each value's type when `show_types`, and constants of more than "
          "`max_constant_elements` elements abbreviated.")
      .def(
          "structurally_equal",
          [](const relay_ir::Module& a, const relay_ir::Module& b) { return relay_ir::structural_equal(a, b); },
          py::arg("other"), "Whether both modules compute the same graph (variable names aside).");
  m.def(
      "relay_parse", [](const std::string& text) { return relay_ir::parse_module(text); }, py::arg("text"),
      "A module from its text form (backs tessera.relay.parse).");
  m.def(
      "relay_gradient",
      [](const relay_ir::Module& mod, const std::vector<std::string>& wrt, bool cotangents) {
        return relay_ir::gradient(mod, wrt, cotangents);
      },
      py::arg("module"), py::arg("wrt"), py::arg("cotangents") = false,
      "The reverse-mode gradient module of `module` with respect to the parameters `wrt` (backs "
      "tessera.relay.gradient).");

  m.def("onnx_supported_operators", &frontend::onnx::supported_operators,
        "The ONNX operator types the importer translates, sorted.");

  py::class_<Library>(m, "Library",
                      "A compiled model, from tessera.build or tessera.load: run() computes its outputs, export() "
                      "writes it as a shared library. Raises tessera.Error naming a missing or mismatched input.")
      .def("run", &Library::run, py::arg("inputs"),
           "Runs the model: run([x, ...]) in input order, or run({name: x}). An input may be a numpy array, a "
           "tessera.nd array or any array with __dlpack__ (a PyTorch tensor, ...), in CPU memory or on the device "
           "the model was built for; it must have the input's shape and dtype exactly (errors name the input, its "
           "position, the expected and the given). Compact arrays 64-byte aligned are used in place; others "
           "(strided, transposed, broadcast, unaligned, or on the CPU for a device's model) are copied once. Returns "
           "the outputs as new numpy arrays, or as tessera.nd arrays on the device when every input was there.")
      .def("profile", &Library::profile, py::arg("inputs"), py::arg("repeat") = 10,
           "Per-step (kernel, median ms), slowest first.")
      .def(
          "export", [](const Library& l, py::object path) { l.export_to(py::str(path)); }, py::arg("path"),
          "Writes the model as one file (kernels, plan, weights) that tessera.load() and the C runtime "
          "(tessera_runtime.h) load without the compiler: a shared library for a CPU target; for opencl and cuda, "
          "the device code (OpenCL C, PTX) and no host code.")
      .def(
          "served_by",
          [](const Library& l, const py::object& shapes) {
            std::vector<runtime::BufferSpec> inputs(l.plan().inputs.size());
            for (size_t i = 0; i < inputs.size(); ++i) inputs[i].name = l.plan().tensors.at(l.plan().inputs[i]).name;
            std::vector<std::vector<int64_t>> given;
            for (const py::object& shape : ordered_inputs(shapes, inputs))
              given.push_back(shape.cast<std::vector<int64_t>>());
            return l.served_by(given);
          },
          py::arg("shapes"),
          "Which plan runs inputs of `shapes` ({name: shape} or a list in input order): \"specialized for N = 1, "
          "L = 128\" (a module exported with hot sizes), \"the build for every size\" or \"the build of its one "
          "size\". Raises tessera.Error when the shapes do not fit the model's inputs.")
      .def_property_readonly("specialized", &Library::hot_sizes,
                             "The sizes a loaded module holds static plans for, each as {dimension: value} "
                             "(exported from tessera.build(..., specialize=[...])); they serve those sizes.")
      .def_property_readonly("target", &Library::target, "The target string it was compiled for, in canonical form.")
      .def_property_readonly("device", &Library::device,
                             "The device its kernels run on and its outputs live on (the CPU for a CPU target).")
      .def_property_readonly(
          "input_names",
          [](const Library& l) {
            std::vector<std::string> names;
            for (int id : l.plan().inputs) names.push_back(l.plan().tensors.at(id).name);
            return names;
          },
          "The names of the inputs, in the order run() takes them.")
      .def_property_readonly(
          "inputs", [](const Library& l) { return describe(l.plan(), l.plan().inputs); },
          "[{name, shape, dtype}] of the inputs")
      .def_property_readonly(
          "outputs", [](const Library& l) { return describe(l.plan(), l.plan().outputs); },
          "[{name, shape, dtype}] of the outputs")
      .def_property_readonly(
          "kernels",
          [](const Library& l) {
            std::vector<py::dict> out;
            for (const auto& k : l.built("kernels").kernels)
              out.push_back(py::dict(py::arg("name") = k.name, py::arg("op") = k.op, py::arg("signature") = k.signature,
                                     py::arg("calls") = k.calls, py::arg("lowered") = k.lowered,
                                     py::arg("workload") = k.workload, py::arg("schedule") = k.schedule));
            return out;
          },
          "Per kernel a dict: name, op, signature, calls, lowered (tensor IR text), workload (key) and schedule "
          "(where it came from: default, a tuning record, ...). Only for a model built in this process.")
      .def_property_readonly(
          "num_steps", [](const Library& l) { return l.plan().steps.size(); },
          "The number of steps (kernel calls and copies) of the execution plan.")
      .def_property_readonly(
          "arena_bytes", [](const Library& l) { return l.plan().arena_bytes; },
          "The bytes of the memory arena holding the intermediate tensors.");

  m.def("default_db_path", &autotune::TuningDatabase::default_path,
        "The default tuning database: $TESSERA_DB, else ~/.cache/tessera/tuning.db.");
  m.def(
      "build_module",
      [](const relay_ir::Module& mod, const std::string& target, const driver::BuildOptions& options) {
        auto t = targets::Target::parse(target);
        py::gil_scoped_release release;
        return Library(driver::build(mod, t, options));
      },
      py::arg("module"), py::arg("target"), py::arg("options"),
      "Compiles a graph module for `target` with `options` (a BuildOptions) (backs tessera.build).");
  m.def(
      "load_module",
      [](const std::string& path, const py::object& device) {
        std::optional<runtime::Device> on;
        if (!device.is_none()) on = to_device(device);
        runtime::LoadedModule loaded;
        {
          py::gil_scoped_release release;
          loaded = runtime::load_module(path, on);
        }
        if (loaded.program) return loaded_program_library(std::move(loaded));
        return py::cast(Library(std::move(loaded)));
      },
      py::arg("path"), py::arg("device") = py::none(),
      "Loads an exported module with the runtime alone, on `device` (backs tessera.load).");
}

}  // namespace tessera::python

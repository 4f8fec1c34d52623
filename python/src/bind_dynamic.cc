// Models with symbolic input dimensions in Python: tessera.onnx.load gives a DynamicModule for
// them, tessera.build a DynamicLibrary, which builds the model for each new size it is run at
// (driver/shape_specialized_build.h) and runs that build.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "driver/evaluate.h"
#include "driver/shape_specialized_build.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/program.h"
#include "python/src/bindings.h"
#include "python/src/library.h"
#include "runtime/error.h"

namespace tessera::python {

namespace {

// An ONNX model with its import options, whose inputs have symbolic dimensions, or which needs a
// program (control flow decided at run time, data-dependent shapes).
struct DynamicModule {
  std::string path;
  frontend::onnx::ImportOptions options;
  std::vector<runtime::BufferSpec> inputs;
  std::shared_ptr<const relay_ir::Program> program;  // null: one static graph at each size

  // The module at concrete shapes (input name -> shape).
  relay_ir::Module at(const std::map<std::string, std::vector<int64_t>>& shapes) const {
    if (program)
      fail(
          "specialize: the model has control flow or data-dependent shapes, so no one graph computes it; "
          "tessera.build(module) runs it as a program");
    frontend::onnx::ImportOptions o = options;
    for (const auto& [name, shape] : shapes) o.shapes[name] = shape;
    return frontend::onnx::import_model(path, o);
  }

  // The module with its symbolic dimensions kept as variables: one graph for every size.
  relay_ir::Module symbolic() const {
    if (program) fail("symbolic: the model has control flow or data-dependent shapes; it runs as a program");
    frontend::onnx::ImportOptions o = options;
    o.symbolic = true;
    return frontend::onnx::import_model(path, o);
  }
};

// [{name, shape, dtype}] with a symbolic dimension as its name ("N") or expression.
std::vector<py::dict> describe(const std::vector<runtime::BufferSpec>& inputs) {
  std::vector<py::dict> out;
  for (const runtime::BufferSpec& in : inputs) {
    py::list shape;
    for (const runtime::ShapeExpr& d : in.shape) shape.append(dimension_object(d));
    out.push_back(
        py::dict(py::arg("name") = in.name, py::arg("shape") = py::tuple(shape), py::arg("dtype") = in.dtype.str()));
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<runtime::BufferSpec>& inputs) {
  std::vector<std::string> names;
  for (const runtime::BufferSpec& in : inputs) names.push_back(in.name);
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

class DynamicLibrary {
 public:
  explicit DynamicLibrary(std::shared_ptr<driver::ShapeSpecializedBuild> build) : build_(std::move(build)) {}

  std::vector<py::object> run(py::object inputs) { return library_for(shapes_of(inputs)).run(inputs); }
  std::vector<std::pair<std::string, double>> profile(py::object inputs, int repeat) {
    return library_for(shapes_of(inputs)).profile(inputs, repeat);
  }
  // The build at `shapes` ({name: shape} or shapes in input order) as a Library of its own.
  Library specialize(py::object shapes) {
    const std::vector<std::vector<int64_t>> given = shapes_given(shapes);
    std::shared_ptr<const driver::BuildResult> built;
    {
      py::gil_scoped_release release;
      built = build_->specialized(given);
    }
    return Library(built);  // a copy sharing the build and its executor
  }
  std::string served_by(py::object shapes) const { return build_->served_by(shapes_given(shapes)); }
  const driver::ShapeSpecializedBuild& build() const { return *build_; }
  // The build for every size (built now if no run has) with the hot sizes' builds, as one module.
  void export_to(const std::string& path) {
    py::gil_scoped_release release;
    if (!build_->symbolic_now())
      fail("export: the model is built per size (", build_->symbolic_reason(),
           "); export the build of one size: lib.specialize({name: shape}).export(path)");
    driver::export_module(*build_, path);
  }

 private:
  size_t input_index(const std::string& name) const {
    const auto& inputs = build_->inputs();
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].name == name) return i;
    fail("the model has no input '", name, "' (its inputs are: ", join(names_of(inputs)), ")");
  }

  // Shapes given as {name: shape} or a list in input order, in input order.
  std::vector<std::vector<int64_t>> shapes_given(const py::object& shapes) const {
    if (!py::isinstance<py::dict>(shapes)) return shapes.cast<std::vector<std::vector<int64_t>>>();
    std::vector<std::vector<int64_t>> given(build_->inputs().size());
    std::vector<bool> seen(given.size());
    for (auto item : py::reinterpret_borrow<py::dict>(shapes)) {
      const size_t i = input_index(py::str(item.first));
      given[i] = item.second.cast<std::vector<int64_t>>();
      seen[i] = true;
    }
    for (size_t i = 0; i < given.size(); ++i)
      if (!seen[i] && !build_->inputs()[i].shape.empty())
        fail("no shape given for input '", build_->inputs()[i].name, "'");
    return given;
  }

  // The shapes of run()'s inputs (a list in order or a dict by name), in input order; Library::run
  // then checks the rest (dtype, device) against the build for these shapes.
  std::vector<std::vector<int64_t>> shapes_of(const py::object& inputs) const {
    const std::vector<py::object> given = ordered_inputs(inputs, build_->inputs());
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < given.size(); ++i) {
      if (!py::hasattr(given[i], "shape"))
        throw py::type_error("input '" + build_->inputs()[i].name + "' (#" + std::to_string(i) +
                             "): expected an array, got " + std::string(py::str(py::type::handle_of(given[i]))));
      shapes.push_back(given[i].attr("shape").cast<std::vector<int64_t>>());
    }
    return shapes;
  }

  // A Library of the build for `shapes`: a handle, made for each call, so that a build the
  // ShapeSpecializedBuild drops is freed once no call runs it.
  Library library_for(const std::vector<std::vector<int64_t>>& shapes) {
    std::shared_ptr<const driver::BuildResult> built;
    {
      py::gil_scoped_release release;
      built = build_->get(shapes);
    }
    return Library(built);
  }

  std::shared_ptr<driver::ShapeSpecializedBuild> build_;
};

}  // namespace

std::vector<py::object> ordered_inputs(const py::object& inputs, const std::vector<runtime::BufferSpec>& specs) {
  const size_t n = specs.size();
  auto index_of = [&](const std::string& name) {
    for (size_t i = 0; i < n; ++i)
      if (specs[i].name == name) return i;
    fail("the model has no input '", name, "' (its inputs are: ", join(names_of(specs)), ")");
  };
  std::vector<py::object> given(n);
  if (py::isinstance<py::dict>(inputs)) {
    for (auto item : py::reinterpret_borrow<py::dict>(inputs))
      given[index_of(py::str(item.first))] = py::reinterpret_borrow<py::object>(item.second);
  } else if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
    auto list = py::reinterpret_borrow<py::sequence>(inputs);
    if (list.size() != n)
      fail("the model takes ", n, " inputs, got ", list.size(), " (its inputs are: ", join(names_of(specs)), ")");
    for (size_t i = 0; i < n; ++i) given[i] = list[i];
  } else {
    throw py::type_error(std::string("run: expected a list of inputs or a dict {name: input}, got ") +
                         Py_TYPE(inputs.ptr())->tp_name);
  }
  for (size_t i = 0; i < n; ++i)
    if (!given[i])
      fail("input '", specs[i].name, "' (#", i, ") is not given (the model's inputs are: ", join(names_of(specs)), ")");
  return given;
}

py::object dimension_object(const runtime::ShapeExpr& dim) {
  return dim.is_constant() ? py::object(py::int_(dim.constant())) : py::object(py::str(dim.str()));
}

void bind_dynamic(py::module_& m) {
  py::class_<DynamicModule>(
      m, "DynamicModule",
      "An ONNX model whose inputs have symbolic dimensions (an exported dynamic batch or sequence length), from "
      "tessera.onnx.load without shapes= for them. tessera.build() makes a DynamicLibrary of it; specialize() "
      "imports it at fixed shapes.")
      .def_property_readonly(
          "input_names", [](const DynamicModule& d) { return names_of(d.inputs); }, "The inputs' names, in order.")
      .def_property_readonly(
          "inputs", [](const DynamicModule& d) { return describe(d.inputs); },
          "[{name, shape, dtype}] of the inputs, a symbolic dimension as its name (\"N\").")
      .def(
          "specialize",
          [](const DynamicModule& d, const std::map<std::string, std::vector<int64_t>>& shapes) {
            py::gil_scoped_release release;
            return d.at(shapes);
          },
          py::arg("shapes"),
          "The graph module at the given shapes ({name: shape}), as tessera.onnx.load(shapes=) gives.")
      .def(
          "symbolic",
          [](const DynamicModule& d) {
            py::gil_scoped_release release;
            return d.symbolic();
          },
          "The graph module with the symbolic dimensions kept as variables (types such as float32[N, 1000]); "
          "raises tessera.Error naming the first operator that needs a dimension as a constant.")
      .def("__str__",
           [](const DynamicModule& d) {
             return d.program ? runtime::to_text(*d.program->plan) : py::repr(py::cast(d)).cast<std::string>();
           })
      .def("__repr__", [](const DynamicModule& d) {
        std::string s = "DynamicModule(" + d.path;
        for (const auto& in : d.inputs) s += ", " + in.name + ": " + runtime::symbolic_shape_str(in.shape);
        return s + ")";
      });

  py::class_<DynamicLibrary>(
      m, "DynamicLibrary",
      "A model with symbolic input dimensions, compiled (tessera.build of a DynamicModule): run() takes inputs of any "
      "size that fits the declared shapes and the model's relations. The first run builds the model once for every "
      "size (symbolic: its kernels take the sizes as arguments, tiles chosen for the first run's sizes). Where the "
      "model needs a dimension as a constant (symbolic_reason names the operator), the first run at a new size "
      "builds the model for that size instead (as tessera.build does for a fixed one: the same static code) and "
      "keeps it; later runs at that size run it directly (the builds share the weights; the 32 most recently used "
      "sizes are kept). Sizes given to tessera.build(specialize=[{dimension: value}, ...]) are built then, as "
      "static models, and run their calls whichever way the others are built (served_by says which build runs a "
      "size). specialize() gives the build of one size as a Library (to export it).")
      .def("run", &DynamicLibrary::run, py::arg("inputs"),
           "Runs the model at the inputs' size: run([x, ...]) or run({name: x}), as Library.run.")
      .def("profile", &DynamicLibrary::profile, py::arg("inputs"), py::arg("repeat") = 10,
           "Per-step (kernel, median ms) of the build at the inputs' size, slowest first.")
      .def("specialize", &DynamicLibrary::specialize, py::arg("shapes"),
           "The Library built for inputs of `shapes` ({name: shape} or a list in input order), built now if it "
           "was not.")
      .def("served_by", &DynamicLibrary::served_by, py::arg("shapes"),
           "Which build runs inputs of `shapes` ({name: shape} or a list in input order), without building: "
           "\"specialized for N = 1, L = 128\", \"the build for every size\", \"built for N = 2, L = 7 on its "
           "first run\" or \"not built yet: ...\".")
      .def_property_readonly(
          "specialized", [](const DynamicLibrary& l) { return l.build().hot_sizes(); },
          "The sizes built as static models by tessera.build(specialize=...), each as {dimension: value}.")
      .def(
          "export", [](DynamicLibrary& l, const py::object& path) { l.export_to(py::str(path)); }, py::arg("path"),
          "Writes the build for every size as one shared library that runs at any size (tessera.load, the C API "
          "with shapes given with the data): the first run's build, or, before any, one built now with its tiles "
          "chosen at the size_hints given to tessera.build (else a default); with the builds of the sizes given "
          "to tessera.build(specialize=...), which serve the calls of those sizes there too. Raises tessera.Error "
          "when the model is built per size (symbolic_reason says why). specialize() gives one size's build.")
      .def_property_readonly(
          "target", [](const DynamicLibrary& l) { return l.build().target().str(); }, "The target string.")
      .def_property_readonly(
          "input_names", [](const DynamicLibrary& l) { return names_of(l.build().inputs()); },
          "The names of the inputs, in the order run() takes them.")
      .def_property_readonly(
          "inputs", [](const DynamicLibrary& l) { return describe(l.build().inputs()); },
          "[{name, shape, dtype}] of the inputs, a symbolic dimension as its name.")
      .def_property_readonly(
          "built", [](const DynamicLibrary& l) { return l.build().built(); },
          "The sizes built one by one so far (none when one build serves every size), each as {dimension: "
          "value}, in the order they were built.")
      .def_property_readonly(
          "symbolic", [](const DynamicLibrary& l) { return l.build().symbolic() != nullptr; },
          "Whether one build, made on the first run, serves every size (its kernels take the sizes as "
          "arguments); else each size is built on its first run, and symbolic_reason says why.")
      .def_property_readonly(
          "symbolic_reason", [](const DynamicLibrary& l) { return l.build().symbolic_reason(); },
          "Why the model is built per size (the operator that needs a dimension as a constant); \"\" before "
          "the first run or when one build serves every size.")
      .def_property_readonly(
          "kernels",
          [](const DynamicLibrary& l) -> py::object {
            auto s = l.build().symbolic();
            return s ? py::cast(Library(s)).attr("kernels") : py::object(py::none());
          },
          "The kernels of the build for every size (as Library.kernels), or None when there is none.");

  m.def(
      "onnx_load",
      [](const std::string& path, std::map<std::string, std::vector<int64_t>> shapes, py::dict bind,
         std::vector<std::string> trainable) -> py::object {
        frontend::onnx::ImportOptions options;
        options.shapes = std::move(shapes);
        options.initializers_as_inputs = std::move(trainable);
        for (auto item : bind) {
          std::string name = item.first.cast<std::string>();
          NDArray view = to_ndarray(item.second, "bind '" + name + "'");
          NDArray copy = NDArray::empty(view.shape(), view.dtype());  // constants own their data
          if (view.nbytes()) std::memcpy(copy.data(), view.data(), view.nbytes());
          options.bind[name] = copy;
        }
        options.evaluate = [](const relay_ir::Expr& e) { return driver::evaluate(e); };
        std::vector<runtime::BufferSpec> inputs;
        std::shared_ptr<const relay_ir::Program> program;
        std::optional<relay_ir::Module> module;
        {
          py::gil_scoped_release release;
          inputs = frontend::onnx::model_inputs(path, options);
          program = frontend::onnx::import_program(path, options);
          if (!program &&
              std::all_of(inputs.begin(), inputs.end(), [](const auto& in) { return runtime::is_static(in.shape); })) {
            try {
              module = frontend::onnx::import_model(path, options);
            } catch (const frontend::onnx::BindingRequired&) {
              program = frontend::onnx::import_program(path, options, true);  // specialized on their values
            }
          }
        }
        if (module) return py::cast(std::move(*module));
        return py::cast(DynamicModule{path, std::move(options), std::move(inputs), std::move(program)});
      },
      py::arg("path"), py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{}, py::arg("bind") = py::dict(),
      py::arg("trainable") = std::vector<std::string>{},
      "Imports an ONNX model (backs tessera.onnx.load): a Module, or a DynamicModule when inputs keep symbolic "
      "dimensions.");
  m.def(
      "build_module",
      [](const DynamicModule& mod, const std::string& target, const driver::BuildOptions& options,
         const std::vector<std::map<std::string, int64_t>>& hot_sizes) -> py::object {
        if (mod.program) {
          if (!hot_sizes.empty())
            fail(
                "specialize=: the model runs as a program (control flow or data-dependent shapes), whose stages "
                "are built for every size or at the shapes they meet");
          return program_library(mod.program, target, options);
        }
        auto specialize = [mod](const std::map<std::string, std::vector<int64_t>>& shapes) { return mod.at(shapes); };
        auto symbolic = [mod] { return mod.symbolic(); };
        auto build = std::make_shared<driver::ShapeSpecializedBuild>(mod.inputs, specialize,
                                                                     targets::Target::parse(target), options, symbolic);
        {
          py::gil_scoped_release release;
          build->specialize_sizes(hot_sizes);
        }
        return py::cast(DynamicLibrary(build));
      },
      py::arg("module"), py::arg("target"), py::arg("options"),
      py::arg("specialize") = std::vector<std::map<std::string, int64_t>>{},
      "A DynamicLibrary of a model with symbolic input dimensions (backs tessera.build), which builds on first run "
      "at each size; a ProgramLibrary of a model with control flow or data-dependent shapes.");
}

}  // namespace tessera::python

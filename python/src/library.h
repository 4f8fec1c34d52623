// The Python face of a compiled graph (tessera.Library): run, profile, export, and what was built.
#pragma once
#include <pybind11/pybind11.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/build.h"
#include "driver/export.h"
#include "python/src/bindings.h"
#include "runtime/error.h"
#include "runtime/module_loader.h"

namespace tessera::python {

using runtime::NDArray;

// A compiled model, built in this process or loaded from an exported file: run([x]) or
// run({"x": x}) returns the outputs as new numpy arrays.
class Library {
 public:
  explicit Library(driver::BuildResult r) : Library(std::make_shared<const driver::BuildResult>(std::move(r))) {}
  explicit Library(std::shared_ptr<const driver::BuildResult> r)
      : built_(std::move(r)), executor_(built_->executor), target_(built_->target.str()) {}
  explicit Library(runtime::LoadedModule m) : executor_(std::move(m.executor)), target_(std::move(m.target)) {}

  // Outputs as numpy arrays, or, when the inputs were given on the graph's device, as arrays there.
  std::vector<py::object> run(py::object inputs) {
    auto& ex = executor();
    const std::unique_lock<std::mutex> lock = exclusive(ex);
    const bool on_device = set_inputs(ex, inputs) && ex.device().type != runtime::DeviceType::CPU;
    {
      py::gil_scoped_release release;
      ex.run();
    }
    std::vector<py::object> out;
    for (size_t i = 0; i < ex.num_outputs(); ++i) {
      const NDArray& o = ex.output(i);
      if (on_device) out.push_back(py::cast(o.copy_to(o.device())));
      else if (o.device().type == runtime::DeviceType::CPU) out.push_back(numpy_owning(ex.take_output(i)));
      else out.push_back(to_numpy(o.copy_to(runtime::Device::cpu())));
    }
    return out;
  }

  // Per step, the kernel and its median time over `repeat` runs (ms), slowest first.
  std::vector<std::pair<std::string, double>> profile(py::object inputs, int repeat) {
    auto& ex = executor();
    const std::unique_lock<std::mutex> lock = exclusive(ex);
    set_inputs(ex, inputs);
    std::vector<std::vector<double>> runs;
    {
      py::gil_scoped_release release;
      for (int r = 0; r < std::max(repeat, 1); ++r) runs.push_back(ex.run_profiled());
    }
    std::vector<std::pair<std::string, double>> out;
    for (size_t s = 0; s < runs[0].size(); ++s) {
      std::vector<double> t;
      for (const auto& run : runs) t.push_back(run[s]);
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      const auto& kernel = ex.plan_run().steps[s].kernel;
      out.emplace_back(kernel.empty() ? "copy" : kernel, t[t.size() / 2]);
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
  }

  void export_to(const std::string& path) const {
    if (!built_) fail("export: this module was loaded from a file; copy that file instead");
    py::gil_scoped_release release;
    driver::export_module(*built_, path);
  }

  // The build in this process; throws for a loaded module, which has machine code only.
  const driver::BuildResult& built(const char* what) const {
    if (!built_) fail(what, ": only for modules built in this process (this one was loaded from a file)");
    return *built_;
  }
  const runtime::GraphPlan& plan() const { return built_ ? built_->plan : executor_->plan(); }
  // The sizes a loaded module holds plans of its own for (runtime::GraphExecutor::specialize).
  std::vector<std::map<std::string, int64_t>> hot_sizes() const {
    return executor_ ? executor_->hot_sizes() : std::vector<std::map<std::string, int64_t>>{};
  }
  // Which plan runs inputs of `shapes` (in input order): "specialized for N = 1, L = 128", "the
  // build for every size" or "the build of its one size"; throws naming an input they do not fit.
  std::string served_by(const std::vector<std::vector<int64_t>>& shapes) const {
    const runtime::GraphPlan& p = plan();
    if (shapes.size() != p.inputs.size())
      fail("the model takes ", p.inputs.size(), " inputs, got ", shapes.size(), " shapes");
    std::vector<runtime::SymbolicShape> expected;
    std::vector<std::string> names;
    for (int id : p.inputs) {
      expected.push_back(p.is_symbolic() ? p.symbolic_shapes.at(id) : runtime::symbolic_shape(p.tensors.at(id).shape));
      names.push_back("'" + p.tensors.at(id).name + "'");
    }
    runtime::bind_shape_vars(expected, shapes, names, "input");
    if (!p.is_symbolic()) return "the build of its one size";
    const std::string hot = executor_ ? executor_->specialized_sizes(shapes) : "";
    return hot.empty() ? "the build for every size" : "specialized for " + hot;
  }
  const std::string& target() const { return target_; }
  runtime::Device device() const {
    return executor_ ? executor_->device() : runtime::Device{built_->target.device_type(), 0};
  }

 private:
  runtime::GraphExecutor& executor() {
    if (!executor_)
      fail("this module was built without JIT compilation (target '", target_,
           "'); export it and run it where it runs");
    return *executor_;
  }

  // The executor holds a run's inputs and outputs (and a build for every size its sizes), and runs
  // without the GIL: one call at a time, from setting the inputs to reading the outputs. The wait
  // releases the GIL, so a call holding the lock can take it back.
  static std::unique_lock<std::mutex> exclusive(runtime::GraphExecutor& ex) {
    py::gil_scoped_release release;
    return std::unique_lock<std::mutex>(ex.call_mutex());
  }

  // Checks the inputs (a list in order, or a dict by name) against the model's and sets them;
  // errors name the input by name and position, and say what was expected and what was given.
  // Returns whether every input was given on the executor's device.
  static bool set_inputs(runtime::GraphExecutor& ex, const py::object& inputs) {
    const size_t n = ex.num_inputs();
    // For error messages only: run() is called in loops.
    auto names = [&] {
      std::string s;
      for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + ex.input_info(i).name;
      return s;
    };
    std::vector<py::object> given(n);
    bool all_on_device = true;
    if (py::isinstance<py::dict>(inputs)) {
      for (auto item : py::reinterpret_borrow<py::dict>(inputs))
        given[ex.input_index(py::str(item.first))] = py::reinterpret_borrow<py::object>(item.second);
    } else if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
      auto list = py::reinterpret_borrow<py::sequence>(inputs);
      if (list.size() != n)
        fail("the model takes ", n, " inputs, got ", list.size(), " (its inputs are: ", names(), ")");
      for (size_t i = 0; i < n; ++i) given[i] = list[i];
    } else {
      throw py::type_error(std::string("run: expected a list of inputs or a dict {name: input}, got ") +
                           Py_TYPE(inputs.ptr())->tp_name);
    }
    for (size_t i = 0; i < n; ++i) {
      const auto& info = ex.input_info(i);
      std::string what = "input '" + info.name + "' (#" + std::to_string(i) + ")";
      if (!given[i]) fail(what, " is not given (the model's inputs are: ", names(), ")");
      NDArray value = to_ndarray(given[i], what);
      if (!ex.plan().is_symbolic())  // a symbolic plan's executor checks the sizes of all inputs together
        check_array(what, info.shape, info.dtype, value.shape(), value.dtype().str());
      ex.set_input(i, value);
      all_on_device &= value.device() == ex.device();
    }
    return n > 0 && all_on_device;
  }

  std::shared_ptr<const driver::BuildResult> built_;  // null for a loaded module
  std::shared_ptr<runtime::GraphExecutor> executor_;  // null when built without JIT
  std::string target_;
};

}  // namespace tessera::python

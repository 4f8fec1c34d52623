// Tuning from Python: tasks of a model, a tuning session (driver::tune_model) with a progress
// callback (Ctrl-C stops it between batches; committed batches stay), and custom schedules.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "autotune/task.h"
#include "autotune/tuner.h"
#include "driver/build.h"
#include "driver/tune_model.h"
#include "python/src/bindings.h"
#include "schedule/custom.h"

namespace tessera::python {

namespace {

py::dict task_state(const autotune::TaskState& s) {
  py::list history;
  for (const auto& [trials, best] : s.history) history.append(py::make_tuple(trials, best));
  return py::dict(py::arg("description") = s.description, py::arg("workload") = s.workload,
                  py::arg("weight") = s.weight, py::arg("flops") = s.flops, py::arg("trials") = s.trials,
                  py::arg("default_seconds") = s.default_seconds, py::arg("best_seconds") = s.best_seconds,
                  py::arg("gflops") = s.gflops(), py::arg("history") = history, py::arg("measured") = s.measured);
}

py::dict model_check(const driver::ModelCheck& c) {
  py::list kernels;
  for (const auto& k : c.kernels)
    kernels.append(py::dict(py::arg("kernel") = k.kernel, py::arg("op") = k.op, py::arg("workload") = k.workload,
                            py::arg("record") = k.record, py::arg("default_seconds") = k.default_seconds,
                            py::arg("tuned_seconds") = k.tuned_seconds, py::arg("tuned_kept") = k.tuned_kept()));
  return py::dict(py::arg("kernels") = kernels, py::arg("default_seconds") = c.default_seconds,
                  py::arg("tuned_seconds") = c.tuned_seconds, py::arg("text") = driver::format_model_check(c));
}

}  // namespace

void bind_autotune(py::module_& m) {
  m.def(
      "autotune_tasks",
      [](const relay_ir::Module& mod, const std::string& target, int opt_level) {
        std::vector<autotune::Task> tasks;
        {
          py::gil_scoped_release release;
          schedule::HardwareParams hardware = targets::Target::parse(target).hardware();
          tasks = autotune::extract_tasks(driver::optimize(mod, hardware, opt_level), hardware);
        }
        py::list out;
        for (const auto& t : tasks)
          out.append(py::dict(py::arg("description") = t.workload.description, py::arg("workload") = t.workload.key,
                              py::arg("structure") = t.workload.structure_key, py::arg("weight") = t.weight,
                              py::arg("flops") = t.flops, py::arg("kernel") = t.kernel));
        return out;
      },
      py::arg("module"), py::arg("target"), py::arg("opt_level"),
      "The tuning tasks of `module` (backs tessera.autotune.tasks).");

  m.def(
      "autotune_tune",
      [](const relay_ir::Module& mod, const driver::TuneModelOptions& options, py::object progress) {
        // Called between batches with the GIL: passes the line on, and lets Ctrl-C (KeyboardInterrupt)
        // stop the session by raising through the tuner.
        auto on_progress = [&](const autotune::Progress& p) {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          if (!progress.is_none()) progress(autotune::progress_line(p));
        };
        driver::TuneReport r;
        {
          py::gil_scoped_release release;
          r = driver::tune_model(mod, options, on_progress);
        }
        py::list tasks;
        for (const auto& s : r.session.tasks) tasks.append(task_state(s));
        return py::dict(
            py::arg("tasks") = tasks, py::arg("estimated_latency") = r.session.estimated_latency,
            py::arg("default_latency") = r.session.default_latency, py::arg("wall_seconds") = r.session.wall_seconds,
            py::arg("report_path") = r.session.report_path, py::arg("latency_history") = r.session.latency_history,
            py::arg("peak_gflops") =
                r.session.peak ? py::object(py::float_(r.session.peak->gflops)) : py::object(py::none()),
            py::arg("model_check") = r.model_check ? py::object(model_check(*r.model_check)) : py::object(py::none()),
            py::arg("summary") = driver::format_tune_report(r));
      },
      py::arg("module"), py::arg("options"), py::arg("progress"),
      "A tuning session (driver::tune_model); `progress` is None or a callable taking each progress line (backs "
      "tessera.autotune.tune).");
  m.def("progress_text", &driver::progress_text, py::arg("line"), py::arg("columns"),
        "What to write to stderr after a batch: `line` redrawn in place on a terminal `columns` wide, or a line of its "
        "own where `columns` is 0 (as `tessera tune` writes it).");

  m.def(
      "register_custom_schedule",
      [](const std::string& key, py::function fn) {
        // Never freed: the registry outlives the interpreter, and dropping a Python object after
        // it has finalized would crash at exit.
        auto* held = new py::function(std::move(fn));
        schedule::register_custom_schedule(key, [held](schedule::Schedule& s, const tensor_ir::Tensor& out) {
          py::gil_scoped_acquire gil;  // builds run with the GIL released
          (*held)(py::cast(&s, py::return_value_policy::reference), out);
        });
      },
      py::arg("key"), py::arg("schedule_fn"),
      "Registers `schedule_fn(schedule, output)` for kernels of op name or workload key `key` (backs "
      "tessera.autotune.register_schedule).");
}

}  // namespace tessera::python

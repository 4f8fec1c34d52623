// The options of a build and of a tuning session as Python classes (tessera.BuildOptions,
// tessera.autotune.TuneOptions): keyword arguments whose defaults are the C++ structs' own (one
// source), checked on construction by the validation `tessera compile` and `tessera tune` run.
#include <pybind11/stl.h>

#include <optional>

#include "driver/build.h"
#include "driver/tune_model.h"
#include "python/src/bindings.h"
#include "runtime/error.h"

namespace tessera::python {

namespace {

using driver::BuildOptions;
using driver::TuneModelOptions;

// "Name(a=1, b='x')", every field by its Python name, so that a repr pasted back rebuilds it.
std::string repr_fields(const char* name, const py::object& self, const std::vector<const char*>& fields) {
  std::string out = std::string(name) + "(";
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? ", " : "") + std::string(fields[i]) + "=" + py::repr(self.attr(fields[i])).cast<std::string>();
  return out + ")";
}

// The C++ seed is unsigned: a negative Python int is refused by name rather than wrapped.
uint64_t seed_from(int64_t seed) {
  if (seed < 0) fail("tune: seed must be 0 or more (got ", seed, ")");
  return static_cast<uint64_t>(seed);
}

void bind_build_options(py::module_& m) {
  const BuildOptions d;
  py::class_<BuildOptions>(m, "BuildOptions",
                           "How tessera.build compiles a graph module: the graph optimization level, the tuning "
                           "database the kernels take their schedules from, JIT compilation and schedule transfer. "
                           "Keyword arguments only; the defaults are the C++ driver's.")
      .def(py::init(
               [](int opt_level, std::string db, bool jit, bool transfer, std::map<std::string, int64_t> size_hints) {
                 BuildOptions o;
                 o.opt_level = opt_level;
                 o.db_path = std::move(db);
                 o.jit = jit;
                 o.transfer = transfer;
                 o.size_hints = std::move(size_hints);
                 driver::validate(o);
                 return o;
               }),
           py::kw_only(), py::arg("opt_level") = d.opt_level, py::arg("db") = d.db_path, py::arg("jit") = d.jit,
           py::arg("transfer") = d.transfer, py::arg("size_hints") = d.size_hints,
           "Options for tessera.build; raises tessera.Error naming an invalid one (opt_level outside 0-3).")
      .def_readwrite("opt_level", &BuildOptions::opt_level,
                     "The graph passes: 0 none; 1 and 2 fold constants and batch norms, fuse; 3 (the default, the "
                     "fastest) also packed weight layouts and Winograd 3x3 convolutions.")
      .def_readwrite("db", &BuildOptions::db_path,
                     "The tuning database (a path) kernels take their schedules from; \"\": none, default schedules.")
      .def_readwrite("jit", &BuildOptions::jit,
                     "Compile the kernels to run in this process; False: lower and plan only, for export.")
      .def_readwrite("transfer", &BuildOptions::transfer,
                     "A kernel without records tries those of similar workloads, measured against its default.")
      .def_readwrite("size_hints", &BuildOptions::size_hints,
                     "For a module of symbolic sizes: {dimension: value}, the sizes its kernels' tiles are chosen "
                     "for (the code runs at any size); a dimension not given counts as 16.")
      .def("__repr__", [](const py::object& self) {
        return repr_fields("BuildOptions", self, {"opt_level", "db", "jit", "transfer", "size_hints"});
      });
}

void bind_tune_options(py::module_& m) {
  const TuneModelOptions d;
  py::class_<TuneModelOptions>(
      m, "TuneOptions",
      "A tuning session's options (what tessera.autotune.tune and `tessera tune` take): target, "
      "database, trials and search, measurement, graph level and the model check. Keyword "
      "arguments only; the defaults are the C++ tuner's.")
      .def(py::init([](std::string target, std::string db, int trials, int batch, std::string policy,
                       int early_stopping, std::optional<double> timeout, int opt_level, int64_t seed, int repeat,
                       bool flush_cache, bool fresh_inputs, bool model_check, std::string report) {
             TuneModelOptions o;
             o.tune.target = std::move(target);
             o.tune.db_path = std::move(db);
             o.tune.trials = trials;
             o.tune.batch = batch;
             o.tune.policy = std::move(policy);
             o.tune.early_stopping = early_stopping;
             o.tune.max_seconds = timeout;
             o.opt_level = opt_level;
             o.tune.seed = seed_from(seed);
             o.tune.measure.repeat = repeat;
             o.tune.measure.flush_cache = flush_cache;
             o.tune.measure.fresh_inputs = fresh_inputs;
             o.model_check = model_check;
             o.tune.report_path = std::move(report);
             driver::validate(o);
             return o;
           }),
           py::kw_only(), py::arg("target") = d.tune.target, py::arg("db") = d.tune.db_path,
           py::arg("trials") = d.tune.trials, py::arg("batch") = d.tune.batch, py::arg("policy") = d.tune.policy,
           py::arg("early_stopping") = d.tune.early_stopping, py::arg("timeout") = d.tune.max_seconds,
           py::arg("opt_level") = d.opt_level, py::arg("seed") = static_cast<int64_t>(d.tune.seed),
           py::arg("repeat") = d.tune.measure.repeat, py::arg("flush_cache") = d.tune.measure.flush_cache,
           py::arg("fresh_inputs") = d.tune.measure.fresh_inputs, py::arg("model_check") = d.model_check,
           py::arg("report") = d.tune.report_path,
           "Options for a tuning session; raises tessera.Error naming an invalid one (trials below 1, an unknown "
           "target or policy, a timeout not above 0, ...).")
      .def_property(
          "target", [](const TuneModelOptions& o) { return o.tune.target; },
          [](TuneModelOptions& o, std::string v) { o.tune.target = std::move(v); },
          "The target tuned for: \"llvm\" (this CPU) or \"llvm -mcpu=NAME ...\".")
      .def_property(
          "db", [](const TuneModelOptions& o) { return o.tune.db_path; },
          [](TuneModelOptions& o, std::string v) { o.tune.db_path = std::move(v); },
          "The tuning database (a path); \"\": $TESSERA_DB or ~/.cache/tessera/tuning.db.")
      .def_property(
          "trials", [](const TuneModelOptions& o) { return o.tune.trials; },
          [](TuneModelOptions& o, int v) { o.tune.trials = v; }, "Measurements in all, across the model's kernels.")
      .def_property(
          "batch", [](const TuneModelOptions& o) { return o.tune.batch; },
          [](TuneModelOptions& o, int v) { o.tune.batch = v; }, "Candidates measured per batch (one transaction each).")
      .def_property(
          "policy", [](const TuneModelOptions& o) { return o.tune.policy; },
          [](TuneModelOptions& o, std::string v) { o.tune.policy = std::move(v); },
          "The search policy: \"evolutionary\" (cost-model guided) or \"random\".")
      .def_property(
          "early_stopping", [](const TuneModelOptions& o) { return o.tune.early_stopping; },
          [](TuneModelOptions& o, int v) { o.tune.early_stopping = v; },
          "Stop a kernel after this many trials without improvement; 0: never.")
      .def_property(
          "timeout", [](const TuneModelOptions& o) { return o.tune.max_seconds; },
          [](TuneModelOptions& o, std::optional<double> v) { o.tune.max_seconds = v; },
          "The session's wall-clock limit in seconds; None: no limit.")
      .def_property(
          "opt_level", [](const TuneModelOptions& o) { return o.opt_level; },
          [](TuneModelOptions& o, int v) { o.opt_level = v; },
          "The graph passes run before the kernels are extracted, as tessera.build runs them (0-3).")
      .def_property(
          "seed", [](const TuneModelOptions& o) { return static_cast<int64_t>(o.tune.seed); },
          [](TuneModelOptions& o, int64_t v) { o.tune.seed = seed_from(v); }, "The search's random seed.")
      .def_property(
          "repeat", [](const TuneModelOptions& o) { return o.tune.measure.repeat; },
          [](TuneModelOptions& o, int v) { o.tune.measure.repeat = v; }, "Timed runs per candidate.")
      .def_property(
          "flush_cache", [](const TuneModelOptions& o) { return o.tune.measure.flush_cache; },
          [](TuneModelOptions& o, bool v) { o.tune.measure.flush_cache = v; },
          "Flush the caches before each timed run.")
      .def_property(
          "fresh_inputs", [](const TuneModelOptions& o) { return o.tune.measure.fresh_inputs; },
          [](TuneModelOptions& o, bool v) { o.tune.measure.fresh_inputs = v; },
          "Rewrite a kernel's inputs (not its weights) before each timed call, as the kernel before it does in a "
          "model.")
      .def_property(
          "model_check", [](const TuneModelOptions& o) { return o.model_check; },
          [](TuneModelOptions& o, bool v) { o.model_check = v; },
          "End by timing each tuned kernel inside the model against its default; builds keep the faster there.")
      .def_property(
          "report", [](const TuneModelOptions& o) { return o.tune.report_path; },
          [](TuneModelOptions& o, std::string v) { o.tune.report_path = std::move(v); },
          "The HTML report; \"\": NAME.report.html beside the database NAME.db.")
      .def("__repr__", [](const py::object& self) {
        return repr_fields("TuneOptions", self,
                           {"target", "db", "trials", "batch", "policy", "early_stopping", "timeout", "opt_level",
                            "seed", "repeat", "flush_cache", "fresh_inputs", "model_check", "report"});
      });
}

}  // namespace

void bind_options(py::module_& m) {
  bind_build_options(m);
  bind_tune_options(m);
}

}  // namespace tessera::python

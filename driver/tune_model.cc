#include "driver/tune_model.h"

#include <cstdio>

#include "autotune/database.h"
#include "autotune/task.h"

namespace tessera::driver {

namespace {

template <typename... Args>
void append(std::string& out, const char* format, Args... args) {
  int n = std::snprintf(nullptr, 0, format, args...);
  std::string part(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(part.data(), part.size(), format, args...);
  part.pop_back();
  out += part;
}

}  // namespace

void validate(const TuneModelOptions& options) {
  autotune::validate(options.tune);
  BuildOptions build;
  build.opt_level = options.opt_level;
  validate(build);
}

TuneReport tune_model(const relay_ir::Module& module, const TuneModelOptions& options,
                      const std::function<void(const autotune::Progress&)>& on_progress) {
  validate(options);
  autotune::TuneOptions tune = options.tune;
  // Resolved here because the model check opens the same database the session filled.
  if (tune.db_path.empty()) tune.db_path = autotune::TuningDatabase::default_path();
  targets::Target target = targets::Target::parse(tune.target);
  schedule::HardwareParams hardware = target.hardware();
  TuneReport report;
  auto tasks = autotune::extract_tasks(optimize(module, hardware, options.opt_level), hardware);
  report.session = autotune::tune(tasks, tune, on_progress);
  if (options.model_check) report.model_check = check_in_model(module, target, options.opt_level, tune.db_path);
  return report;
}

std::string format_tune_report(const TuneReport& report) {
  const autotune::TuneResult& r = report.session;
  std::string out;
  append(out, "%-40s %6s %7s %11s %11s %8s %9s\n", "task", "weight", "trials", "default ms", "best ms", "speedup",
         "GFLOP/s");
  for (const auto& s : r.tasks) {
    double best = s.best_seconds > 0 ? s.best_seconds : s.default_seconds;
    append(out, "%-40.40s %6d %7d %11.4f %11.4f %7.2fx %9.1f\n", s.description.c_str(), s.weight, s.trials,
           s.default_seconds * 1e3, best * 1e3, best > 0 ? s.default_seconds / best : 0.0, s.gflops());
  }
  append(out, "estimated latency %.3f ms (default schedules %.3f ms) after %.0f s\nreport: %s\n",
         r.estimated_latency * 1e3, r.default_latency * 1e3, r.wall_seconds, r.report_path.c_str());
  if (report.model_check) out += format_model_check(*report.model_check);
  return out;
}

std::string progress_text(const std::string& line, int columns) {
  if (columns <= 0) return line + "\n";
  return "\r" + line.substr(0, static_cast<size_t>(columns - 1)) + "\x1b[K";
}

}  // namespace tessera::driver

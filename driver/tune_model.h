// One tuning session of a whole model, as `tessera tune` and tessera.autotune.tune run it: the
// graph passes build() runs, task extraction, the search over every kernel (autotune::tune), then
// the model check (model_check.h). The command line and the Python binding parse their options,
// call tune_model, and print or return its report.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "autotune/tuner.h"
#include "driver/build.h"
#include "driver/model_check.h"
#include "relay_ir/module.h"

namespace tessera::driver {

struct TuneModelOptions {
  autotune::TuneOptions tune;                // target, database, trials, search and measurement
  int opt_level = BuildOptions{}.opt_level;  // the graph passes before tasks are extracted, as build() runs them
  // End by timing each tuned kernel inside the built model against its default schedule; builds
  // then use whichever ran faster there.
  bool model_check = true;
};

// Throws tessera::Error naming the first invalid option (autotune::validate's, and opt_level).
void validate(const TuneModelOptions& options);

struct TuneReport {
  autotune::TuneResult session;
  std::optional<ModelCheck> model_check;  // none when TuneModelOptions::model_check is off
};

// Validates `options`, then tunes every kernel of `module` (database empty: the default one).
// `on_progress` runs after every measured batch; it may throw to stop the session (what was
// committed stays, and a later session resumes from it).
TuneReport tune_model(const relay_ir::Module& module, const TuneModelOptions& options,
                      const std::function<void(const autotune::Progress&)>& on_progress = nullptr);

// What `tessera tune` prints and Python's TuneReport.summary holds: per task its weight, trials,
// default and best times, speedup and GFLOP/s; the estimated latency; the HTML report's path; the
// model check's table.
std::string format_tune_report(const TuneReport& report);

// What to write to stderr after a batch: its progress line (autotune::progress_line) redrawn in
// place on a terminal `columns` wide, cut to fit (a wrapped line could not be redrawn), or a line
// of its own where `columns` is 0 (not a terminal).
std::string progress_text(const std::string& line, int columns);

}  // namespace tessera::driver

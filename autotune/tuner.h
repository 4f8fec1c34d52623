// A tuning session: a first batch for every task, then trials spread over the tasks by
// expected end-to-end gain (Ansor's task scheduler), each task searched by a policy guided by
// the cost model, every batch measured in isolated workers and committed to the tuning database
// in one transaction. A session that is interrupted resumes from the database: what was
// measured is never measured again.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autotune/machine_peak.h"
#include "autotune/measure.h"
#include "autotune/task.h"

namespace tessera::autotune {

struct TuneOptions {
  std::string target = "llvm";
  std::string db_path;                  // empty: TuningDatabase::default_path()
  int trials = 1000;                    // measurements in all, across tasks
  int batch = 16;                       // candidates per measured batch
  std::string policy = "evolutionary";  // or "random"
  int early_stopping = 0;               // a task stops after this many trials without improvement (0: never)
  std::optional<double> max_seconds;    // wall-clock limit of the session in seconds (none: no limit)
  uint64_t seed = 0;
  MeasureOptions measure;
  std::string report_path;  // the HTML report; empty: default_report_path(db_path)
};

struct TaskState {
  std::string description;
  std::string workload;
  int weight = 1;
  double flops = 0;
  int trials = 0;                               // measured in this session and before (from the database)
  double default_seconds = 0;                   // the default schedule's median time
  double best_seconds = 0;                      // 0: nothing valid measured yet
  std::vector<std::pair<int, double>> history;  // (trials so far, best seconds) after each batch
  std::vector<double> measured;                 // each trial's median seconds, in order; 0: it failed
  bool stopped = false;
  double gflops() const { return best_seconds > 0 ? flops / best_seconds / 1e9 : 0; }
};

struct Progress {
  const std::vector<TaskState>* tasks;
  size_t current = 0;  // the task just measured
  int trials_done = 0, trials_total = 0;
  double estimated_latency = 0;  // seconds: sum over tasks of weight * best (default if untuned)
  double elapsed = 0;
};

struct TuneResult {
  std::vector<TaskState> tasks;
  double estimated_latency = 0, default_latency = 0, wall_seconds = 0;
  // (trials, estimated latency) from the start, where every task is at its default's time
  std::vector<std::pair<int, double>> latency_history;
  std::optional<MachinePeak> peak;  // where known
  std::string report_path;
};

// Throws tessera::Error naming the first invalid option (as `tessera tune` and Python spell it:
// trials, --early-stopping, ...) and what it must be, or a device target whose device this machine
// lacks (targets::device_of): the one check of the CLI and Python.
void validate(const TuneOptions& options);

// Tunes `tasks` (from extract_tasks) after validating `options`. `on_progress` runs after every
// batch (it may throw to stop the session, e.g. on Ctrl-C; what was committed stays).
TuneResult tune(const std::vector<Task>& tasks, const TuneOptions& options,
                const std::function<void(const Progress&)>& on_progress = nullptr);

// DB.report.html beside the database DB.db (each database in a folder keeps its own report).
std::string default_report_path(const std::string& db_path);

// One line for a terminal: task, trials, best GFLOP/s, estimated end-to-end latency.
std::string progress_line(const Progress& p);

}  // namespace tessera::autotune

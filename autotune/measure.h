// Isolated measurement of schedule candidates: each is replayed, compiled, checked against the
// kernel's default schedule on random inputs and timed (on a device target's device, by its
// events) in a worker process (tessera-measure, tools/measure_worker.cc) under a timeout, so a
// candidate that crashes, hangs or computes a wrong result becomes an error in its result and
// measurement goes on in a fresh worker.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "autotune/task.h"

namespace tessera::autotune {

struct MeasureOptions {
  int repeat = 5;  // timed runs per candidate: costs holds one per run
  int number = 0;  // back-to-back calls per run, averaged; 0: as many as last min_repeat_ms
  double min_repeat_ms = 10;
  double timeout_seconds = 10;  // per candidate, compile + run; a worker past it is killed
  bool flush_cache = false;     // overwrite the last-level cache before each run (not between the
                                // calls of a run: number = 1 gives cold-cache costs); CPU targets only
  // Rewrite the task's written inputs through the thread pool before each timed call, as the
  // kernel before it in a model does (off: they stay where the previous call read them).
  // Timed on inputs still in the caches of the cores that read them, a schedule can win and
  // lose in the model (benchmarks/NOTES.md, "Timing kernels alone and in a model").
  // Records do not say which way they were timed: a database should hold one kind. CPU targets
  // only: a device's kernels read device memory, which the host's caches do not hold.
  bool fresh_inputs = true;
  bool check = true;  // compare outputs with the default schedule's
  // Empty: $TESSERA_MEASURE_WORKER, else tessera-measure next to the running executable, else in
  // ../bin from the folder of this library (a build tree's lib/ and bin/).
  std::string worker_path;
};

struct MeasureResult {
  std::vector<double> costs;   // seconds per run; empty on error
  double compile_seconds = 0;  // replay, lowering and code generation
  // Empty: a valid measurement. Otherwise the stage that failed: "replay: ...", "lower: ...",
  // "compile: ...", "run: ...", "wrong result: max abs error E at element I of output O ...",
  // "timeout after N s", "crashed: SIGSEGV" (or another signal, or "exit status N"), each with
  // the worker's last line on stderr when it wrote one. "setup: ..." means nothing was measured
  // and the candidate is not at fault: the kernel, the target or its default schedule failed.
  std::string error;
  bool valid() const { return error.empty() && !costs.empty(); }
  double median_seconds() const;  // 0 when not valid
};

// Of two measurements of one schedule, the one to keep: the valid one, else the one with the
// lower median. Noise here (seconds in which one core is taken) only ever slows a run down.
const MeasureResult& faster(const MeasureResult& a, const MeasureResult& b);

// The record of measurement `m` of `trace` for `task` on `target`, of `kind` (a tuned record's
// search policy and decisions are the caller's to fill in).
Record make_record(const Task& task, const std::string& target, const std::string& trace, const MeasureResult& m,
                   RecordKind kind);

// Keeps one worker alive across calls (it keeps the inputs and reference outputs of the last
// task), replacing it when it crashes or hangs. Not thread-safe: one Measurer per thread.
class Measurer {
 public:
  // Throws tessera::Error naming the paths it looked at if there is no worker executable.
  explicit Measurer(MeasureOptions options = {});
  // Lets the worker finish and exit (killing it if it does not within a second).
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // One result per trace (JSON, as schedule::Trace::to_json writes), in the same order.
  // `target` is a target string ("llvm -mcpu=...") the worker compiles for.
  std::vector<MeasureResult> measure(const Task& task, const std::string& target,
                                     const std::vector<std::string>& traces);

  // The worker executable it runs (found at construction).
  const std::string& worker_path() const { return options_.worker_path; }

 private:
  class Worker;
  size_t measure_from(const Task& task, const std::string& target, const std::vector<std::string>& traces, size_t first,
                      std::vector<MeasureResult>& results);

  MeasureOptions options_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace tessera::autotune

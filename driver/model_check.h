// The model check: tuned schedules timed inside their built model against the default ones.
//
// Timed alone, a kernel runs on inputs hot in the caches of the cores that read them, its weights
// hot too. In a model its input was just written by the kernel before, split over the threads
// another way, and its weights come from memory. A schedule can win alone and lose there, by
// enough to make a tuned model slower than the untuned one (benchmarks/NOTES.md, "Timing kernels
// alone and in a model"). So after a session the model is built twice, with the
// default schedules and with the database's, and the two run in turns; each tuned kernel's time
// in the model and its default's are committed as in-model records, and builds use whichever
// ran faster there (TuningDatabase::chosen).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "driver/build.h"

namespace tessera::driver {

struct KernelCheck {
  std::string kernel;  // its name in the built model
  std::string op;      // what it computes (fused group)
  std::string workload;
  int64_t record = 0;  // the tuned record timed
  // Seconds per model run, summed over the kernel's calls: the median over rounds of each
  // round's median (what its in-model records hold).
  double default_seconds = 0, tuned_seconds = 0;
  bool tuned_kept() const { return tuned_seconds <= default_seconds; }
};

struct ModelCheck {
  std::vector<KernelCheck> kernels;               // those with a tuned schedule, in plan order
  double default_seconds = 0, tuned_seconds = 0;  // the whole model per run, as above
};

struct ModelCheckOptions {
  int rounds = 15;  // the two builds take turns this many times
  int runs = 5;     // timed runs of a build per turn
};

// Builds `module` at `opt_level` for `target` (which must run on this machine) with the default
// schedules and with the tuning database at `db_path` (no transfers), times the two in turns on
// zero inputs, and commits an in-model record of each tuned kernel's schedule and of its default,
// in one transaction. Throws naming the database if it does not exist.
ModelCheck check_in_model(const relay_ir::Module& module, const targets::Target& target, int opt_level,
                          const std::string& db_path, const ModelCheckOptions& check = {});

// A table for a terminal: per checked kernel, its two times and which schedule builds now use.
std::string format_model_check(const ModelCheck& check);

}  // namespace tessera::driver

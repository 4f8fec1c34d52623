// Search policies: which schedule candidates of a task to measure next. Both first offer the
// default template's schedule, then sweep its knobs (when they make few enough candidates), then
// search: `random` samples the search space (autotune/search_space.h); `evolutionary` (Ansor's)
// evolves a population of random samples, the best candidates measured so far and the
// database's records (by the sketch and decisions stored with them) by mutation and crossover,
// generation after generation scored by the cost model, then picks the batch epsilon-greedily:
// mostly the model's best not measured yet, a few random ones so the model keeps learning. The
// tuning loop asks for a batch, measures it, and reports the costs back.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/cost_model.h"
#include "autotune/database.h"
#include "autotune/task.h"

namespace tessera::autotune {

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  // Up to n schedule traces (JSON) to measure, none measured or proposed before; the first batch
  // starts with the default template's schedule, then its knobs' other values. Fewer when the
  // space runs dry.
  virtual std::vector<std::string> next_batch(int n) = 0;
  // Measured seconds per trace (<= 0 or not finite: the candidate failed); trains the model.
  virtual void update(const std::vector<std::string>& traces, const std::vector<double>& costs) = 0;
  // The sketch and decisions of a trace this policy proposed, for its database record; none for
  // a trace it did not sample.
  virtual std::optional<SketchDecisions> decisions_of(const std::string& trace) const = 0;
};

// A templates' knob space up to this size is swept whole before any sampled candidate: each of
// its candidates is a template's schedule, nearly as good as the default by construction, where
// most rule-generated samples are several times slower until the cost model has learned the
// workload (benchmarks/NOTES.md, "Template sweeps").
constexpr size_t kMaxTemplateSweep = 48;

struct SearchOptions {
  int population = 128;          // candidates per generation
  int generations = 4;           // generations evolved per batch
  double mutation_prob = 0.85;   // a child is mutated (else copied) ...
  double crossover_prob = 0.15;  // ... after crossing over with a second parent of its sketch
  double measured_ratio = 0.2;   // share of the first generation taken from the best measured
  double epsilon = 0.05;         // share of a batch picked at random
};

// The kinds make_policy makes: "evolutionary", "random".
const std::vector<std::string>& search_policy_names();

// `kind`: "evolutionary" or "random". `model` may be shared across tasks (and null: the policy
// keeps its own). `records`: this workload's records in the database (its best first); none is
// proposed again, and those whose stored sketch and decisions still make their trace seed the
// population (records without decisions, such as those written before they were stored, do
// not). Throws tessera::Error for an unknown kind or a target without a search space (only CPU
// targets, "llvm ...", have one).
std::unique_ptr<SearchPolicy> make_policy(const Task& task, const std::string& target, const std::string& kind,
                                          CostModel* model, uint64_t seed, const std::vector<Record>& records,
                                          const SearchOptions& options = {});

}  // namespace tessera::autotune

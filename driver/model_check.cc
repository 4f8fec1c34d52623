#include "driver/model_check.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "autotune/database.h"
#include "runtime/error.h"
#include "targets/build.h"

namespace tessera::driver {

namespace {

using Clock = std::chrono::steady_clock;

// Zeros in every input: valid for any model (an index input reads element 0); the kernels'
// times do not depend on the values.
void set_zero_inputs(runtime::GraphExecutor& ex) {
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    const auto& info = ex.input_info(i);
    runtime::NDArray value = runtime::NDArray::empty(info.shape, info.dtype);
    std::memset(value.data(), 0, value.nbytes());
    ex.set_input(i, value);
  }
}

using autotune::median_of;

// One turn of a build: the median of `runs` end-to-end runs, and per kernel the median over
// `runs` profiled runs of its steps' summed time (seconds).
struct Turn {
  double total = 0;
  std::map<std::string, double> kernels;
};

Turn take_turn(runtime::GraphExecutor& ex, int runs) {
  std::vector<double> totals;
  std::map<std::string, std::vector<double>> per_kernel;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    ex.run();
    totals.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  for (int r = 0; r < runs; ++r) {
    std::vector<double> ms = ex.run_profiled();
    std::map<std::string, double> sums;
    for (size_t s = 0; s < ms.size(); ++s) sums[ex.plan().steps[s].kernel] += ms[s] * 1e-3;
    for (const auto& [k, t] : sums) per_kernel[k].push_back(t);
  }
  Turn turn{median_of(totals), {}};
  for (auto& [k, t] : per_kernel) turn.kernels[k] = median_of(t);
  return turn;
}

struct Candidate {
  KernelCheck check;
  std::string default_trace, tuned_trace;
  std::vector<double> default_costs, tuned_costs;  // one per round
};

}  // namespace

ModelCheck check_in_model(const relay_ir::Module& module, const targets::Target& target, int opt_level,
                          const std::string& db_path, const ModelCheckOptions& check) {
  auto db = autotune::TuningDatabase::open_existing(db_path);
  if (!db) fail("model check: no tuning database at ", db_path);
  std::string key = targets::tuning_key(target);
  BuildOptions plain, tuned;
  plain.opt_level = tuned.opt_level = opt_level;
  tuned.db_path = db_path;
  plain.transfer = tuned.transfer = false;
  BuildResult a = build(module, target, plain), b = build(module, target, tuned);
  const auto &steps_a = a.executor->plan().steps, &steps_b = b.executor->plan().steps;
  bool same = steps_a.size() == steps_b.size();
  for (size_t s = 0; same && s < steps_a.size(); ++s) same = steps_a[s].kernel == steps_b[s].kernel;
  if (!same) fail("model check: the builds with and without the database ", db_path, " differ in their steps");

  // The kernels built with a record other than the default's (not one the check chose, nor a
  // custom schedule, which the build with no database uses too).
  std::vector<Candidate> candidates;
  for (const auto& k : b.kernels) {
    auto record = db->chosen(k.workload, key);
    auto standard = db->baseline(k.workload, key);
    if (!record || record->id != k.record || !standard || record->kind == autotune::RecordKind::InModel ||
        record->trace == standard->trace)
      continue;
    Candidate c;
    c.check = {k.name, k.op, k.workload, record->id};
    c.default_trace = standard->trace;
    c.tuned_trace = record->trace;
    candidates.push_back(c);
  }

  ModelCheck result;
  if (candidates.empty()) return result;
  set_zero_inputs(*a.executor);
  set_zero_inputs(*b.executor);
  for (int warm = 0; warm < 3; ++warm) {
    a.executor->run();
    b.executor->run();
  }
  std::vector<double> totals_a, totals_b;
  for (int round = 0; round < check.rounds; ++round) {
    Turn ta = take_turn(*a.executor, check.runs), tb = take_turn(*b.executor, check.runs);
    totals_a.push_back(ta.total);
    totals_b.push_back(tb.total);
    for (auto& c : candidates) {
      c.default_costs.push_back(ta.kernels.at(c.check.kernel));
      c.tuned_costs.push_back(tb.kernels.at(c.check.kernel));
    }
  }
  result.default_seconds = median_of(totals_a);
  result.tuned_seconds = median_of(totals_b);

  std::vector<autotune::Record> records;
  for (auto& c : candidates) {
    c.check.default_seconds = median_of(c.default_costs);
    c.check.tuned_seconds = median_of(c.tuned_costs);
    for (auto [trace, costs] :
         {std::pair{&c.default_trace, &c.default_costs}, std::pair{&c.tuned_trace, &c.tuned_costs}}) {
      autotune::Record r;
      r.workload = c.check.workload;
      r.target = key;
      r.trace = *trace;
      r.costs = *costs;
      r.kind = autotune::RecordKind::InModel;
      records.push_back(r);
    }
    result.kernels.push_back(c.check);
  }
  db->commit(records);
  return result;
}

std::string format_model_check(const ModelCheck& check) {
  std::string out;
  char line[256];
  size_t n = check.kernels.size();
  std::snprintf(line, sizeof line,
                "model check: %zu kernel%s with a tuned schedule, timed in the model against the default\n", n,
                n == 1 ? "" : "s");
  out += line;
  if (check.kernels.empty()) return out;
  std::snprintf(line, sizeof line, "  %-24s %-28s %11s %11s  %s\n", "kernel", "op", "default us", "tuned us",
                "builds use");
  out += line;
  for (const auto& k : check.kernels) {
    std::snprintf(line, sizeof line, "  %-24.24s %-28.28s %11.1f %11.1f  %s\n", k.kernel.c_str(), k.op.c_str(),
                  k.default_seconds * 1e6, k.tuned_seconds * 1e6,
                  k.tuned_kept() ? ("tuned (record " + std::to_string(k.record) + ")").c_str() : "default");
    out += line;
  }
  std::snprintf(line, sizeof line,
                "  whole model: default schedules %.3f ms, database's %.3f ms (before the check's choices)\n",
                check.default_seconds * 1e3, check.tuned_seconds * 1e3);
  out += line;
  return out;
}

}  // namespace tessera::driver

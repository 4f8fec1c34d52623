#include "autotune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>

#include "autotune/cost_model.h"
#include "autotune/database.h"
#include "autotune/report.h"
#include "autotune/search_policy.h"
#include "autotune/transfer.h"
#include "runtime/error.h"
#include "schedule/custom.h"
#include "targets/build.h"
#include "targets/target.h"

namespace tessera::autotune {

namespace {

// The lower of two times, where 0 means none yet.
double faster_of(double seconds, double other) { return seconds <= 0 || other < seconds ? other : seconds; }

class Session {
 public:
  Session(const std::vector<Task>& tasks, const TuneOptions& options,
          const std::function<void(const Progress&)>& on_progress)
      : tasks_(tasks),
        options_(options),
        on_progress_(on_progress),
        db_(options.db_path.empty() ? TuningDatabase::default_path() : options.db_path),
        measurer_(options.measure),
        target_(targets::tuning_key(targets::Target::parse(options.target))),
        model_(options.seed) {
    std::string path = cost_model_path(db_.path());
    if (std::filesystem::exists(path)) model_.load(path);
  }

  TuneResult run() {
    start_ = std::chrono::steady_clock::now();
    result_.peak = measure_machine_peak(targets::Target::parse(target_).kind);
    for (const auto& t : tasks_) {
      db_.add_workload(t.workload);
      TaskState s;
      s.description = t.workload.description;
      s.workload = t.workload.key;
      s.weight = t.weight;
      s.flops = t.flops;
      // Resuming: what the database holds for this target counts, and is never searched again
      // (a trace measured twice, as confirm_best does, is one trial).
      std::unordered_set<std::string> traces;
      for (const auto& r : db_.all(t.workload.key, target_)) {
        if (traces.insert(r.trace).second) {
          ++s.trials;
          s.measured.push_back(r.error.empty() ? r.median_seconds() : 0);
        }
        if (r.kind == RecordKind::Default && r.error.empty() && !r.costs.empty())
          s.default_seconds = faster_of(s.default_seconds, r.median_seconds());
      }
      if (auto best = db_.best(t.workload.key, target_)) s.best_seconds = best->median_seconds();
      states_.push_back(s);
    }
    for (size_t i = 0; i < tasks_.size(); ++i) measure_baselines(i);
    // The curve starts where every task has its default (or resumed best) time: an estimate
    // over the tasks measured so far would climb through the baselines.
    result_.latency_history.assign(1, {0, estimated_latency()});
    try {
      // Ansor's warm-up round: one batch per task, the largest share first, before tasks are
      // ranked by their gains. A task not searched yet has no gain to rank it by: on its
      // default's share alone, MobileNet's small layers got no trial in 600 while the large ones
      // had dozens. A first batch starts with the templates' knobs, the likeliest wins.
      std::vector<size_t> order(tasks_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return share(states_[a]) > share(states_[b]); });
      for (size_t i : order) {
        if (trials_done_ >= options_.trials || out_of_time()) break;
        if (!states_[i].stopped) search_batch(i);
      }
      while (trials_done_ < options_.trials && !out_of_time()) {
        int next = pick_task();
        if (next < 0) break;
        search_batch(static_cast<size_t>(next));
      }
      for (size_t i = 0; i < tasks_.size(); ++i) confirm_best(i);
    } catch (...) {
      finish();  // interrupted: the report still shows what was committed
      throw;
    }
    finish();
    return result_;
  }

 private:
  void finish() {
    result_.tasks = states_;
    result_.default_latency = 0;
    for (const auto& s : states_) result_.default_latency += s.weight * s.default_seconds;
    result_.estimated_latency = estimated_latency();
    // confirm_best's retiming moves the estimate after the last batch.
    if (!result_.latency_history.empty() && result_.latency_history.back().second != result_.estimated_latency)
      result_.latency_history.emplace_back(trials_done_, result_.estimated_latency);
    result_.wall_seconds = elapsed();
    result_.report_path = options_.report_path.empty() ? default_report_path(db_.path()) : options_.report_path;
    write_report(result_, result_.report_path);
  }

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool out_of_time() const { return options_.max_seconds && elapsed() > *options_.max_seconds; }

  double estimated_latency() const {
    double total = 0;
    for (const auto& s : states_) total += s.weight * (s.best_seconds > 0 ? s.best_seconds : s.default_seconds);
    return total;
  }

  // The baselines, measured once per task: the default schedule, and a custom schedule
  // registered for the workload or op (build() then uses it unless tuning beats it).
  void measure_baselines(size_t i) {
    const Task& t = tasks_[i];
    if (states_[i].default_seconds <= 0) commit_batch(i, {default_trace(t)}, RecordKind::Default);
    auto custom = schedule::apply_custom_schedule(t.compute.outputs, t.workload.key, t.workload.description);
    if (!custom) return;
    std::string trace = custom->trace().to_json();
    if (!db_.find(t.workload.key, target_, trace)) commit_batch(i, {trace}, RecordKind::Custom);
  }

  // Measures `traces` of task i, commits them in one transaction, updates its state. `search`:
  // the policy that proposed them (tuned records), which knows their decisions.
  std::vector<double> commit_batch(size_t i, const std::vector<std::string>& traces, RecordKind kind,
                                   const SearchPolicy* search = nullptr) {
    auto results = measurer_.measure(tasks_[i], target_, traces);
    std::vector<Record> records;
    std::vector<double> costs;
    TaskState& s = states_[i];
    for (size_t k = 0; k < traces.size(); ++k) {
      records.push_back(make_record(tasks_[i], target_, traces[k], results[k], kind));
      if (search) {
        records.back().policy = options_.policy;
        records.back().decisions = search->decisions_of(traces[k]);
      }
      double c = results[k].median_seconds();
      costs.push_back(c);
      s.measured.push_back(c);
      if (c > 0 && kind == RecordKind::Default) s.default_seconds = c;
      if (c > 0 && (s.best_seconds <= 0 || c < s.best_seconds)) {
        s.best_seconds = c;
        since_improvement_[i] = 0;
      } else {
        ++since_improvement_[i];
      }
    }
    db_.commit(records);
    s.trials += static_cast<int>(traces.size());
    trials_done_ += static_cast<int>(traces.size());
    s.history.emplace_back(s.trials, s.best_seconds);
    result_.latency_history.emplace_back(trials_done_, estimated_latency());
    if (options_.early_stopping > 0 && since_improvement_[i] >= options_.early_stopping) s.stopped = true;
    if (on_progress_) {
      Progress p{&states_, i, trials_done_, options_.trials, estimated_latency(), elapsed()};
      on_progress_(p);
    }
    return costs;
  }

  // The default is timed first and the best candidate perhaps minutes later, so a stretch of
  // seconds at half speed (seen here) in either would choose between them. For a task searched
  // in this session whose best is not the default, the two are timed again side by side
  // (default, best, default, best) and each commits its better run: build() takes the
  // database's fastest record, and the default's slowed first timing no longer hides it.
  void confirm_best(size_t i) {
    if (!policies_.count(i)) return;
    const Task& t = tasks_[i];
    std::optional<Record> best = db_.best(t.workload.key, target_);
    const std::string baseline = default_trace(t);
    if (!best || best->trace == baseline) return;
    auto m = measurer_.measure(t, target_, {baseline, best->trace, baseline, best->trace});
    const MeasureResult &d = faster(m[0], m[2]), &b = faster(m[1], m[3]);
    Record retimed = make_record(t, target_, best->trace, b, best->kind);
    retimed.policy = best->policy;
    retimed.decisions = best->decisions;
    db_.commit({make_record(t, target_, baseline, d, RecordKind::Default), retimed});
    TaskState& s = states_[i];
    if (d.valid()) s.default_seconds = faster_of(s.default_seconds, d.median_seconds());
    for (const MeasureResult* r : {&d, &b})
      if (r->valid()) s.best_seconds = faster_of(s.best_seconds, r->median_seconds());
  }

  // A task's part of the end-to-end latency.
  static double share(const TaskState& s) {
    return s.weight * (s.best_seconds > 0 ? s.best_seconds : s.default_seconds);
  }

  // Ansor's scheduler, simplified: the task whose next batch is expected to cut the most from
  // the end-to-end latency: its share (weight * best time) times its recent relative improvement,
  // with an exploration bonus for tasks tried little.
  int pick_task() {
    int best = -1;
    double best_gain = -1;
    for (size_t i = 0; i < states_.size(); ++i) {
      const TaskState& s = states_[i];
      if (s.stopped) continue;
      double improvement = 0;
      if (s.history.size() >= 2) {
        double before = s.history[s.history.size() - 2].second, now = s.history.back().second;
        if (before > 0 && now > 0) improvement = (before - now) / before;
      }
      double exploration = 1.0 / (1.0 + s.trials / double(std::max(options_.batch, 1)));
      double gain = share(s) * (improvement + 0.2 * exploration);
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<int>(i);
      }
    }
    return best;
  }

  SearchPolicy& policy_for(size_t i) {
    auto it = policies_.find(i);
    if (it != policies_.end()) return *it->second;
    // The best records seed the population; every record measured before (errors too) is passed
    // so none is proposed again.
    std::vector<Record> records;
    std::unordered_set<std::string> seen;
    for (const auto& r : db_.top(tasks_[i].workload.key, target_, 16))
      if (seen.insert(r.trace).second) records.push_back(r);
    for (const auto& r : db_.all(tasks_[i].workload.key, target_))
      if (seen.insert(r.trace).second) records.push_back(r);
    auto p = make_policy(tasks_[i], options_.target, options_.policy, &model_, options_.seed + i, records);
    return *policies_.emplace(i, std::move(p)).first->second;
  }

  void search_batch(size_t i) {
    SearchPolicy& policy = policy_for(i);
    int n = std::min(options_.batch, options_.trials - trials_done_);
    std::vector<std::string> traces = policy.next_batch(n);
    if (traces.empty()) {  // the space is exhausted
      states_[i].stopped = true;
      return;
    }
    std::vector<double> costs = commit_batch(i, traces, RecordKind::Tuned, &policy);
    policy.update(traces, costs);
    // Kept beside the database for later sessions and for builds ranking transferred schedules.
    if (model_.trained()) model_.save(cost_model_path(db_.path()));
  }

  const std::vector<Task>& tasks_;
  TuneOptions options_;
  std::function<void(const Progress&)> on_progress_;
  TuningDatabase db_;
  Measurer measurer_;
  std::string target_;
  CostModel model_;
  std::map<size_t, std::unique_ptr<SearchPolicy>> policies_;
  std::map<size_t, int> since_improvement_;
  std::vector<TaskState> states_;
  TuneResult result_;
  int trials_done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void validate(const TuneOptions& options) {
  try {
    // Candidates are measured on this machine: a device target's device must be here.
    targets::device_of(targets::Target::parse(options.target));
  } catch (const Error& e) {
    fail("tune: target: ", e.what());
  }
  const auto& policies = search_policy_names();
  if (std::find(policies.begin(), policies.end(), options.policy) == policies.end()) {
    std::string names;
    for (const auto& p : policies) names += (names.empty() ? "" : " or ") + p;
    fail("tune: policy '", options.policy, "' is unknown (expected ", names, ")");
  }
  // Spelled with the CLI's name too where Python's differs, so each reader finds the option.
  if (options.trials < 1) fail("tune: trials must be at least 1 (got ", options.trials, ")");
  if (options.batch < 1) fail("tune: batch must be at least 1 (got ", options.batch, ")");
  if (options.early_stopping < 0)
    fail("tune: early_stopping (--early-stopping) must be 0 (never) or more (got ", options.early_stopping, ")");
  if (options.max_seconds && !(*options.max_seconds > 0))
    fail("tune: timeout must be more than 0 seconds (got ", *options.max_seconds, "); leave it out for no limit");
  if (options.measure.repeat < 1) fail("tune: repeat must be at least 1 (got ", options.measure.repeat, ")");
}

TuneResult tune(const std::vector<Task>& tasks, const TuneOptions& options,
                const std::function<void(const Progress&)>& on_progress) {
  if (tasks.empty()) fail("tune: the model has no kernels to tune");
  validate(options);
  // Checked before anything is measured: policies are made lazily, after the baselines.
  make_policy(tasks.front(), options.target, options.policy, nullptr, 0, {});
  return Session(tasks, options, on_progress).run();
}

std::string default_report_path(const std::string& db_path) {
  std::filesystem::path db(db_path);
  return (db.parent_path() / (db.stem().string() + ".report.html")).string();
}

std::string progress_line(const Progress& p) {
  const TaskState& s = (*p.tasks)[p.current];
  char line[256];
  std::snprintf(line, sizeof line,
                "[%3d/%d trials %5.0fs] task %zu/%zu %-28.28s best %7.1f GFLOP/s | est. latency %.4g ms", p.trials_done,
                p.trials_total, p.elapsed, p.current + 1, p.tasks->size(), s.description.c_str(), s.gflops(),
                p.estimated_latency * 1e3);
  return line;
}

}  // namespace tessera::autotune

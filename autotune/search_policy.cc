#include "autotune/search_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "autotune/features.h"
#include "autotune/search_space.h"
#include "runtime/error.h"
#include "targets/target.h"

namespace tessera::autotune {

namespace {

// Random samples tried per candidate wanted before a batch comes back short.
constexpr int kSampleTriesPerCandidate = 8;

// A candidate that applied and lowered: its trace and features.
struct Evaluated {
  Candidate candidate;
  std::string trace;
  std::vector<float> features;
};

class PolicyBase : public SearchPolicy {
 public:
  PolicyBase(const Task& task, CostModel* model, uint64_t seed, const std::vector<Record>& records,
             const SearchOptions& options)
      : space_(task.compute),
        task_key_(task.workload.key.empty() ? task.workload.description : task.workload.key),
        model_(model),
        rng_(seed),
        options_(options) {
    if (!model_) {
      own_model_ = std::make_unique<CostModel>(seed);
      model_ = own_model_.get();
    }
    for (const auto& r : records) {
      taken_.insert(r.trace);
      if (!r.decisions) continue;
      if (auto c = space_.candidate(*r.decisions)) seeds_.push_back({*c, r.trace});
    }
    template_sweep_ = space_.template_candidates(kMaxTemplateSweep);
  }

  std::vector<std::string> next_batch(int n) override {
    std::vector<std::string> batch;
    if (!default_offered_ && n > 0) {
      default_offered_ = true;
      if (auto e = evaluate(SearchSpace::default_candidate()); e && !taken_.count(e->trace)) batch.push_back(e->trace);
    }
    for (; next_template_ < template_sweep_.size() && static_cast<int>(batch.size()) < n; ++next_template_)
      if (const Evaluated* e = evaluate(template_sweep_[next_template_]); e && fresh(e->trace, batch))
        batch.push_back(e->trace);
    fill(batch, n);
    for (const auto& t : batch) taken_.insert(t);
    return batch;
  }

  void update(const std::vector<std::string>& traces, const std::vector<double>& costs) override {
    if (traces.size() != costs.size()) fail("search policy: ", traces.size(), " traces for ", costs.size(), " costs");
    std::vector<std::vector<float>> rows;
    std::vector<double> measured;
    for (size_t i = 0; i < traces.size(); ++i) {
      taken_.insert(traces[i]);
      const Evaluated* e = find_or_replay(traces[i]);
      if (!e) continue;  // a trace this space cannot rebuild teaches the model nothing
      rows.push_back(e->features);
      measured.push_back(costs[i]);
      if (costs[i] > 0 && std::isfinite(costs[i]) && e->candidate.sketch > 0) best_.emplace(costs[i], e->candidate);
    }
    if (!rows.empty()) model_->update(task_key_, rows, measured);
  }

  std::optional<SketchDecisions> decisions_of(const std::string& trace) const override {
    auto it = by_trace_.find(trace);
    if (it == by_trace_.end() || it->second.candidate.sketch < 0) return std::nullopt;
    return space_.stored(it->second.candidate);
  }

 protected:
  virtual void fill(std::vector<std::string>& batch, int n) = 0;

  bool fresh(const std::string& trace, const std::vector<std::string>& batch) const {
    return !taken_.count(trace) && std::find(batch.begin(), batch.end(), trace) == batch.end();
  }

  // Applies and lowers a candidate (once per distinct decisions); null if it is invalid.
  const Evaluated* evaluate(const Candidate& c) {
    std::string key = std::to_string(c.sketch);
    for (int64_t d : c.decisions) key += "," + std::to_string(d);
    auto known = by_decisions_.find(key);
    if (known != by_decisions_.end()) return known->second;
    const Evaluated* result = nullptr;
    try {
      auto s = space_.apply(c);
      std::string trace = s->trace().to_json();
      auto it = by_trace_.find(trace);
      if (it != by_trace_.end()) {
        result = &it->second;
      } else {
        Evaluated e{c, trace, extract_features(space_.lower(*s))};
        result = &by_trace_.emplace(trace, std::move(e)).first->second;
      }
    } catch (const std::exception&) {
      // Invalid decisions (a primitive, bound inference or lowering rejects them) are filtered out.
    }
    by_decisions_[key] = result;
    return result;
  }

  // A trace this policy did not propose has no candidate (sketch -1): it trains the model but is
  // not mutated.
  const Evaluated* find_or_replay(const std::string& trace) {
    auto it = by_trace_.find(trace);
    if (it != by_trace_.end()) return &it->second;
    try {
      auto s = space_.replay(trace);
      Evaluated e{Candidate{-1, {}}, trace, extract_features(space_.lower(*s))};
      return &by_trace_.emplace(trace, std::move(e)).first->second;
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  // Up to n valid random samples not measured yet.
  std::vector<const Evaluated*> random_samples(int n, const std::vector<std::string>& batch) {
    std::vector<const Evaluated*> out;
    std::unordered_set<std::string> seen;
    for (int tries = 0; static_cast<int>(out.size()) < n && tries < n * kSampleTriesPerCandidate; ++tries) {
      const Evaluated* e = evaluate(space_.sample(rng_));
      if (e && fresh(e->trace, batch) && seen.insert(e->trace).second) out.push_back(e);
    }
    return out;
  }

  SearchSpace space_;
  std::string task_key_;
  CostModel* model_;
  std::unique_ptr<CostModel> own_model_;
  std::mt19937_64 rng_;
  SearchOptions options_;
  std::unordered_set<std::string> taken_;  // measured or proposed
  // The database's records as candidates, with the trace each must still make to be used (the
  // sketch rules of the version that stored it may have differed).
  std::vector<std::pair<Candidate, std::string>> seeds_;
  std::multimap<double, Candidate> best_;  // measured candidates by cost
  std::unordered_map<std::string, Evaluated> by_trace_;
  std::unordered_map<std::string, const Evaluated*> by_decisions_;
  bool default_offered_ = false;
  std::vector<Candidate> template_sweep_;  // the knob space, offered after the default
  size_t next_template_ = 0;
};

class RandomSearch : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 protected:
  void fill(std::vector<std::string>& batch, int n) override {
    for (const Evaluated* e : random_samples(n - static_cast<int>(batch.size()), batch)) batch.push_back(e->trace);
  }
};

class EvolutionarySearch : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;

 protected:
  void fill(std::vector<std::string>& batch, int n) override {
    int want = n - static_cast<int>(batch.size());
    if (want <= 0) return;
    std::vector<const Evaluated*> randoms = random_samples(options_.population, batch);
    std::vector<const Evaluated*> population = initial_population(randoms);
    // Every valid candidate seen, with its score (the model does not change within a batch).
    std::map<std::string, double> pool;
    for (int g = 0; g < options_.generations && !population.empty(); ++g) {
      std::vector<double> scores = score(population);
      for (size_t i = 0; i < population.size(); ++i) pool[population[i]->trace] = scores[i];
      population = next_generation(population, scores);
    }
    if (!population.empty()) {
      std::vector<double> scores = score(population);
      for (size_t i = 0; i < population.size(); ++i) pool[population[i]->trace] = scores[i];
    }
    int explore = static_cast<int>(std::round(options_.epsilon * want));
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [trace, s] : pool)
      if (fresh(trace, batch)) ranked.emplace_back(-s, trace);
    std::sort(ranked.begin(), ranked.end());
    for (const auto& [s, trace] : ranked) {
      if (static_cast<int>(batch.size()) >= n - explore) break;
      batch.push_back(trace);
    }
    std::shuffle(randoms.begin(), randoms.end(), rng_);
    for (const Evaluated* e : randoms) {
      if (static_cast<int>(batch.size()) >= n) break;
      if (fresh(e->trace, batch)) batch.push_back(e->trace);
    }
  }

 private:
  std::vector<double> score(const std::vector<const Evaluated*>& population) {
    std::vector<std::vector<float>> rows;
    for (const Evaluated* e : population) rows.push_back(e->features);
    return model_->predict(rows);
  }

  std::vector<const Evaluated*> initial_population(const std::vector<const Evaluated*>& randoms) {
    std::vector<const Evaluated*> population;
    std::unordered_set<std::string> in;
    auto add = [&](const Evaluated* e) {
      if (e && e->candidate.sketch > 0 && in.insert(e->trace).second) population.push_back(e);
    };
    int from_measured = static_cast<int>(options_.measured_ratio * options_.population);
    for (auto it = best_.begin(); it != best_.end() && static_cast<int>(population.size()) < from_measured; ++it)
      add(evaluate(it->second));
    for (const auto& [c, trace] : seeds_)
      if (const Evaluated* e = evaluate(c); e && e->trace == trace) add(e);
    for (const Evaluated* e : randoms) {
      if (static_cast<int>(population.size()) >= options_.population) break;
      add(e);
    }
    return population;
  }

  // Elites stay; the rest are children of parents picked by tournament on the model's score.
  std::vector<const Evaluated*> next_generation(const std::vector<const Evaluated*>& population,
                                                const std::vector<double>& scores) {
    size_t size = population.size();
    std::vector<size_t> order(size);
    for (size_t i = 0; i < size; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<const Evaluated*> next;
    std::unordered_set<std::string> in;
    for (size_t i = 0; i < std::max<size_t>(1, size / 10); ++i)
      if (in.insert(population[order[i]]->trace).second) next.push_back(population[order[i]]);
    auto tournament = [&]() {
      size_t a = std::uniform_int_distribution<size_t>(0, size - 1)(rng_);
      size_t b = std::uniform_int_distribution<size_t>(0, size - 1)(rng_);
      return scores[a] >= scores[b] ? a : b;
    };
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t tries = 0; next.size() < size && tries < size * kSampleTriesPerCandidate; ++tries) {
      Candidate child = population[tournament()]->candidate;
      if (u(rng_) < options_.crossover_prob) {
        const Candidate& other = population[tournament()]->candidate;
        if (other.sketch == child.sketch) child = space_.crossover(child, other, rng_);
      }
      if (u(rng_) < options_.mutation_prob) child = space_.mutate(child, rng_);
      const Evaluated* e = evaluate(child);
      if (e && in.insert(e->trace).second) next.push_back(e);
    }
    return next;
  }
};

}  // namespace

const std::vector<std::string>& search_policy_names() {
  static const std::vector<std::string> names = {"evolutionary", "random"};
  return names;
}

std::unique_ptr<SearchPolicy> make_policy(const Task& task, const std::string& target, const std::string& kind,
                                          CostModel* model, uint64_t seed, const std::vector<Record>& records,
                                          const SearchOptions& options) {
  const targets::Target t = targets::Target::parse(target);
  if (t.kind == "c") fail("search: target '", target, "' has no search space (tune for llvm, opencl or cuda)");
  if ((t.device_type() != runtime::DeviceType::CPU) != task.compute.hardware.is_gpu())
    fail("search: task '", task.workload.description, "' was extracted for ",
         task.compute.hardware.is_gpu() ? "a GPU" : "a CPU", ", not for target '", target, "'");
  if (kind == "evolutionary") return std::make_unique<EvolutionarySearch>(task, model, seed, records, options);
  if (kind == "random") return std::make_unique<RandomSearch>(task, model, seed, records, options);
  fail("search: unknown policy '", kind, "' (expected evolutionary or random)");
}

}  // namespace tessera::autotune

// Search policies: batches of fresh, replayable traces whose decisions the policy reports; records
// of the database are not proposed again, and seed the search by their stored decisions; the
// evolutionary search climbs the cost model (here taught a
// synthetic cost from features, so no measurement is needed).
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>

#include "autotune/features.h"
#include "autotune/search_policy.h"
#include "runtime/error.h"
#include "search_test_util.h"

namespace tessera::autotune {
namespace {

using namespace testing;

std::vector<float> features_of(const SearchSpace& space, const std::string& trace) {
  return extract_features(space.lower(*space.replay(trace)));
}

// Faster with wider vectors, threads and more arithmetic per byte: what a real machine rewards.
// A database record of `trace`, with the sketch and decisions that made it, if given.
Record record_of(const std::string& trace, std::optional<SketchDecisions> decisions = std::nullopt) {
  Record r;
  r.trace = trace;
  r.decisions = std::move(decisions);
  return r;
}

double synthetic_cost(const std::vector<float>& f) {
  const auto& names = feature_names();
  auto at = [&](const char* n) { return f[std::find(names.begin(), names.end(), n) - names.begin()]; };
  return 1.0 / (1 + at("s0.lanes") + 2 * at("parallel_fraction") + at("s0.intensity"));
}

TEST(SearchPolicy, RejectsUnknownKindsAndTargets) {
  Task t = elementwise_task();
  EXPECT_THROW(make_policy(t, "llvm", "annealing", nullptr, 0, {}), Error);
  EXPECT_THROW(make_policy(t, "c", "random", nullptr, 0, {}), Error);
  // A task extracted for the CPU has no GPU schedules.
  EXPECT_THROW(make_policy(t, "cuda -arch=sm_90", "random", nullptr, 0, {}), Error);
}

TEST(SearchPolicy, BatchesAreFreshAndReplay) {
  for (const char* kind : {"random", "evolutionary"}) {
    Task t = softmax_task();
    SearchSpace space(t.compute);
    SearchOptions small;
    small.population = 24;
    small.generations = 2;
    auto policy = make_policy(t, "llvm", kind, nullptr, 1, {}, small);
    std::unordered_set<std::string> seen;
    std::string default_trace = space.trace_json(SearchSpace::default_candidate());
    for (int batch = 0; batch < 3; ++batch) {
      auto traces = policy->next_batch(8);
      EXPECT_EQ(traces.size(), 8u) << kind;
      if (batch == 0) {
        EXPECT_EQ(traces[0], default_trace) << kind;
      }
      std::vector<double> costs;
      for (const auto& tr : traces) {
        EXPECT_TRUE(seen.insert(tr).second) << kind << ": proposed twice";
        EXPECT_NO_THROW(space.lower(*space.replay(tr)));
        // What the tuner stores with the record makes the trace again.
        auto decisions = policy->decisions_of(tr);
        ASSERT_TRUE(decisions.has_value()) << kind;
        auto c = space.candidate(*decisions);
        ASSERT_TRUE(c.has_value()) << kind;
        EXPECT_EQ(space.trace_json(*c), tr) << kind;
        costs.push_back(synthetic_cost(features_of(space, tr)));
      }
      costs[1] = INFINITY;  // a failed measurement
      policy->update(traces, costs);
    }
  }
}

// Both policies offer the default, then sweep the templates' knobs (one knob changed before
// two), then search; a knob value measured before (a database record) is not offered again.
TEST(SearchPolicy, TheDefaultThenTheTemplatesKnobsComeFirst) {
  Task t = depthwise_task();
  SearchSpace space(t.compute);
  std::vector<Candidate> knobs = space.template_candidates(kMaxTemplateSweep);
  ASSERT_EQ(knobs.size(), 2u * 3 * 3 - 1);  // threads x rows x where the padded input comes from
  for (size_t i = 1; i < knobs.size(); ++i) {
    auto changed = [&](const Candidate& c) {
      int n = 0;
      for (size_t k = 0; k < c.decisions.size(); ++k) n += c.decisions[k] != space.layout(1)[k].options[0];
      return n;
    };
    EXPECT_LE(changed(knobs[i - 1]), changed(knobs[i]));
  }
  std::string skipped = space.trace_json(knobs[2]);
  for (const char* kind : {"random", "evolutionary"}) {
    SearchOptions small;
    small.population = 16;
    small.generations = 2;
    auto policy = make_policy(t, "llvm", kind, nullptr, 3, {record_of(skipped)}, small);
    auto batch = policy->next_batch(static_cast<int>(knobs.size()) + 4);
    ASSERT_EQ(batch.size(), knobs.size() + 4) << kind;
    EXPECT_EQ(batch[0], space.trace_json(SearchSpace::default_candidate())) << kind;
    std::vector<std::string> expected;
    for (const auto& c : knobs)
      if (space.trace_json(c) != skipped) expected.push_back(space.trace_json(c));
    EXPECT_EQ(std::vector<std::string>(batch.begin() + 1, batch.begin() + 1 + expected.size()), expected) << kind;
  }
  // A knob space larger than the sweep's limit is left to the search.
  EXPECT_TRUE(space.template_candidates(8).empty());
}

TEST(SearchPolicy, DatabaseRecordsAreNotProposedAgain) {
  Task t = dense_task();
  SearchSpace space(t.compute);
  std::mt19937_64 rng(9);
  std::vector<Record> records;
  while (records.size() < 6) {
    Candidate c = space.sample(rng);
    // Half with their decisions, half without (written before decisions were stored).
    records.push_back(
        record_of(space.trace_json(c), records.size() % 2 ? std::optional(space.stored(c)) : std::nullopt));
  }
  records.push_back(record_of("[]"));  // the unscheduled kernel replays too, though no sketch makes it
  SearchOptions small;
  small.population = 16;
  small.generations = 2;
  auto policy = make_policy(t, "llvm", "evolutionary", nullptr, 2, records, small);
  for (int batch = 0; batch < 3; ++batch)
    for (const auto& tr : policy->next_batch(8))
      for (const auto& r : records) EXPECT_NE(tr, r.trace);
}

// A population of the seeds alone evolves within their sketch; records without decisions, or
// whose decisions no longer make their trace, seed nothing.
TEST(SearchPolicy, RecordsWithTheirDecisionsSeedTheSearch) {
  Task t = softmax_task();  // four sketches besides the default, no templates' knobs
  SearchSpace space(t.compute);
  ASSERT_EQ(space.sketches().size(), 5u);
  const int seeded = 3;
  std::mt19937_64 rng(4);
  std::vector<Candidate> samples, others;
  while (samples.size() < 6 || others.size() < 6) {
    Candidate c = space.sample(rng);
    (c.sketch == seeded ? samples : others).push_back(c);
  }
  samples.resize(6);
  SearchOptions seeds_only;
  seeds_only.population = 6;
  seeds_only.generations = 2;
  seeds_only.epsilon = 0;
  auto sketches_proposed = [&](const std::vector<Record>& records) {
    auto policy = make_policy(t, "llvm", "evolutionary", nullptr, 1, records, seeds_only);
    std::vector<std::string> batch = policy->next_batch(5);
    EXPECT_EQ(batch.size(), 5u);
    std::set<std::string> names;
    for (size_t i = 1; i < batch.size(); ++i) names.insert(policy->decisions_of(batch[i])->sketch);  // [0]: the default
    return names;
  };
  std::vector<Record> with, without, mismatched;
  for (size_t i = 0; i < samples.size(); ++i) {
    with.push_back(record_of(space.trace_json(samples[i]), space.stored(samples[i])));
    without.push_back(record_of(space.trace_json(samples[i])));
    mismatched.push_back(record_of(space.trace_json(others[i]), space.stored(samples[i])));
  }
  EXPECT_EQ(sketches_proposed(with), std::set<std::string>{space.sketches()[seeded].name});
  EXPECT_GT(sketches_proposed(without).size(), 1u);
  EXPECT_GT(sketches_proposed(mismatched).size(), 1u);
}

TEST(SearchPolicy, EvolutionFindsCandidatesTheModelRanksAboveRandomSamples) {
  Task t = matmul_task(128, 128, 128);
  SearchSpace space(t.compute);
  CostModel model(5);
  // Teach the model the synthetic cost on random samples.
  std::mt19937_64 rng(5);
  std::vector<std::vector<float>> train;
  std::vector<double> costs;
  while (train.size() < 64) {
    try {
      auto f = extract_features(space.lower(*space.apply(space.sample(rng))));
      train.push_back(f);
      costs.push_back(synthetic_cost(f));
    } catch (const Error&) {
    }
  }
  model.update(t.workload.key, train, costs);
  ASSERT_TRUE(model.trained());

  SearchOptions options;
  options.population = 48;
  options.generations = 3;
  options.epsilon = 0;
  auto policy = make_policy(t, "llvm", "evolutionary", &model, 6, {}, options);
  // The default template's schedule and its knobs' other values come first, whatever their score.
  policy->next_batch(1 + static_cast<int>(space.template_candidates(kMaxTemplateSweep).size()));
  auto batch = policy->next_batch(8);
  std::vector<std::vector<float>> picked;
  for (const auto& tr : batch) picked.push_back(features_of(space, tr));
  std::vector<std::vector<float>> randoms;
  std::mt19937_64 other(77);
  while (randoms.size() < 48) {
    try {
      randoms.push_back(extract_features(space.lower(*space.apply(space.sample(other)))));
    } catch (const Error&) {
    }
  }
  auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  auto picked_scores = model.predict(picked), random_scores = model.predict(randoms);
  EXPECT_GT(mean(picked_scores), mean(random_scores));
  EXPECT_GE(*std::min_element(picked_scores.begin(), picked_scores.end()),
            *std::max_element(random_scores.begin(), random_scores.end()) * 0.9);
  // And by the synthetic truth the model learned.
  std::vector<double> picked_costs, random_costs;
  for (const auto& f : picked) picked_costs.push_back(synthetic_cost(f));
  for (const auto& f : randoms) random_costs.push_back(synthetic_cost(f));
  EXPECT_LT(mean(picked_costs), mean(random_costs));
}

}  // namespace
}  // namespace tessera::autotune

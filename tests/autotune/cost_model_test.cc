// The XGBoost cost model: learns a synthetic relation well enough to rank held-out candidates,
// normalizes per task, starts random, and survives a save/load round trip with its training data.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "autotune/cost_model.h"
#include "runtime/error.h"
#include "temp_dir.h"

namespace tessera::autotune {
namespace {

constexpr size_t kWidth = 40;

// Random rows; the cost depends on features 3 and 7 only (one monotone, one with an optimum).
std::vector<std::vector<float>> rows(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0, 4);
  std::vector<std::vector<float>> out(n, std::vector<float>(kWidth));
  for (auto& r : out)
    for (auto& x : r) x = u(rng);
  return out;
}

double synthetic_cost(const std::vector<float>& f) { return 1e-3 * (1 + f[3] + 2 * std::pow(f[7] - 2, 2)); }

// Share of held-out pairs ordered like their true costs (0.5: chance).
double pairwise_accuracy(const std::vector<double>& scores, const std::vector<double>& costs) {
  int right = 0, total = 0;
  for (size_t i = 0; i < costs.size(); ++i)
    for (size_t j = i + 1; j < costs.size(); ++j) {
      if (costs[i] == costs[j]) continue;
      ++total;
      right += (scores[i] > scores[j]) == (costs[i] < costs[j]);
    }
  return double(right) / total;
}

TEST(CostModel, LearnsASyntheticRelationAndRanksHeldOutCandidates) {
  std::mt19937_64 rng(1);
  CostModel model(1);
  auto train = rows(300, rng);
  std::vector<double> costs;
  for (const auto& r : train) costs.push_back(synthetic_cost(r));
  // Two tasks with different scales: normalization per task makes them one relation.
  std::vector<std::vector<float>> first(train.begin(), train.begin() + 150), second(train.begin() + 150, train.end());
  std::vector<double> c1(costs.begin(), costs.begin() + 150), c2(costs.begin() + 150, costs.end());
  for (auto& c : c2) c *= 100;
  model.update("a", first, c1);
  model.update("b", second, c2);
  EXPECT_TRUE(model.trained());
  EXPECT_EQ(model.num_measurements(), 300u);
  auto test = rows(100, rng);
  std::vector<double> truth;
  for (const auto& r : test) truth.push_back(synthetic_cost(r));
  EXPECT_GT(pairwise_accuracy(model.predict(test), truth), 0.8);
}

TEST(CostModel, ColdStartIsRandomAndFailuresCount) {
  std::mt19937_64 rng(2);
  CostModel model(2);
  auto r = rows(10, rng);
  auto p = model.predict(r);
  ASSERT_EQ(p.size(), 10u);
  EXPECT_NE(p[0], p[1]);
  // Too few measurements to train yet; failures (inf, <= 0) are accepted.
  model.update("t", r, {1e-3, 2e-3, INFINITY, -1, 0, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3});
  EXPECT_FALSE(model.trained());
  EXPECT_THROW(model.update("t", r, {1.0}), Error);
}

TEST(CostModel, SaveAndLoadKeepPredictions) {
  std::mt19937_64 rng(3);
  CostModel model(3);
  auto train = rows(64, rng);
  std::vector<double> costs;
  for (const auto& r : train) costs.push_back(synthetic_cost(r));
  EXPECT_THROW(model.save("/nonexistent/model.json"), Error);  // untrained: nothing to save
  model.update("t", train, costs);
  auto path = (tessera::testing::test_temp_dir() / "model.json").string();
  model.save(path);
  CostModel loaded;
  loaded.load(path);
  auto test = rows(20, rng);
  EXPECT_EQ(model.predict(test), loaded.predict(test));
  // The measurements come back with the trees, failures included: retraining adds to them.
  EXPECT_EQ(loaded.num_measurements(), 64u);
  loaded.update("u", rows(4, rng), {1e-3, INFINITY, 2e-3, 1e-3});
  EXPECT_EQ(loaded.num_measurements(), 68u);
  // Another feature length is refused with a message, not a crash.
  EXPECT_THROW(loaded.predict({std::vector<float>(kWidth + 1, 0.0f)}), Error);
  std::ofstream(path + ".data") << "tessera-cost-model-data 1 40\nt 0.001 1 2\n";
  EXPECT_THROW(loaded.load(path), Error);
  EXPECT_EQ(loaded.num_measurements(), 68u);  // a failed load changes nothing
  std::ofstream(path) << "not a model";
  std::filesystem::remove(path + ".data");
  EXPECT_THROW(loaded.load(path), Error);
  std::filesystem::remove(path);
}

TEST(CostModel, MeasurementsOfAnotherFeatureLengthAreDroppedWithTheirTrees) {
  std::mt19937_64 rng(4);
  CostModel model(4);
  auto old_rows = rows(32, rng);
  model.update("t", old_rows, std::vector<double>(32, 1e-3));
  ASSERT_TRUE(model.trained());
  model.update("t", {std::vector<float>(kWidth + 2, 1.0f)}, {1e-3});
  EXPECT_EQ(model.num_measurements(), 1u);
  EXPECT_FALSE(model.trained());
}

}  // namespace
}  // namespace tessera::autotune

// The learned cost model: gradient-boosted trees (XGBoost) from a candidate's features
// (autotune/features.h) to its normalized throughput, trained online across tasks. A task's
// measurements are normalized by its own best (min_cost / cost, so 1 is the task's fastest and
// failures are 0), which lets one model learn from every kernel it has seen; the search only
// needs it to rank candidates of one task. Until it has seen enough measurements it predicts
// random scores (the cold start). It saves to and loads from a file, the trees and the
// measurements they were trained on (PATH and PATH.data), so a later session (or a build ranking
// transferred schedules) starts from what earlier ones learned and its retraining adds to it
// rather than replacing it.
#pragma once
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tessera::autotune {

class CostModel {
 public:
  explicit CostModel(uint64_t seed = 0);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Adds measurements of `task` (any stable key: the workload) and retrains. `costs` are seconds;
  // <= 0 or not finite marks a candidate that failed. Rows must have equal lengths.
  void update(const std::string& task, const std::vector<std::vector<float>>& features,
              const std::vector<double>& costs);
  // Higher is better. Random while the model is untrained.
  std::vector<double> predict(const std::vector<std::vector<float>>& features);
  bool trained() const { return booster_ != nullptr; }
  size_t num_measurements() const;

  // The trained trees (XGBoost's JSON) at `path` and the measurements at `path`.data; throws
  // tessera::Error naming the file on failure. Measurements of another feature length (saved by
  // a Tessera extracting other features) are dropped at the next update, with the old trees.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  struct TaskData {
    std::vector<std::vector<float>> features;
    std::vector<double> costs;
  };
  void train();
  void save_data(const std::string& path) const;
  static std::map<std::string, TaskData> read_data(const std::string& path);

  std::map<std::string, TaskData> data_;
  void* booster_ = nullptr;  // BoosterHandle
  std::mt19937_64 rng_;
};

}  // namespace tessera::autotune

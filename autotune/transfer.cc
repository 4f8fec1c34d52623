#include "autotune/transfer.h"

#include <algorithm>
#include <filesystem>

#include "autotune/features.h"
#include "autotune/search_space.h"

namespace tessera::autotune {

std::string cost_model_path(const std::string& db_path) {
  std::filesystem::path p(db_path);
  return (p.parent_path() / (p.stem().string() + ".costmodel.json")).string();
}

ScheduleTransfer::ScheduleTransfer(TuningDatabase& db, std::string target, TransferOptions options)
    : db_(db), target_(std::move(target)), options_(std::move(options)) {
  std::string path = cost_model_path(db.path());
  if (std::filesystem::exists(path)) {
    model_ = std::make_unique<CostModel>();
    model_->load(path);
  }
}

ScheduleTransfer::~ScheduleTransfer() = default;

int ScheduleTransfer::transfer(const Task& task) {
  std::vector<Record> similar =
      db_.similar(task.workload.structure_key, task.workload.key, target_, options_.candidates);
  if (similar.empty()) return 0;
  // The traces that replay and lower on this shape (a split factor may not fit, a fused
  // producer may be absent), with their features for the model.
  SearchSpace space(task.compute);
  std::vector<std::string> traces;
  std::vector<std::vector<float>> features;
  for (const Record& r : similar) {
    if (std::find(traces.begin(), traces.end(), r.trace) != traces.end()) continue;
    try {
      auto s = space.replay(r.trace);
      features.push_back(extract_features(space.lower(*s)));
      traces.push_back(s->trace().to_json());
    } catch (const std::exception&) {
      // Not legal on this shape.
    }
  }
  if (traces.empty()) return 0;
  // `similar` comes fastest first, which is the ranking without a model.
  std::vector<size_t> order(traces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (model_ && model_->trained()) {
    std::vector<double> score = model_->predict(features);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
  }
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(std::max(options_.measured, 1))));

  std::vector<std::string> batch{default_trace(task)};
  std::vector<RecordKind> kinds{RecordKind::Default};
  for (size_t i : order) {
    if (traces[i] == batch[0]) continue;
    batch.push_back(traces[i]);
    kinds.push_back(RecordKind::Transfer);
  }
  // The default is timed again after the candidates, and keeps its better run: a stretch of
  // seconds in which the machine runs at half speed (seen here) must not make the default look
  // slower than candidates timed after it. Noise while a candidate runs only keeps the default.
  bool timed_twice = batch.size() > 1;
  if (timed_twice) {
    batch.push_back(batch[0]);
    kinds.push_back(kinds[0]);
  }
  if (!measurer_) measurer_ = std::make_unique<Measurer>(options_.measure);
  std::vector<MeasureResult> results = measurer_->measure(task, target_, batch);
  if (timed_twice) {
    results.front() = faster(results.front(), results.back());
    results.pop_back();
  }
  std::vector<Record> records;
  for (size_t i = 0; i < results.size(); ++i)
    records.push_back(make_record(task, target_, batch[i], results[i], kinds[i]));
  db_.add_workload(task.workload);
  db_.commit(records);
  return static_cast<int>(records.size()) - 1;
}

}  // namespace tessera::autotune

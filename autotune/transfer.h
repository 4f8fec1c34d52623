// Schedule transfer: a workload with no record of its own borrows the best schedules of
// workloads with the same structure (same computation, other shapes). Their traces are replayed
// on its shape; those that replay and lower are ranked by the cost model a tuning session saved
// next to the database (or by their own measured speed when there is none), and the first few
// are measured against the default schedule in the isolated workers (the default timed before
// and after them, keeping its better run). Every measurement is committed (RecordKind::Transfer,
// the baseline as RecordKind::Default), so the database's best record is the winner and the next build
// reuses it without measuring.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "autotune/cost_model.h"
#include "autotune/database.h"
#include "autotune/measure.h"
#include "autotune/task.h"

namespace tessera::autotune {

struct TransferOptions {
  int candidates = 16;  // best records of similar workloads considered
  int measured = 3;     // of those that replay, how many the ranking sends to measurement
  MeasureOptions measure;
};

// The cost model file a tuning session keeps beside `db_path` ("tuning.db" -> "tuning.costmodel.json",
// its training data in "tuning.costmodel.json.data").
std::string cost_model_path(const std::string& db_path);

class ScheduleTransfer {
 public:
  // `db` must outlive this object.
  ScheduleTransfer(TuningDatabase& db, std::string target, TransferOptions options = {});
  ~ScheduleTransfer();

  // For a task without records for the target: what was measured (nothing when no similar
  // workload has a trace that replays on it), after which db.best() holds the winner. Returns
  // the number of transferred traces measured. Throws tessera::Error when measurement cannot
  // run at all (no worker executable).
  int transfer(const Task& task);

 private:
  TuningDatabase& db_;
  std::string target_;
  TransferOptions options_;
  std::unique_ptr<CostModel> model_;  // null: no session saved one
  std::unique_ptr<Measurer> measurer_;
};

}  // namespace tessera::autotune

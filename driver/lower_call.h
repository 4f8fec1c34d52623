// One call of the graph as one kernel: its compute definition (relay_ir/compute_of_call.h)
// under a schedule chosen in this order — a custom schedule registered for the workload or op,
// unless the tuning database measured it and holds a faster record; else the database's chosen
// record for the workload and target (TuningDatabase::chosen; first transferred from similar
// workloads when it has none of its own); else the default template of the anchor op's tag —
// lowered to a LoweredFunc.
#pragma once
#include <cstdint>
#include <string>

#include "autotune/database.h"
#include "autotune/transfer.h"
#include "relay_ir/expr.h"
#include "tensor_ir/stmt.h"

namespace tessera::driver {

struct ScheduleContext {
  autotune::TuningDatabase* db = nullptr;          // none: no records
  std::string target;                              // canonical target string records are keyed by
  autotune::ScheduleTransfer* transfer = nullptr;  // none: workloads without records take the default
  schedule::HardwareParams hardware;  // the target's: compute definitions and default schedules are sized by it
};

struct LoweredCall {
  tensor_ir::LoweredFunc func;  // arguments: the call's inputs, then its outputs
  size_t num_outputs = 0;
  std::string workload;  // the workload key
  std::string schedule;  // where the schedule came from: "default", "tuned (record 12)",
                         // "transferred (record 40)", "custom (conv)", ...
  int64_t record = 0;    // the tuning record whose trace the schedule replays; 0: none
};

// `call` must be typed (InferType). Errors name the op and the call's origin.
LoweredCall lower_call(const relay_ir::CallNode* call, const std::string& kernel_name, const ScheduleContext& ctx);

// A key that is equal for calls that compile to the same kernel (op, attributes, types).
std::string kernel_key(const relay_ir::CallNode* call);

}  // namespace tessera::driver

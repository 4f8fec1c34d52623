#include "driver/lower_call.h"

#include "autotune/apply_record.h"
#include "autotune/workload.h"
#include "relay_ir/compute_of_call.h"
#include "relay_ir/op.h"
#include "relay_ir/printer.h"
#include "runtime/error.h"
#include "schedule/custom.h"
#include "schedule/lower.h"
#include "schedule/templates/cpu.h"

namespace tessera::driver {

using namespace relay_ir;

std::string kernel_key(const CallNode* call) {
  if (const auto* f = call->op.as<FunctionNode>()) {
    PrintOptions o;
    o.show_origins = false;  // where a layer came from does not change its kernel
    return to_text(Expr(f), o);  // includes every type and attribute
  }
  std::string key = call->op_def()->name + "(";
  for (const auto& a : call->args) key += to_string(a->checked_type) + ",";
  key += ")";
  for (const auto& [k, v] : call->attrs.items()) key += k + "=" + attr_to_string(v) + ";";
  return key;
}

LoweredCall lower_call(const CallNode* call, const std::string& kernel_name, const ScheduleContext& ctx) {
  CallCompute compute = compute_of_call(call);
  try {
    LoweredCall out;
    out.num_outputs = compute.outputs.size();
    out.workload = autotune::make_workload(compute.outputs, call_description(call)).key;
    std::unique_ptr<schedule::Schedule> schedule;
    if (ctx.db) {
      if (auto record = ctx.db->best(out.workload, ctx.target)) {
        try {
          schedule = autotune::schedule_from_record(*record, compute.outputs);
          out.schedule = "tuned (record " + std::to_string(record->id) + ")";
        } catch (const Error& e) {
          // A record that no longer replays (the compute definition changed meaning) is not used.
          out.schedule = std::string("default: record ") + std::to_string(record->id) + " does not replay: " + e.what();
        }
      }
    }
    if (!schedule) {
      // A schedule registered for the workload, else for what the kernel computes.
      const schedule::CpuTemplate* custom = schedule::find_custom_schedule(out.workload);
      std::string key = out.workload;
      if (!custom) custom = schedule::find_custom_schedule(key = call_description(call));
      if (custom) {
        schedule = std::make_unique<schedule::Schedule>(compute.outputs);
        for (const auto& o : compute.outputs) (*custom)(*schedule, o);
        out.schedule = "custom (" + key + ")";
      }
    }
    if (!schedule) {
      schedule = schedule::default_cpu_schedule(compute.outputs, compute.anchor);
      if (out.schedule.empty()) out.schedule = "default";
    }
    std::vector<tensor_ir::Tensor> args = compute.inputs;
    args.insert(args.end(), compute.outputs.begin(), compute.outputs.end());
    out.func = schedule::lower(*schedule, args, kernel_name);
    return out;
  } catch (const Error& e) {
    fail(call_origin(call), ": ", e.what());
  }
}

}  // namespace tessera::driver

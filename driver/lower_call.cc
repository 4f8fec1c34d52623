#include "driver/lower_call.h"

#include <algorithm>

#include "autotune/apply_record.h"
#include "autotune/task.h"
#include "autotune/workload.h"
#include "driver/conv_form_versions.h"
#include "driver/conv_width_versions.h"
#include "driver/kernel_versions.h"
#include "driver/row_count_versions.h"
#include "relay_ir/compute_of_call.h"
#include "relay_ir/op.h"
#include "relay_ir/printer.h"
#include "runtime/error.h"
#include "schedule/custom.h"
#include "schedule/lower.h"
#include "schedule/templates/default.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/size_hint.h"

namespace tessera::driver {

using namespace relay_ir;

std::string kernel_key(const CallNode* call) {
  if (const auto* f = call->op.as<FunctionNode>()) {
    PrintOptions o;
    o.show_origins = false;      // where a layer came from does not change its kernel
    return to_text(Expr(f), o);  // includes every type and attribute
  }
  std::string key = call->op_def()->name + "(";
  for (const auto& a : call->args) key += to_string(a->checked_type) + ",";
  key += ")";
  for (const auto& [k, v] : call->attrs.items()) key += k + "=" + attr_to_string(v) + ";";
  return key;
}

namespace {

// How a record is described in `inspect`; `measured_at` (" at L = 128") names the sizes of the
// static kernel it was measured on, when a symbolic kernel replays it.
std::string record_label(const autotune::Record& r, const std::string& measured_at) {
  std::string id = "record " + std::to_string(r.id) + measured_at;
  switch (r.kind) {
    case autotune::RecordKind::Transfer:
      return "transferred (" + id + ")";
    case autotune::RecordKind::Default:
      return "default (measured fastest, " + id + ")";
    case autotune::RecordKind::InModel:
      return "default (faster in the model than the tuned schedule, " + id + ")";
    case autotune::RecordKind::Tuned:
    case autotune::RecordKind::Custom:  // no longer registered: replayed like a tuned schedule
      break;
  }
  return "tuned (" + id + ")";
}

// The database's chosen record of the workload, transferring schedules of similar workloads first
// when it has none and `transfer` allows; `note` explains a miss.
std::optional<autotune::Record> chosen_record(const CallNode* call, const std::string& workload,
                                              const ScheduleContext& ctx, bool transfer, std::string& note) {
  if (!ctx.db) {
    note = " (no tuning database)";
    return std::nullopt;
  }
  auto record = ctx.db->chosen(workload, ctx.target);
  if (!record && transfer) {
    try {
      ctx.transfer->transfer(autotune::task_from_call(call, ctx.hardware));
      record = ctx.db->chosen(workload, ctx.target);
    } catch (const Error& e) {
      note = std::string(" (no record; schedule transfer failed: ") + e.what() + ")";
      return record;
    }
  }
  if (!record) note = transfer ? " (no record, none to transfer)" : " (no record)";
  return record;
}

// The schedule of a kernel; where it came from goes to `label` and, when it replays a record, its
// id to `record_id`.
std::unique_ptr<schedule::Schedule> choose_schedule(const CallNode* call, const CallCompute& compute,
                                                    const std::string& workload, const ScheduleContext& ctx,
                                                    std::string& label, int64_t& record_id) {
  // A schedule registered for the workload, else for what the kernel computes. It yields only to
  // a record measured faster than it (tuning measures it first), which a transfer never is: with
  // one, nothing is transferred.
  // Custom schedules are written for the CPU (GPU ones would bind threads): a GPU has none yet.
  std::string key;
  std::unique_ptr<schedule::Schedule> custom =
      ctx.hardware.is_gpu() ? nullptr
                            : schedule::apply_custom_schedule(compute.outputs, workload, call_description(call), &key);
  std::string note;
  // Transfer measures the kernel, which needs sizes: a symbolic one takes its own records, else
  // those of the static kernel it is at the size hints (tuned at representative sizes).
  const std::vector<tensor_ir::Var> sizes = tensor_ir::size_vars(compute.outputs);
  std::optional<autotune::Record> record =
      chosen_record(call, workload, ctx, ctx.transfer && !custom && sizes.empty(), note);
  std::string measured_at;
  if (!record && !sizes.empty() && ctx.db) {
    std::map<std::string, int64_t> hints;
    for (const tensor_ir::Var& v : sizes) {
      hints[v.name()] = tensor_ir::size_hint(v.name());
      measured_at += (measured_at.empty() ? " at " : ", ") + v.name() + " = " + std::to_string(hints[v.name()]);
    }
    // The static kernel as the graph at those sizes builds it: the same compute, or (a batch of 1)
    // its broadcasts reading the dimensions of size 1 at 0.
    for (bool as_static : {false, true}) {
      const auto hinted = autotune::make_workload(tensor_ir::bind_sizes(compute.outputs, hints, as_static), "");
      if ((record = ctx.db->chosen(hinted.key, ctx.target))) break;
    }
    if (!record) note = " (no record of its own, nor of its static kernel" + measured_at + ")";
  }
  if (custom) {
    // Compared by times taken alone: the model check never times a custom schedule.
    std::optional<autotune::Record> measured, fastest;
    if (record) {
      measured = ctx.db->find(workload, ctx.target, custom->trace().to_json());
      fastest = ctx.db->best(workload, ctx.target);
    }
    // Tuning may measure the custom schedule more than once: it stays if any of its records is
    // the fastest, not only when the latest is.
    if (!record || !measured || fastest->trace == measured->trace ||
        measured->median_seconds() <= fastest->median_seconds()) {
      label = "custom (" + key + ")";
      if (record && !measured) label += "; record " + std::to_string(record->id) + " was never measured against it";
      return custom;
    }
  }
  if (record) {
    try {
      auto s = autotune::schedule_from_record(*record, compute.outputs);
      label = record_label(*record, measured_at);
      record_id = record->id;
      return s;
    } catch (const Error& e) {
      // A record that no longer replays (the compute definition changed meaning) is not used.
      note = " (record " + std::to_string(record->id) + " does not replay: " + e.what() + ")";
    }
  }
  label = "default" + note;
  return schedule::default_schedule(compute.outputs, compute.anchor, compute.hardware);
}

// The kernel of `compute` under the schedule choose_schedule gives it.
LoweredCall lower_compute(const CallNode* call, const CallCompute& compute, const std::string& kernel_name,
                          const ScheduleContext& ctx) {
  LoweredCall out;
  out.num_outputs = compute.outputs.size();
  out.workload = autotune::make_workload(compute.outputs, call_description(call)).key;
  std::unique_ptr<schedule::Schedule> schedule =
      choose_schedule(call, compute, out.workload, ctx, out.schedule, out.record);
  std::vector<tensor_ir::Tensor> args = compute.inputs;
  args.insert(args.end(), compute.outputs.begin(), compute.outputs.end());
  out.func = ctx.hardware.is_gpu()
                 ? schedule::lower_for_device(*schedule, args, kernel_name, ctx.hardware.gpu.warp_size)
                 : schedule::lower(*schedule, args, kernel_name);
  return out;
}

// lower_compute, with versions by output width where the call's blocked convolution has a
// symbolic one, at most kMostVersionedWidth at the hints (conv_width_versions.h).
LoweredCall lower_by_width(const CallNode* call, const CallCompute& compute, const std::string& kernel_name,
                           const ScheduleContext& ctx) {
  LoweredCall out = lower_compute(call, compute, kernel_name, ctx);
  const BlockedConvWidth main = ctx.hardware.is_gpu() ? BlockedConvWidth{} : blocked_conv_width(compute.outputs);
  if (!main.width.defined() || tensor_ir::size_hint(main.width) > kMostVersionedWidth) return out;
  // A version's tile: the width it pads a row of one output to.
  auto tile_of = [&](const BlockedConvWidth& w) -> int64_t {
    auto hints = hints_for_width(compute.outputs, w.width, 1);
    if (!hints) return 0;
    tensor_ir::SizeHintScope scope(*hints);
    return tensor_ir::size_hint(w.padded);
  };
  std::vector<WidthVersion> versions{{out.func, main.padded, tile_of(main)}};
  std::string labels;
  for (const int64_t tile : kAlternativeTiles) {
    auto hints = hints_for_width(compute.outputs, main.width, tile);
    if (!hints) continue;
    tensor_ir::SizeHintScope scope(*hints);
    CallCompute version_compute;
    try {
      version_compute = compute_of_call(call, ctx.hardware);
    } catch (const tensor_ir::ops::WeightPackedForAnotherForm&) {
      continue;  // another form at that width, whose packing the weight (packed for this one) is not
    }
    const BlockedConvWidth w = blocked_conv_width(version_compute.outputs);
    if (!w.width.defined()) continue;  // another form at that width
    const int64_t t = tile_of(w);
    if (std::any_of(versions.begin(), versions.end(), [&](const WidthVersion& v) { return v.tile == t; })) continue;
    LoweredCall version = lower_compute(call, version_compute, kernel_name, ctx);
    versions.push_back({version.func, w.padded, t});
    labels += "; in tiles of " + std::to_string(t) + " positions: " + version.schedule;
  }
  if (versions.size() == 1) return out;
  out.func = choose_by_padded_width(versions);
  out.schedule += labels;
  return out;
}

}  // namespace

LoweredCall lower_call(const CallNode* call, const std::string& kernel_name, const ScheduleContext& ctx) {
  CallCompute compute = compute_of_call(call, ctx.hardware);
  try {
    if (const tensor_ir::Expr winograd = winograd_condition(call); winograd.defined()) {
      // A version per form, each lowered from the call as a static graph makes it (replaying that
      // kernel's records), reading and writing this kernel's arguments.
      std::vector<tensor_ir::Buffer> args;
      for (const auto* tensors : {&compute.inputs, &compute.outputs})
        for (const tensor_ir::Tensor& t : *tensors)
          args.push_back(tensor_ir::BufferNode::make(t.name(), t.dtype(), t->shape, tensor_ir::MemoryScope::Global));
      const std::string workload = autotune::make_workload(compute.outputs, call_description(call)).key;
      auto version = [&](bool winograd_form) {
        OnePackingCall one = with_one_packing(call, winograd_form);
        const auto* c = one.call.as<CallNode>();
        LoweredCall v = lower_by_width(c, compute_of_call(c, ctx.hardware), kernel_name, ctx);
        for (size_t i = 0; i < v.num_outputs; ++i) one.from.push_back(compute.inputs.size() + i);
        v.func = with_arguments(v.func, args, one.from);
        v.workload = workload;
        return v;
      };
      const bool main_winograd = tensor_ir::size_hint(winograd) != 0;
      LoweredCall out = version(main_winograd);
      auto hints = hints_where(compute.outputs, winograd, !main_winograd);
      if (!hints) return out;  // the other form is never chosen near the hints
      tensor_ir::SizeHintScope scope(*hints);
      LoweredCall other = version(!main_winograd);
      out.func = main_winograd ? choose_by_condition(out.func, other.func, winograd)
                               : choose_by_condition(other.func, out.func, winograd);
      out.schedule += std::string("; where Winograd's form ") + (main_winograd ? "does not pay: " : "pays: ") +
                      other.schedule;
      return out;
    }
    LoweredCall out = lower_by_width(call, compute, kernel_name, ctx);
    // A GPU's product templates take any row count alike.
    const tensor_ir::Expr main_rows = ctx.hardware.is_gpu() ? tensor_ir::Expr() : product_rows(compute.outputs);
    if (!main_rows.defined()) return out;
    const size_t main = row_count_class(tensor_ir::size_hint(main_rows));
    std::vector<tensor_ir::LoweredFunc> versions(row_count_classes().size());
    versions[main] = out.func;
    tensor_ir::Expr rows = main == 0 ? main_rows : tensor_ir::Expr();  // unpadded in the one-row version
    std::string labels;
    for (size_t c = 0; c < versions.size(); ++c) {
      if (c == main) continue;
      tensor_ir::SizeHintScope hints(hints_for_class(compute.outputs, main_rows, c));
      CallCompute version_compute = compute_of_call(call, ctx.hardware);
      const tensor_ir::Expr version_rows = product_rows(version_compute.outputs);
      // Rows that stay in another class at those hints (a convolution's positions over a batch of
      // 1); without a version of one row, the rows are not known unpadded.
      if (!version_rows.defined() || row_count_class(tensor_ir::size_hint(version_rows)) != c) {
        if (c == 0) return out;
        continue;
      }
      if (c == 0) rows = version_rows;
      LoweredCall version = lower_compute(call, version_compute, kernel_name, ctx);
      versions[c] = version.func;
      labels += "; at " + row_count_classes()[c].name + ": " + version.schedule;
    }
    out.func = choose_by_row_count(versions, main, rows);
    out.schedule += labels;
    return out;
  } catch (const Error& e) {
    fail(call_origin(call), ": ", e.what());
  }
}

}  // namespace tessera::driver

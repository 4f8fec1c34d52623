#include "driver/build.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "driver/constant_pool.h"
#include "driver/lower_call.h"
#include "relay_ir/compute_of_call.h"
#include "driver/memory_plan.h"
#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/pass.h"
#include "relay_ir/transforms/passes.h"
#include "driver/evaluate.h"
#include "runtime/error.h"
#include "targets/build.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/shape_expr.h"
#include "tensor_ir/size_hint.h"

namespace tessera::driver {

using namespace relay_ir;
using Info = runtime::GraphPlan::TensorInfo;

namespace {

constexpr size_t kMaxKernelName = 96;

// Walks the main function once, producers first, turning values into plan tensors and calls
// into steps.
class PlanBuilder {
 public:
  explicit PlanBuilder(ScheduleContext ctx) : ctx_(std::move(ctx)) {}

  BuildResult run(const Module& m, const targets::Target& target, bool jit, ConstantPool* constants) {
    const Function& main = m.main();
    for (const auto& p : main->params) {  // a symbolic plan names the variables of the inputs' shapes
      const Shape& shape = as_tensor(p->checked_type, "input %" + p->name).shape;
      for (const auto& d : tensor_ir::to_symbolic_shape(shape.dims())) d.collect_vars(plan_.shape_vars);
    }
    for (size_t i = 0; i < main->params.size(); ++i) {
      const auto& t = as_tensor(main->params[i]->checked_type, "input %" + main->params[i]->name);
      ids_[main->params[i].get()] = {add_tensor(Info::Input, main->params[i]->name, t, static_cast<int>(i))};
      plan_.inputs.push_back(ids_[main->params[i].get()][0]);
    }
    // The insides of fused functions are compiled with their calls, not walked here.
    std::unordered_set<const ExprNode*> inner;
    for (const Expr& e : post_order(main->body))
      if (const auto* f = e.as<FunctionNode>())
        for (const Expr& x : post_order(Expr(f))) inner.insert(x.get());
    for (const Expr& e : post_order(main->body))
      if (!inner.count(e.get())) visit(e);
    mark_outputs(ids_.at(main->body.get()));
    plan_memory(plan_);
    if (constants) constants->intern(plan_.constants);
    BuildResult result;
    result.kernels = kernels_;
    result.optimized = m;
    result.lowered = lowered_;
    result.target = target;
    result.plan = plan_;
    if (jit)
      result.executor = std::make_shared<runtime::GraphExecutor>(targets::build(lowered_, target), std::move(plan_),
                                                                 targets::find_device(target).value_or(
                                                                     runtime::Device{target.device_type(), 0}));
    return result;
  }

 private:
  int add_tensor(Info::Kind kind, const std::string& name, const TensorTypeNode& t, int index) {
    // A symbolic shape's values come with the sizes of each call (GraphExecutor).
    plan_.tensors.push_back(
        {kind, name, t.shape.is_static() ? t.shape.ints() : std::vector<int64_t>(t.shape.size()), t.dtype, index});
    if (plan_.is_symbolic()) {
      runtime::SymbolicShape shape = tensor_ir::to_symbolic_shape(t.shape.dims());
      std::vector<std::string> vars;
      for (const auto& d : shape) d.collect_vars(vars);
      for (const auto& v : vars)
        if (std::find(plan_.shape_vars.begin(), plan_.shape_vars.end(), v) == plan_.shape_vars.end())
          fail(name, ": its shape ", runtime::symbolic_shape_str(shape), " has the variable ", v,
               ", which no input's shape has, so no call can give it a value");
      plan_.symbolic_shapes.push_back(std::move(shape));
    } else if (!t.shape.is_static()) {
      fail("internal error: ", name, " has the symbolic shape ", t.shape.str(), " in a plan of static inputs");
    }
    return static_cast<int>(plan_.tensors.size()) - 1;
  }

  void visit(const Expr& e) {
    if (ids_.count(e.get()) || e.as<OpNode>()) return;
    std::vector<int> ids;
    if (const auto* c = e.as<ConstantNode>()) {
      plan_.constants.push_back(c->data);
      const auto& t = as_tensor(e->checked_type, "constant");
      ids.push_back(add_tensor(Info::Constant, "constant", t, static_cast<int>(plan_.constants.size()) - 1));
    } else if (const auto* call = e.as<CallNode>()) {
      ids = visit_call(call);
    } else if (const auto* t = e.as<TupleNode>()) {
      for (const auto& x : t->elements) {
        const auto& sub = ids_.at(x.get());
        ids.insert(ids.end(), sub.begin(), sub.end());
      }
    } else if (const auto* g = e.as<TupleGetItemNode>()) {
      // Tuples flatten to consecutive tensors; find where element `index` starts.
      const auto* tt = g->tuple->checked_type.as<TupleTypeNode>();
      size_t begin = 0;
      for (int64_t i = 0; i < g->index; ++i) begin += count_tensors(tt->elements[i]);
      const auto& all = ids_.at(g->tuple.get());
      ids.assign(all.begin() + begin, all.begin() + begin + count_tensors(tt->elements[g->index]));
    } else if (e.as<VarNode>()) {
      fail("internal error: variable %", e.as<VarNode>()->name, " is not a parameter of main");
    } else {
      fail("build: nested functions are not supported yet");
    }
    ids_[e.get()] = ids;
  }

  // Every op of the call at most broadcasts: each output element reads the same element of
  // inputs shaped like the output (memory planning may then write the output in place).
  static bool is_elementwise(const CallNode* call) {
    if (const OpDef* def = call->op_def()) return def->pattern <= OpPattern::Broadcast;
    for (const Expr& e : post_order(call->op))
      if (const auto* c = e.as<CallNode>(); c && c->op_def() && c->op_def()->pattern > OpPattern::Broadcast)
        return false;
    return true;
  }

  static size_t count_tensors(const Type& t) {
    if (t.as<TensorTypeNode>()) return 1;
    size_t n = 0;
    for (const auto& e : t.as<TupleTypeNode>()->elements) n += count_tensors(e);
    return n;
  }

  std::vector<int> visit_call(const CallNode* call) {
    if (!call->op_def() && !call->op.as<FunctionNode>()->attrs.has("primitive"))
      fail("build: calls of non-primitive functions are not supported");
    if (call->op_def() && call->op_def()->is_view) {
      // A view: the output is the input's storage under the new shape; no kernel runs.
      const auto& t = as_tensor(call->checked_type, call->op_def()->name + " output");
      int id = add_tensor(Info::Intermediate, call->op_def()->name, t, -1);
      plan_.tensors[id].alias_of = ids_.at(call->args[0].get()).at(0);
      return {id};
    }
    std::string key = kernel_key(call);
    auto found = kernel_by_key_.find(key);
    size_t kernel;
    if (found == kernel_by_key_.end()) {
      std::string name = "k" + std::to_string(kernels_.size()) + "_" + call_description(call);
      for (auto& ch : name)
        if (ch == '.') ch = '_';
      // Its number makes it unique; a device compiler may name files after it (PoCL's cache fails
      // past 255 bytes), so a fused group of many ops keeps the names of its first ones.
      if (name.size() > kMaxKernelName) name = name.substr(0, name.rfind('_', kMaxKernelName));
      LoweredCall lowered = lower_call(call, name, ctx_);
      kernel = kernels_.size();
      kernel_by_key_[key] = kernel;
      std::string signature;
      for (const auto& a : lowered.func.args) {
        signature += (signature.empty() ? "" : ", ") + a.dtype().str() + "[";
        for (size_t d = 0; d < a->shape.size(); ++d) signature += (d ? ", " : "") + tensor_ir::to_string(a->shape[d]);
        signature += "]";
      }
      kernels_.push_back({name, call_description(call), signature, tensor_ir::to_string(lowered.func), 0,
                          lowered.workload, lowered.schedule, lowered.record});
      lowered_.push_back(lowered.func);
    } else {
      kernel = found->second;
    }
    kernels_[kernel].calls++;
    add_nonempty_dims(call);
    runtime::GraphPlan::Step step{kernels_[kernel].name, {}, is_elementwise(call)};
    for (const auto& a : call->args) {
      const auto& sub = ids_.at(a.get());
      if (sub.size() != 1) fail(call_description(call), ": tuple arguments are not supported");
      step.args.push_back(sub[0]);
    }
    std::vector<int> outs;
    std::vector<Type> out_types;
    flatten_types(call->checked_type, out_types);
    for (size_t i = 0; i < out_types.size(); ++i) {
      const auto& t = as_tensor(out_types[i], call_description(call) + " output");
      outs.push_back(add_tensor(Info::Intermediate,
                                call_description(call) + (call->origin.empty() ? "" : ":" + call->origin), t, -1));
    }
    step.args.insert(step.args.end(), outs.begin(), outs.end());
    plan_.steps.push_back(step);
    return outs;
  }

  // The dimensions the ops of `call` (a fused group's members) need non-empty at each call.
  void add_nonempty_dims(const CallNode* call) {
    std::vector<const CallNode*> ops{call};
    if (const auto* f = call->op.as<FunctionNode>()) ops = member_calls(f);
    for (const CallNode* op : ops) {
      if (!op->op_def() || !op->op_def()->nonempty_dims) continue;
      for (const OpDef::NonEmptyDim& n : op->op_def()->nonempty_dims(*op))
        plan_.nonempty.push_back(
            {tensor_ir::to_symbolic_shape({n.dim}).at(0),
             call_origin(op) + " " +
                 (n.need.empty() ? "reads an element along a dimension that must have one" : n.need),
             tensor_ir::to_symbolic_shape({n.reads}).at(0)});
    }
  }

  static void flatten_types(const Type& t, std::vector<Type>& out) {
    if (t.as<TensorTypeNode>()) {
      out.push_back(t);
      return;
    }
    for (const auto& e : t.as<TupleTypeNode>()->elements) flatten_types(e, out);
  }

  // Graph outputs computed by a step are written straight into output buffers; inputs,
  // constants and repeated outputs are copied.
  void mark_outputs(const std::vector<int>& ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      Info& t = plan_.tensors[ids[i]];
      std::string name = "output" + std::to_string(i);
      if (t.kind == Info::Intermediate && t.alias_of < 0) {
        t.kind = Info::Output;
        t.index = static_cast<int>(i);
        t.name = name;
        plan_.outputs.push_back(ids[i]);
        continue;
      }
      Info copy = t;
      copy.alias_of = -1;
      copy.kind = Info::Output;
      copy.index = static_cast<int>(i);
      copy.name = name;
      plan_.tensors.push_back(copy);
      if (plan_.is_symbolic()) plan_.symbolic_shapes.push_back(plan_.symbolic_shapes.at(ids[i]));
      int id = static_cast<int>(plan_.tensors.size()) - 1;
      plan_.steps.push_back({"", {ids[i], id}});
      plan_.outputs.push_back(id);
    }
  }

  ScheduleContext ctx_;
  runtime::GraphPlan plan_;
  std::unordered_map<const ExprNode*, std::vector<int>> ids_;
  std::unordered_map<std::string, size_t> kernel_by_key_;
  std::vector<KernelInfo> kernels_;
  std::vector<tensor_ir::LoweredFunc> lowered_;
};

}  // namespace

Module optimize(const Module& module, const schedule::HardwareParams& hardware, int opt_level) {
  PassContext ctx;
  // Packed weights, Winograd and channels-last convolutions (level 3) are CPU layouts.
  ctx.opt_level = hardware.is_gpu() ? std::min(opt_level, 2) : opt_level;
  ctx.options = set_registers(ctx.options, hardware.registers);
  ctx.evaluate = [](const Expr& e) { return evaluate(e); };
  return run_passes(module, standard_passes(), ctx);
}

void validate(const BuildOptions& options) {
  if (options.opt_level < 0 || options.opt_level > 3)
    fail("opt_level (-O) must be 0, 1, 2 or 3 (got ", options.opt_level, ")");
}

BuildResult build(const Module& module, const targets::Target& target, const BuildOptions& options) {
  validate(options);
  const schedule::HardwareParams hardware = target.hardware();
  // The hints are in scope for the graph passes too: where AlterOpLayout packs a weight for a
  // form chosen by the sizes, lowering reads that packing.
  tensor_ir::SizeHintScope hints(options.size_hints);
  Module optimized = optimize(module, hardware, options.opt_level);
  std::unique_ptr<autotune::TuningDatabase> db;
  if (!options.db_path.empty()) db = autotune::TuningDatabase::open_existing(options.db_path);
  targets::Target keyed = target.with_host_defaults(), host = targets::Target::host();
  std::string key = db ? targets::tuning_key(target) : keyed.str();
  // Transferred schedules are measured, so only for code this machine runs.
  bool runs_here = keyed.kind == "llvm" && keyed.mtriple == host.mtriple && keyed.mcpu == host.mcpu;
  std::unique_ptr<autotune::ScheduleTransfer> transfer;
  if (db && options.transfer && runs_here) transfer = std::make_unique<autotune::ScheduleTransfer>(*db, key);
  ScheduleContext ctx{db.get(), key, transfer.get(), hardware};
  return PlanBuilder(ctx).run(optimized, target, options.jit, options.constants.get());
}

}  // namespace tessera::driver

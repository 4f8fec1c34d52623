#include "schedule/lower.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "runtime/error.h"
#include "schedule/bound_inference.h"
#include "schedule/schedule_ops.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/transforms/hoist_shared_allocations.h"
#include "tensor_ir/transforms/insert_barriers.h"
#include "tensor_ir/transforms/legalize.h"
#include "tensor_ir/transforms/unswitch_clamps.h"
#include "tensor_ir/transforms/narrow_types.h"
#include "tensor_ir/transforms/loop_partition.h"
#include "tensor_ir/transforms/merge_thread_extents.h"
#include "tensor_ir/transforms/storage_flatten.h"
#include "tensor_ir/transforms/vectorize.h"

namespace tessera::schedule {

using namespace tensor_ir;

namespace {

// Writes the IR after a lowering step where TESSERA_DUMP_IR asks for it. A kernel lowered again
// in the process (its versions for other sizes, another form) writes files of its own, k.v2.*.
class StepLog {
 public:
  explicit StepLog(std::string func) : func_(std::move(func)) {
    const char* env = std::getenv("TESSERA_DUMP_IR");
    if (!env || !*env) return;
    target_ = env;
    static std::mutex mutex;
    static std::map<std::string, int> lowerings;
    std::lock_guard<std::mutex> lock(mutex);
    if (const int n = ++lowerings[func_]; n > 1) file_ = func_ + ".v" + std::to_string(n);
    else file_ = func_;
  }
  void operator()(const std::string& step, const Stmt& s) {
    if (target_.empty()) return;
    std::string text = "// " + func_ + " after " + step + "\n" + to_string(s) + "\n";
    if (target_ == "1") {
      std::cerr << text;
    } else {
      std::ofstream out(target_ + "/" + file_ + "." + std::to_string(++count_) + "." + step + ".tir");
      out << text;
    }
  }

 private:
  std::string func_, target_, file_;
  int count_ = 0;
};

void check_args(const Schedule& schedule, const std::vector<Tensor>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) fail("lower: argument ", i, " is undefined");
    for (size_t j = 0; j < i; ++j)
      if (args[j].same_as(args[i])) fail("lower: tensor ", args[i].name(), " is listed twice in the arguments");
  }
  for (const auto& out : schedule.outputs()) {
    bool found = false;
    for (const auto& a : args) found |= a.same_as(out);
    if (!found) fail("lower: output ", out.name(), " must be one of the arguments");
  }
}

// The variables of the arguments' symbolic dimensions, in order of first appearance. A caller
// gives their values: the graph executor from its plan, a call with shapes alone from an argument
// dimension that is the variable by itself or times a constant (runtime::bind_shape_vars, which
// names a variable no argument tells).
std::vector<Var> shape_vars_of(const std::vector<Tensor>& args) {
  std::vector<Var> vars;
  for (const Tensor& t : args)
    for (const Expr& d : t->shape)
      for (const Var& v : vars_of(d)) {
        if (std::any_of(vars.begin(), vars.end(), [&](const Var& x) { return x.same_as(v); })) continue;
        // The runtime binds values by name.
        if (std::any_of(vars.begin(), vars.end(), [&](const Var& x) { return x.name() == v.name(); }))
          fail("lower: two different dimension variables are named ", v.name(), " (make one te.var and use it)");
        vars.push_back(v);
      }
  return vars;
}

// Variables `body` reads that nothing in it binds: dimension variables a computation uses without
// any argument having them in its shape (a graph's shape values: relay_ir's shape_values).
class UnboundVars : public IRVisitor {
 public:
  std::vector<Var> vars;

 protected:
  void visit_(const VarNode* op) override {
    if (bound_.count(op) || std::any_of(vars.begin(), vars.end(), [&](const Var& v) { return v.get() == op; })) return;
    vars.push_back(Var(op));
  }
  void visit_(const For* op) override { bind(op->var, op); }
  void visit_(const LetStmt* op) override { bind(op->var, op); }
  void visit_(const ThreadExtent* op) override { bind(op->var, op); }
  void visit_(const Let* op) override { bind(op->var, op); }

 private:
  template <typename T>
  void bind(const Var& v, const T* op) {
    bound_.insert(v.get());
    IRVisitor::visit_(op);
  }
  std::set<const VarNode*> bound_;
};

// The arguments' dimension variables, then those only the body uses.
std::vector<Var> kernel_shape_vars(const std::vector<Tensor>& args, const Stmt& body) {
  std::vector<Var> vars = shape_vars_of(args);
  UnboundVars unbound;
  unbound.visit(body);
  for (const Var& v : unbound.vars)
    if (std::none_of(vars.begin(), vars.end(), [&](const Var& x) { return x.same_as(v); })) vars.push_back(v);
  return vars;
}

// What simplification may assume of a kernel's symbolic dimensions: they are never negative.
arith::BoundMap dimension_bounds(const std::vector<Var>& shape_vars) {
  arith::BoundMap bounds;
  for (const Var& v : shape_vars) bounds[v.get()] = {0, arith::ConstBound::kPosInf};
  return bounds;
}

// The steps both lowerings share: bound inference, the loop nest (thread-bound loops merged into
// one launch per tag), storage flattening, simplification. On a device each buffer lives in its
// stage's memory scope; on a CPU every intermediate is the kernel's own memory (Local), whatever
// scope a schedule wrote for a GPU.
LoweredFunc lower_loop_nest(Schedule& schedule, const std::vector<Tensor>& user_args, const std::string& name,
                            const DeviceNest* device, StepLog& log) {
  // The user names tensors as created; stages may have replaced them (cache_write, rfactor).
  std::vector<Tensor> args;
  // A placeholder the computation never reads is still an argument (an unused input).
  for (const auto& t : user_args) args.push_back(t && !t.as<tensor_ir::PlaceholderOp>() ? schedule[t].op() : t);
  check_args(schedule, args);

  LoweringPlan plan = infer_bounds(schedule);
  Stmt body = merge_thread_extents(schedule_ops(schedule, plan, device));
  log("schedule_ops", body);

  FlattenOptions flatten;
  LoweredFunc func;
  func.name = name;
  for (size_t i = 0; i < args.size(); ++i) {
    Buffer buffer = BufferNode::make(user_args[i].name(), args[i].dtype(), args[i]->shape, MemoryScope::Global);
    flatten.args.emplace_back(args[i], buffer);
    func.args.push_back(buffer);
  }
  func.shape_vars = kernel_shape_vars(args, body);
  for (const auto& st : schedule.stages()) flatten.storage_align[st->op().get()] = st->storage_align();
  if (device)
    for (const auto& p : plan.stages) flatten.scopes[p.stage->op().get()] = parse_memory_scope(p.scope);
  body = storage_flatten(body, flatten);
  log("storage_flatten", body);
  body = lower_narrow_types(body);
  log("lower_narrow_types", body);
  const arith::BoundMap dims = dimension_bounds(func.shape_vars);
  func.body = arith::simplify(body, dims);
  log("simplify", func.body);
  return func;
}

}  // namespace

LoweredFunc lower(Schedule& schedule, const std::vector<Tensor>& user_args, const std::string& name) {
  for (const auto& st : schedule.stages())
    for (const auto& l : st->leaf_loops())
      if (is_thread_tag(l->thread_tag))
        fail("lower: loop ", l->name, " of stage ", st->name(), " is bound to ", l->thread_tag,
             ", which only a device has (lower the schedule for a device: lower_for_device)");
  StepLog log(name);
  LoweredFunc func = lower_loop_nest(schedule, user_args, name, /*device=*/nullptr, log);
  const arith::BoundMap dims = dimension_bounds(func.shape_vars);
  Stmt body = arith::simplify(unswitch_tile_guards(func.body, dims), dims);
  log("unswitch_tile_guards", body);
  body = partition_loops(body, dims);
  body = arith::simplify(body, dims);
  log("partition_loops", body);
  body = arith::simplify(unswitch_clamps(body, dims), dims);
  log("unswitch_clamps", body);
  body = vectorize_loops(body);
  log("vectorize", body);
  func.body = arith::simplify(legalize_for_codegen(body), dims);
  log("legalize", func.body);
  return func;
}

LoweredFunc lower_for_device(Schedule& schedule, const std::vector<Tensor>& user_args, const std::string& name,
                             int warp_size) {
  for (const auto& st : schedule.stages())
    for (const auto& l : st->leaf_loops())
      if (l->for_kind == ForKind::Parallel)
        fail("lower_for_device: loop ", l->name, " of stage ", st->name(),
             " is parallel, which runs on a CPU's thread pool (bind it to blockIdx or threadIdx instead)");
  StepLog log(name);
  const DeviceNest device{warp_size};
  LoweredFunc func = lower_loop_nest(schedule, user_args, name, &device, log);
  Stmt body = arith::simplify(legalize_for_codegen(func.body));
  log("legalize", body);
  body = hoist_shared_allocations(body);
  log("hoist_shared_allocations", body);
  func.body = insert_barriers(body);
  log("insert_barriers", func.body);
  return func;
}

}  // namespace tessera::schedule

#include "autotune/task.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "autotune/workload.h"
#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"
#include "schedule/templates/default.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::autotune {

using namespace relay_ir;

namespace {

// A module calling `call` once on fresh parameters, as text (without origins: the kernel, not
// the layer).
std::string kernel_text(const CallNode* call) {
  std::vector<Var> params;
  std::vector<Expr> args;
  for (size_t i = 0; i < call->args.size(); ++i) {
    Var p("p" + std::to_string(i), call->args[i]->checked_type);
    params.push_back(p);
    args.push_back(p);
  }
  Expr copy(new CallNode(call->op, args, call->attrs));
  PrintOptions o;
  o.show_origins = false;
  return to_text(infer_type(Module(function(params, copy))), o);
}

class ArithmeticCounter : public tensor_ir::IRVisitor {
 public:
  int64_t count = 0;

 protected:
#define TESSERA_COUNT(T)                         \
  void visit_(const tensor_ir::T* op) override { \
    ++count;                                     \
    IRVisitor::visit_(op);                       \
  }
  TESSERA_COUNT(Add)
  TESSERA_COUNT(Mul) TESSERA_COUNT(Div) TESSERA_COUNT(Min) TESSERA_COUNT(Max) TESSERA_COUNT(Call)
#undef TESSERA_COUNT
      // x - 0 is how convolutions and matrix products without a zero point read their operands; it
      // compiles to nothing (counted, it made a pointwise convolution's work 1.5 times its own).
      void visit_(const tensor_ir::Sub* op) override {
    if (!tensor_ir::is_zero(op->b)) ++count;
    IRVisitor::visit_(op);
  }
  // Index arithmetic (clamps, offsets) is addressing, not work.
  void visit_(const tensor_ir::ProducerLoad*) override {}
  // A point takes one side of a select: the costlier one. Summed, the 36 branches of a Winograd
  // transform (one per position of the tile) made its task count 2.3 times a direct
  // convolution's work.
  void visit_(const tensor_ir::Select* op) override {
    ++count;
    visit(op->condition);
    int64_t before = count;
    visit(op->true_value);
    int64_t taken = count - before;
    count = before;
    visit(op->false_value);
    count = before + std::max(taken, count - before);
  }
};

}  // namespace

double estimate_flops(const std::vector<tensor_ir::Tensor>& outputs) {
  double total = 0;
  for (const auto& t : tensor_ir::topological_order(outputs)) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (!c) continue;
    double points = 1;
    for (size_t d = 0; d < c->axis.size(); ++d) points *= static_cast<double>(c->dim(d));
    for (const auto& r : c->reduce_axis())
      if (const int64_t* e = tensor_ir::as_const_int(r->dom.extent)) points *= static_cast<double>(*e);
    ArithmeticCounter counter;
    counter.visit(c->body);
    // A reduction combines once per point too (the accumulate).
    total += points * static_cast<double>(counter.count + (c->reduce_axis().empty() ? 0 : 1));
  }
  return total;
}

Task task_from_kernel(const std::string& text, const schedule::HardwareParams& hardware) {
  Module m = infer_type(parse_module(text));
  const auto* call = m.main()->body.as<CallNode>();
  if (!call) fail("tuning task: the kernel module does not call a kernel");
  Task t;
  t.kernel = text;
  t.compute = compute_of_call(call, hardware);
  t.workload = make_workload(t.compute.outputs, call_description(call));
  t.flops = estimate_flops(t.compute.outputs);
  for (size_t i = 0; i < t.compute.inputs.size(); ++i) t.written_inputs.push_back(i);
  return t;
}

Task task_from_call(const CallNode* call, const schedule::HardwareParams& hardware) {
  Task t = task_from_kernel(kernel_text(call), hardware);
  t.written_inputs.clear();
  for (size_t i = 0; i < call->args.size(); ++i)
    if (!call->args[i].as<ConstantNode>()) t.written_inputs.push_back(i);
  return t;
}

std::string default_trace(const Task& task) {
  return schedule::default_schedule(task.compute.outputs, task.compute.anchor, task.compute.hardware)->trace().to_json();
}

std::vector<Task> extract_tasks(const Module& optimized, const schedule::HardwareParams& hardware) {
  Function main = optimized.main();
  infer_type(Expr(main));
  std::unordered_set<const ExprNode*> inner;
  for (const Expr& e : post_order(main->body))
    if (const auto* f = e.as<FunctionNode>())
      for (const Expr& x : post_order(Expr(f))) inner.insert(x.get());
  std::map<std::string, Task> by_workload;
  std::vector<std::string> order;
  for (const Expr& e : post_order(main->body)) {
    const auto* call = e.as<CallNode>();
    if (!call || inner.count(e.get())) continue;
    if (call->op_def() && call->op_def()->is_view) continue;
    Task t = task_from_call(call, hardware);
    auto it = by_workload.find(t.workload.key);
    if (it != by_workload.end()) {
      it->second.weight++;
      continue;
    }
    order.push_back(t.workload.key);
    by_workload.emplace(t.workload.key, std::move(t));
  }
  std::vector<Task> tasks;
  for (const auto& k : order) tasks.push_back(std::move(by_workload.at(k)));
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& a, const Task& b) { return a.weight * a.flops > b.weight * b.flops; });
  return tasks;
}

}  // namespace tessera::autotune

#include "tensor_ir/graph.h"

#include <unordered_set>

#include "tensor_ir/functor.h"

namespace tessera::tensor_ir {

namespace {
class TensorCollector : public IRVisitor {
 public:
  std::vector<Tensor> tensors;
  void visit_(const ProducerLoad* op) override {
    if (seen_.insert(op->tensor.get()).second) tensors.push_back(op->tensor);
    IRVisitor::visit_(op);
  }

 private:
  std::unordered_set<const Object*> seen_;
};

class LoadCollector : public IRVisitor {
 public:
  explicit LoadCollector(const Object* only) : only_(only) {}
  std::vector<const ProducerLoad*> loads;
  void visit_(const ProducerLoad* op) override {
    if (!only_ || op->tensor.get() == only_) loads.push_back(op);
    IRVisitor::visit_(op);
  }

 private:
  const Object* only_;
};
}  // namespace

std::vector<const ProducerLoad*> loads_in(const Expr& e, const Object* only) {
  LoadCollector collector(only);
  collector.visit(e);
  return collector.loads;
}

std::vector<Tensor> input_tensors(const Tensor& t) {
  const auto* c = t.as<ComputeOp>();
  if (!c) return {};
  TensorCollector collector;
  collector.visit(c->body);
  return collector.tensors;
}

std::vector<Tensor> topological_order(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> order;
  std::unordered_set<const Object*> done;
  // Explicit stack of (tensor, inputs already pushed?) for an iterative post-order walk.
  std::vector<std::pair<Tensor, bool>> stack;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back({*it, false});
  while (!stack.empty()) {
    auto [t, expanded] = stack.back();
    stack.pop_back();
    if (done.count(t.get())) continue;
    if (expanded) {
      done.insert(t.get());
      order.push_back(t);
      continue;
    }
    stack.push_back({t, true});
    auto inputs = input_tensors(t);
    for (auto it = inputs.rbegin(); it != inputs.rend(); ++it)
      if (!done.count(it->get())) stack.push_back({*it, false});
  }
  return order;
}

}  // namespace tessera::tensor_ir

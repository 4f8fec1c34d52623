#include "schedule/templates/element_cost.h"

#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

namespace {

class TranscendentalCalls : public tensor_ir::IRVisitor {
 public:
  explicit TranscendentalCalls(Schedule& s) : s_(s) {}
  int64_t count = 0;

 protected:
  void visit_(const tensor_ir::Call* op) override {
    count += tensor_ir::is_transcendental(op->op);
    IRVisitor::visit_(op);
  }
  void visit_(const tensor_ir::ProducerLoad* op) override {
    IRVisitor::visit_(op);
    const auto* c = op->tensor.as<tensor_ir::ComputeOp>();
    if (c && s_[op->tensor].attach_kind() == AttachKind::Inline) visit(c->body);
  }

 private:
  Schedule& s_;
};

}  // namespace

int64_t element_cost(Schedule& s, const Tensor& t) {
  const auto* c = t.as<tensor_ir::ComputeOp>();
  if (!c) return 1;
  TranscendentalCalls calls(s);
  calls.visit(c->body);
  return 1 + kTranscendentalCost * calls.count;
}

}  // namespace tessera::schedule

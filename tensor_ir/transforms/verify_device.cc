#include "tensor_ir/transforms/verify_device.h"

#include <unordered_set>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {

// Whether an expression reads one of `vars`.
class Reads : public IRVisitor {
 public:
  explicit Reads(const std::unordered_set<const VarNode*>& vars) : vars_(vars) {}
  bool found = false;

 private:
  void visit_(const VarNode* op) override { found |= vars_.count(op) > 0; }
  const std::unordered_set<const VarNode*>& vars_;
};

class KernelVerifier : public IRVisitor {
 public:
  explicit KernelVerifier(const std::string& kernel) : kernel_(kernel) {}

 private:
  bool reads_thread_index(const Expr& e) const {
    Reads r(thread_vars_);
    r.visit(e);
    return r.found;
  }
  void require_thread_extent(const char* what, const std::string& name) const {
    if (thread_extents_ == 0)
      fail("kernel '", kernel_, "': ", what, " '", name,
           "' is outside every thread extent; bind it (or a loop around it) to blockIdx or threadIdx");
  }
  // Runs `visit_body` with `condition` (when it depends on the thread index) as divergent.
  template <typename F>
  void under(const Expr& condition, F visit_body) {
    const bool divergent = reads_thread_index(condition);
    if (divergent) divergent_.push_back(condition);
    visit_body();
    if (divergent) divergent_.pop_back();
  }

  void visit_(const ThreadExtent* op) override {
    // blockIdx is the same for every thread of a block, so only threadIdx makes control flow diverge.
    if (thread_tag_index(op->tag) >= 3) thread_vars_.insert(op->var.get());
    ++thread_extents_;
    visit(op->body);
    --thread_extents_;
  }
  void visit_(const For* op) override {
    require_thread_extent("loop", op->var.name());
    under(LT::make(op->var, Add::make(op->min, op->extent)), [&] { visit(op->body); });
  }
  void visit_(const IfThenElse* op) override {
    under(op->condition, [&] {
      visit(op->then_case);
      if (op->else_case) visit(op->else_case);
    });
  }
  void visit_(const LetStmt* op) override {
    if (reads_thread_index(op->value)) thread_vars_.insert(op->var.get());
    visit(op->body);
  }
  void visit_(const Store* op) override {
    require_thread_extent("the store to buffer", op->buffer.name());
    IRVisitor::visit_(op);
  }
  void visit_(const Call* op) override {
    if (op->op == Intrinsic::warp_shuffle_down && !divergent_.empty())
      fail("kernel '", kernel_, "': a warp shuffle under control flow that depends on the thread index (",
           divergent_.back(), "): every lane of a warp must take part in it");
    IRVisitor::visit_(op);
  }
  void visit_(const Evaluate* op) override {
    const auto* call = op->value.as<Call>();
    if (!call || call->op != Intrinsic::barrier) return IRVisitor::visit_(op);
    require_thread_extent("statement", "barrier()");
    if (!divergent_.empty())
      fail("kernel '", kernel_, "': a barrier under control flow that depends on the thread index (", divergent_.back(),
           "): threads that skip it would leave the others waiting");
  }

  const std::string& kernel_;
  int thread_extents_ = 0;
  std::unordered_set<const VarNode*> thread_vars_;  // threadIdx variables and lets computed from them
  std::vector<Expr> divergent_;                     // enclosing conditions that read them
};

}  // namespace

void verify_device_program(const DeviceProgram& program, const DeviceLimits& limits) {
  for (const DeviceKernel& k : program.kernels) {
    const std::string& name = k.func.name;
    if (k.threads_per_block() > limits.max_threads_per_block)
      fail("kernel '", name, "' has ", k.threads_per_block(), " threads per block (threadIdx extents ", k.block[0],
           " x ", k.block[1], " x ", k.block[2], "); the device allows ", limits.max_threads_per_block);
    if (k.shared_bytes > limits.max_shared_memory_bytes)
      fail("kernel '", name, "' needs ", k.shared_bytes, " bytes of shared memory per block; the device allows ",
           limits.max_shared_memory_bytes);
    KernelVerifier(name).visit(k.func.body);
  }
}

}  // namespace tessera::tensor_ir

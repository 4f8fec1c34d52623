#include "tensor_ir/transforms/insert_barriers.h"

#include <algorithm>
#include <vector>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

struct Access {
  const BufferNode* buffer;
  Expr index;
  bool write;
};
using Accesses = std::vector<Access>;

bool is_barrier(const Stmt& s) {
  const auto* e = s.as<Evaluate>();
  const auto* call = e ? e->value.as<Call>() : nullptr;
  return call && call->op == Intrinsic::barrier;
}

Stmt barrier() { return Evaluate::make(Call::make(runtime::kInt32, Intrinsic::barrier, {})); }

// The shared-buffer accesses of a statement, reads before the write of each store.
class SharedAccesses : public IRVisitor {
 public:
  Accesses accesses;

 protected:
  void visit_(const Load* op) override {
    IRVisitor::visit_(op);
    if (op->buffer->scope == MemoryScope::Shared) accesses.push_back({op->buffer.get(), op->index, false});
  }
  void visit_(const Store* op) override {
    IRVisitor::visit_(op);
    if (op->buffer->scope == MemoryScope::Shared) accesses.push_back({op->buffer.get(), op->index, true});
  }
};

Accesses shared_accesses(const Stmt& s) {
  SharedAccesses collect;
  collect.visit(s);
  return collect.accesses;
}

// Whether `later` may touch what another thread's `earlier` access did, one of them a write.
bool conflict(const Accesses& earlier, const Accesses& later) {
  for (const auto& a : earlier)
    for (const auto& b : later)
      if (a.buffer == b.buffer && a.write != b.write && !structural_equal(a.index, b.index)) return true;
  return false;
}

// Each access once: loops are visited twice at every level of a nest, and lists that kept the
// repeats would grow exponentially with its depth.
void append(Accesses& to, const Accesses& from) {
  for (const Access& a : from) {
    const bool seen = std::any_of(to.begin(), to.end(), [&](const Access& b) {
      return a.buffer == b.buffer && a.write == b.write && structural_equal(a.index, b.index);
    });
    if (!seen) to.push_back(a);
  }
}

class BarrierInserter {
 public:
  Stmt run(const Stmt& s) {
    Accesses pending;
    return visit(s, pending);
  }

 private:
  // `pending`: the shared accesses since the last barrier, before `s` and then after it.
  Stmt visit(const Stmt& s, Accesses& pending) {
    if (const auto* op = s.as<ThreadExtent>()) {
      bool is_thread = op->tag.rfind("threadIdx", 0) == 0;
      if (is_thread) threads_.push_back(op->var.get());
      Stmt body;
      if (in_kernel_) {
        body = visit(op->body, pending);
      } else {
        in_kernel_ = true;
        Accesses kernel;
        body = visit(op->body, kernel);
        in_kernel_ = false;
      }
      if (is_thread) threads_.pop_back();
      return ThreadExtent::make(op->var, op->tag, op->extent, body);
    }
    if (const auto* op = s.as<Block>()) {
      std::vector<Stmt> stmts;
      for (const auto& child : op->stmts) stmts.push_back(visit(child, pending));
      return Block::make(stmts);
    }
    if (const auto* op = s.as<Allocate>()) return Allocate::make(op->buffer, visit(op->body, pending));
    if (const auto* op = s.as<LetStmt>()) return LetStmt::make(op->var, op->value, visit(op->body, pending));
    if (!in_kernel_) {
      // Host code around kernels (which the host/device split refuses): its kernels still count.
      if (const auto* op = s.as<For>())
        return For::make(op->var, op->min, op->extent, op->for_kind, visit(op->body, pending), op->pragmas);
      return s;
    }
    if (is_barrier(s)) {
      pending.clear();
      return s;
    }
    Accesses own = shared_accesses(s);
    if (own.empty()) return s;
    Stmt before;
    if (conflict(pending, own)) {
      before = barrier();
      pending.clear();
    }
    if (const auto* op = s.as<For>()) return Block::make({before, visit_loop(op, pending)});
    if (const auto* op = s.as<IfThenElse>()) check_no_barrier_needed(op, pending);
    append(pending, own);
    return Block::make({before, s});
  }

  // The body sees what came before the loop and, from the second iteration on, what the
  // iteration before left pending: a first pass finds that, the second places the barriers.
  Stmt visit_loop(const For* op, Accesses& pending) {
    Accesses first = pending;
    visit(op->body, first);
    Accesses start = pending;
    append(start, first);
    Stmt body = visit(op->body, start);
    append(pending, start);  // the loop may not run at all
    if (count_barriers(body) != count_barriers(op->body))
      for (const VarNode* thread : threads_)
        if (uses_var(op->min, thread) || uses_var(op->extent, thread))
          fail("insert_barriers: loop ", op->var.name(),
               " needs a barrier between its shared-memory accesses, but its "
               "trip count depends on thread ",
               thread->name,
               ", so not every thread would reach it (make its extent "
               "the same for all threads of a block)");
    return For::make(op->var, op->min, op->extent, op->for_kind, body, op->pragmas);
  }

  // Threads that skip a branch would never reach a barrier inside it: a branch that needs one is
  // refused rather than left racing.
  void check_no_barrier_needed(const IfThenElse* op, const Accesses& pending) {
    for (const Stmt& branch : {op->then_case, op->else_case}) {
      if (!branch) continue;
      Accesses copy = pending;
      if (count_barriers(visit(branch, copy)) != count_barriers(branch))
        fail("insert_barriers: the statements under if (", to_string(op->condition),
             ") need a barrier between their shared-memory accesses, which threads that skip the branch would "
             "not reach (compute the shared stage outside the condition)");
    }
  }

  static int count_barriers(const Stmt& s) {
    struct Counter : IRVisitor {
      int n = 0;
      void visit_(const Call* op) override {
        n += op->op == Intrinsic::barrier;
        IRVisitor::visit_(op);
      }
    } counter;
    counter.visit(s);
    return counter.n;
  }

  bool in_kernel_ = false;
  std::vector<const VarNode*> threads_;  // the threadIdx variables around the statement
};

}  // namespace

Stmt insert_barriers(const Stmt& s) { return BarrierInserter().run(s); }

}  // namespace tessera::tensor_ir

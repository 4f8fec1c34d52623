#include "tensor_ir/transforms/merge_thread_extents.h"

#include <map>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

class ThreadExtentMerger : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_(const ThreadExtent* op) override {
    auto open = open_.find(op->tag);
    if (open == open_.end()) {
      open_[op->tag] = op;
      Stmt body = mutate(op->body);
      open_.erase(op->tag);
      return body.same_as(op->body) ? Stmt(op) : ThreadExtent::make(op->var, op->tag, op->extent, body);
    }
    const ThreadExtent* outer = open->second;
    const int64_t* inner_extent = as_const_int(op->extent);
    const int64_t* threads = as_const_int(outer->extent);
    if (!inner_extent || !threads)
      fail("loop ", op->var.name(), " is bound to ", op->tag, " inside loop ", outer->var.name(),
           ", bound to it too: both need constant extents (got ", to_string(op->extent), " and ",
           to_string(outer->extent), ")");
    if (*inner_extent > *threads)
      fail("loop ", op->var.name(), " is bound to ", op->tag, " with ", *inner_extent,
           " iterations, but the launch it runs in has ", *threads, " threads along ", op->tag, " (loop ",
           outer->var.name(), "): split it so that its bound loop has at most ", *threads, " iterations");
    Stmt body = mutate(substitute(op->body, VarMap{{op->var.get(), outer->var}}));
    if (*inner_extent < *threads) body = IfThenElse::make(outer->var < op->extent, body);
    return body;
  }

 private:
  std::map<std::string, const ThreadExtent*> open_;
};

}  // namespace

Stmt merge_thread_extents(const Stmt& s) { return ThreadExtentMerger().mutate(s); }

}  // namespace tessera::tensor_ir

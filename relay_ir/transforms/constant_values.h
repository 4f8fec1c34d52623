// Which values of a graph are known at compile time: constants, and calls of operators over
// such values (what FoldConstant replaces by their values). A mutator records each node it
// returns, inputs first, so every node is classified once, in constant time.
#pragma once
#include <unordered_set>

#include "relay_ir/expr.h"

namespace tessera::relay_ir {

class ConstantValues {
 public:
  // Classifies `e`, whose inputs were recorded before it; returns `e`.
  const Expr& record(const Expr& e) {
    if (e.as<ConstantNode>() || is_call_over_constants(e)) constant_.insert(e.get());
    return e;
  }
  bool contains(const Expr& e) const { return constant_.count(e.get()) > 0; }

 private:
  // A call without arguments (a random generator) is not a compile-time value.
  bool is_call_over_constants(const Expr& e) const {
    const auto* c = e.as<CallNode>();
    if (!c || !c->op_def() || c->args.empty()) return false;
    for (const auto& a : c->args)
      if (!contains(a)) return false;
    return true;
  }

  std::unordered_set<const ExprNode*> constant_;
};

}  // namespace tessera::relay_ir

// Common subexpression elimination: calls with the same op, attributes and (already merged)
// arguments, and constants with the same bytes, become one node.
#include <cstring>
#include <unordered_map>

#include "relay_ir/functor.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {

class CommonSubexprEliminator : public ExprMutator {
 protected:
  Expr rewrite(const Expr&, const Expr& node) override {
    if (!node.as<CallNode>() && !node.as<ConstantNode>() && !node.as<TupleGetItemNode>()) return node;
    uint64_t key = structural_hash(node);
    auto& bucket = seen_[key];
    for (const Expr& candidate : bucket)
      if (same(candidate, node)) return candidate;
    bucket.push_back(node);
    return node;
  }

 private:
  // Children are already merged, so comparing them by identity is enough; constants by bytes.
  static bool same(const Expr& a, const Expr& b) {
    if (a->kind != b->kind) return false;
    if (const auto* ca = a.as<ConstantNode>()) {
      const auto* cb = b.as<ConstantNode>();
      return ca->data.dtype() == cb->data.dtype() && ca->data.shape() == cb->data.shape() &&
             std::memcmp(ca->data.data(), cb->data.data(), ca->data.nbytes()) == 0;
    }
    if (const auto* ga = a.as<TupleGetItemNode>()) {
      const auto* gb = b.as<TupleGetItemNode>();
      return ga->index == gb->index && ga->tuple.same_as(gb->tuple);
    }
    const auto* ca = a.as<CallNode>();
    const auto* cb = b.as<CallNode>();
    if (!ca->op.same_as(cb->op) || ca->attrs != cb->attrs || ca->args.size() != cb->args.size()) return false;
    for (size_t i = 0; i < ca->args.size(); ++i)
      if (!ca->args[i].same_as(cb->args[i])) return false;
    return true;
  }

  std::unordered_map<uint64_t, std::vector<Expr>> seen_;
};

}  // namespace

Pass eliminate_common_subexpr_pass() {
  return function_pass("EliminateCommonSubexpr", 1,
                       [](const Function& f, PassContext&) { return CommonSubexprEliminator().mutate(f); });
}

}  // namespace tessera::relay_ir

// Constant folding: a call whose arguments are all constants is evaluated at compile time with
// Tessera's own kernels (PassContext::evaluate) and replaced by its value.
#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/passes.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace {

bool is_constant(const Expr& e) { return e.as<ConstantNode>() != nullptr; }

class ConstantFolder : public ExprMutator {
 public:
  explicit ConstantFolder(const PassContext& ctx) : ctx_(ctx) {}

 protected:
  Expr rewrite(const Expr&, const Expr& node) override {
    if (const auto* g = node.as<TupleGetItemNode>()) {
      if (const auto* t = g->tuple.as<TupleNode>()) {
        if (is_constant(t->elements.at(g->index))) return t->elements[g->index];
      }
    }
    const auto* call = node.as<CallNode>();
    if (!call || !call->op_def() || call->args.empty()) return node;
    for (const auto& a : call->args)
      if (!is_constant(a)) return node;
    infer_type(node);
    // Nested tuples stay as they are, and so does a value of symbolic shape (a constant broadcast
    // to a shape of the sizes), which each call computes at its sizes.
    auto foldable = [](const Type& t) {
      const auto* tensor = t.as<TensorTypeNode>();
      return tensor && tensor->shape.is_static();
    };
    if (const auto* tt = node->checked_type.as<TupleTypeNode>()) {
      for (const auto& e : tt->elements)
        if (!foldable(e)) return node;
    } else if (!foldable(node->checked_type)) {
      return node;
    }
    std::vector<runtime::NDArray> values = ctx_.evaluate(node);
    if (node->checked_type.as<TensorTypeNode>()) return constant(values.at(0));
    std::vector<Expr> elements;
    for (const auto& v : values) elements.push_back(constant(v));
    return tuple(elements);  // flat tuples only: the tensors in order
  }

 private:
  const PassContext& ctx_;
};

}  // namespace

Pass fold_constant_pass() {
  return function_pass("FoldConstant", 1, [](const Function& f, PassContext& ctx) {
    if (!ctx.evaluate) fail("FoldConstant needs an evaluator (PassContext::evaluate); build() provides one");
    return ConstantFolder(ctx).mutate(f);
  });
}

}  // namespace tessera::relay_ir

// Dead code elimination. Values nothing uses are not part of a dataflow graph to begin with;
// what remains dead is structure around live values: a projection of a tuple built on the
// spot reads one element and needs none of the others.
#include "relay_ir/functor.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {
class DeadCodeEliminator : public ExprMutator {
 protected:
  Expr rewrite(const Expr&, const Expr& node) override {
    if (const auto* g = node.as<TupleGetItemNode>())
      if (const auto* t = g->tuple.as<TupleNode>()) return t->elements.at(g->index);
    return node;
  }
};
}  // namespace

Pass dead_code_elimination_pass() {
  return function_pass("DeadCodeElimination", 0,
                       [](const Function& f, PassContext&) { return DeadCodeEliminator().mutate(f); });
}

}  // namespace tessera::relay_ir

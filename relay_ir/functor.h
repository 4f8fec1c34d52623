// Traversals of expression graphs. They are iterative (no recursion-depth limit on large
// models) and visit each node of the DAG once: post_order lists the nodes producers-first, and
// ExprMutator rebuilds a graph bottom-up, reusing every node whose inputs did not change.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "relay_ir/expr.h"

namespace tessera::relay_ir {

// The direct inputs of a node (call arguments and callee function, tuple fields, a function's
// body), in order.
std::vector<Expr> children(const Expr& e);
// Every node reachable from `root`, each once, inputs before the nodes that use them.
std::vector<Expr> post_order(const Expr& root);
// The same walk over the inputs `inputs_of` lists (in the order they should come out).
std::vector<Expr> post_order(const Expr& root, const std::function<std::vector<Expr>(const Expr&)>& inputs_of);

// The body of `f` with its parameters replaced by `args` (f inlined at a call site).
Expr apply_function(const Function& f, const std::vector<Expr>& args);

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  // Rewrites `root` and everything below it; results are memoized per node.
  Expr mutate(const Expr& root);

 protected:
  // Called once per node, inputs first. `node` already has its inputs replaced by their
  // rewritten forms (it is `original` itself if none changed). The default keeps it.
  virtual Expr rewrite(const Expr& original, const Expr& node) { return node; }
  // The rewritten form of a node already visited (valid inside rewrite()).
  const Expr& rewritten(const Expr& original) const;

 private:
  Expr with_children(const Expr& e, const std::vector<Expr>& new_children);
  std::unordered_map<const ExprNode*, Expr> memo_;
};

}  // namespace tessera::relay_ir

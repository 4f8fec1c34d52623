// Small queries the rewriting passes share when they match patterns in a graph.
#pragma once
#include <string>
#include <unordered_map>

#include "relay_ir/expr.h"
#include "relay_ir/functor.h"
#include "relay_ir/op.h"

namespace tessera::relay_ir {

// `e` as a call of the registered op `name`, or null.
inline const CallNode* call_of(const Expr& e, const std::string& name) {
  const auto* c = e.as<CallNode>();
  return c && c->op_def() && c->op_def()->name == name ? c : nullptr;
}

// The tensor type `e` was given, or null (a tuple, or a node not typed yet).
inline const TensorTypeNode* checked_tensor(const Expr& e) { return e->checked_type.as<TensorTypeNode>(); }

// How many nodes under `root` read each node: a value read once may be rewritten along with its
// reader, since nothing else sees it.
inline std::unordered_map<const ExprNode*, int> reader_counts(const Expr& root) {
  std::unordered_map<const ExprNode*, int> readers;
  for (const Expr& e : post_order(root))
    for (const Expr& child : children(e)) ++readers[child.get()];
  return readers;
}

}  // namespace tessera::relay_ir

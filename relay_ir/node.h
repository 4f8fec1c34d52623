// The base of graph-IR nodes: like tensor_ir's nodes (intrusive count, kind tag, as<T>(), one
// field list per node), with their own kinds. Expressions carry the type that InferType gives
// them as a cache (`checked_type`), the one mutable part of a node, as in TVM.
#pragma once
#include <cstdint>

#include "tensor_ir/node.h"

namespace tessera::relay_ir {

using tensor_ir::Ref;
using tensor_ir::RefCounted;

#define TESSERA_RELAY_TYPE_NODES(X) X(TensorType, TensorTypeNode) X(TupleType, TupleTypeNode) X(FuncType, FuncTypeNode)
#define TESSERA_RELAY_EXPR_NODES(X)                                                                               \
  X(Var, VarNode)                                                                                                 \
  X(Constant, ConstantNode) X(Op, OpNode) X(Call, CallNode) X(Tuple, TupleNode) X(TupleGetItem, TupleGetItemNode) \
      X(Function, FunctionNode)
#define TESSERA_RELAY_NODES(X) TESSERA_RELAY_TYPE_NODES(X) TESSERA_RELAY_EXPR_NODES(X)

enum class RelayKind : uint8_t {
#define TESSERA_X(kind, type) kind,
  TESSERA_RELAY_NODES(TESSERA_X)
#undef TESSERA_X
};

class Node : public RefCounted {
 public:
  const RelayKind kind;
  template <typename T>
  const T* as() const {
    return T::kind_matches(kind) ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  explicit Node(RelayKind k) : kind(k) {}
};

#define TESSERA_RELAY_NODE(Kind)                      \
  static constexpr RelayKind kKind = RelayKind::Kind; \
  static constexpr bool kind_matches(RelayKind k) { return k == kKind; }

}  // namespace tessera::relay_ir

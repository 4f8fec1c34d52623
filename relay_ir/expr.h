// Expressions of the graph IR: variables, constants, calls of registered operators (or of
// functions, after fusion), tuples and their projections, functions. Graphs are DAGs: a value
// used twice is the same node, and every traversal visits it once.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/type.h"
#include "runtime/ndarray.h"

namespace tessera::relay_ir {

struct OpDef;

struct ExprNode : Node {
  // Filled by InferType; a cache, not part of the node's identity.
  mutable Type checked_type;
  static constexpr bool kind_matches(RelayKind k) {
#define TESSERA_X(kind, type) k == RelayKind::kind ||
    return TESSERA_RELAY_EXPR_NODES(TESSERA_X) false;
#undef TESSERA_X
  }

 protected:
  explicit ExprNode(RelayKind k) : Node(k) {}
};

class Expr : public Ref<ExprNode> {
 public:
  using Ref<ExprNode>::Ref;
  Expr() = default;
  // The inferred type; throws if InferType has not run over this expression.
  const Type& type() const;
};

// A function parameter (a graph input); compared by identity.
struct VarNode : ExprNode {
  TESSERA_RELAY_NODE(Var)
  std::string name;
  Type type_annotation;
  TESSERA_FIELDS(name, type_annotation)
  VarNode(std::string n, Type t) : ExprNode(kKind), name(std::move(n)), type_annotation(std::move(t)) {}
};

class Var : public Ref<VarNode> {
 public:
  using Ref<VarNode>::Ref;
  Var() = default;
  Var(std::string name, Type type);
  operator Expr() const { return Expr(get()); }  // NOLINT
  const std::string& name() const { return get()->name; }
};

struct ConstantNode : ExprNode {
  TESSERA_RELAY_NODE(Constant)
  runtime::NDArray data;
  TESSERA_FIELDS(data)
  explicit ConstantNode(runtime::NDArray d) : ExprNode(kKind), data(std::move(d)) {}
};

// A registered operator, as the callee of a Call. One node per op.
struct OpNode : ExprNode {
  TESSERA_RELAY_NODE(Op)
  const OpDef* def;
  TESSERA_FIELDS(def)
  explicit OpNode(const OpDef* d) : ExprNode(kKind), def(d) {}
  const std::string& name() const;
};

struct CallNode : ExprNode {
  TESSERA_RELAY_NODE(Call)
  Expr op;  // an OpNode or a FunctionNode
  std::vector<Expr> args;
  Attrs attrs;
  TESSERA_FIELDS(op, args, attrs)
  // Where the call came from (an ONNX node's name), for messages; not part of its identity.
  std::string origin;
  CallNode(Expr o, std::vector<Expr> a, Attrs at)
      : ExprNode(kKind), op(std::move(o)), args(std::move(a)), attrs(std::move(at)) {}
  const OpDef* op_def() const;  // null when the callee is a function
};

struct TupleNode : ExprNode {
  TESSERA_RELAY_NODE(Tuple)
  std::vector<Expr> elements;
  TESSERA_FIELDS(elements)
  explicit TupleNode(std::vector<Expr> e) : ExprNode(kKind), elements(std::move(e)) {}
};

struct TupleGetItemNode : ExprNode {
  TESSERA_RELAY_NODE(TupleGetItem)
  Expr tuple;
  int64_t index;
  TESSERA_FIELDS(tuple, index)
  TupleGetItemNode(Expr t, int64_t i) : ExprNode(kKind), tuple(std::move(t)), index(i) {}
};

struct FunctionNode : ExprNode {
  TESSERA_RELAY_NODE(Function)
  std::vector<Var> params;
  Expr body;
  Attrs attrs;  // e.g. primitive=1 on a fused group
  TESSERA_FIELDS(params, body, attrs)
  FunctionNode(std::vector<Var> p, Expr b, Attrs a)
      : ExprNode(kKind), params(std::move(p)), body(std::move(b)), attrs(std::move(a)) {}
};

class Function : public Ref<FunctionNode> {
 public:
  using Ref<FunctionNode>::Ref;
  Function() = default;
  Function(const Ref<FunctionNode>& r) : Ref<FunctionNode>(r) {}  // NOLINT
  operator Expr() const { return Expr(get()); }                   // NOLINT
};

// --- Building expressions ----------------------------------------------------------------

Expr constant(runtime::NDArray data);
// A scalar (shape ()) constant of `dtype`.
Expr scalar(double value, DataType dtype);
// The value of a one-element float32 or float64 constant (of any shape); none for anything else.
std::optional<double> float_scalar_value(const Expr& e);
// The node of a registered op; throws listing similar names if there is none.
Expr op(const std::string& name);
// A call of op `name`: checks the argument count and the attributes against the op's schema
// (unknown names, wrong kinds, missing required ones) and fills in defaults.
Expr call(const std::string& name, std::vector<Expr> args, Attrs attrs = {}, std::string origin = "");
Expr call_function(const Function& f, std::vector<Expr> args);
Expr tuple(std::vector<Expr> fields);
Expr tuple_get(Expr tuple, int64_t index);
Function function(std::vector<Var> params, Expr body, Attrs attrs = {});

}  // namespace tessera::relay_ir

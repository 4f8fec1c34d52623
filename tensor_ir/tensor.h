// Tensors and the operations that define them: `placeholder` (an input) and `compute` (one
// expression per output element, possibly a reduction over `reduce_axis` loops). This is the
// compute half of compute/schedule separation; how the loops run is schedule/'s business.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

enum class IterKind : uint8_t { DataPar, Reduce };

// A loop variable with its domain: an output axis of a compute, or a reduction axis.
struct IterVarNode : Object {
  TESSERA_NODE(IterVar)
  Var var;
  Range dom;
  IterKind iter_kind;
  TESSERA_FIELDS(var, dom, iter_kind)
  static Ref<IterVarNode> make(Var var, Range dom, IterKind iter_kind);
  IterVarNode(Var v, Range d, IterKind k) : Object(kKind), var(std::move(v)), dom(std::move(d)), iter_kind(k) {}
};

class IterVar : public Ref<IterVarNode> {
 public:
  using Ref<IterVarNode>::Ref;
  IterVar() = default;
  IterVar(const Ref<IterVarNode>& r) : Ref<IterVarNode>(r) {}  // NOLINT
  const Var& var() const { return get()->var; }
  const std::string& name() const { return get()->var.name(); }
  operator Expr() const { return get()->var; }  // NOLINT: an axis reads as its variable
};

// Base of operations: every one produces a tensor with a name, a static shape and a dtype.
struct OperationNode : Object {
  std::string name;
  std::vector<Expr> shape;
  DataType dtype;
  static constexpr bool kind_matches(NodeKind k) { return k == NodeKind::PlaceholderOp || k == NodeKind::ComputeOp; }
  // The extent of dimension `i` as a constant; throws if the shape is not static.
  int64_t dim(size_t i) const;
  // Every extent as a constant; throws if the shape is not static.
  std::vector<int64_t> dims() const;

 protected:
  OperationNode(NodeKind k, std::string n, std::vector<Expr> s, DataType t)
      : Object(k), name(std::move(n)), shape(std::move(s)), dtype(t) {}
};

// A tensor is the output of an operation; indexing it, A(i, j), reads an element.
class Tensor : public Ref<OperationNode> {
 public:
  using Ref<OperationNode>::Ref;
  Tensor() = default;
  Tensor(const Ref<OperationNode>& r) : Ref<OperationNode>(r) {}  // NOLINT
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... I>
  Expr operator()(I... indices) const {
    return (*this)(std::vector<Expr>{Expr(indices)...});
  }
  const std::string& name() const { return get()->name; }
  DataType dtype() const { return get()->dtype; }
  size_t ndim() const { return get()->shape.size(); }
};

struct PlaceholderOp : OperationNode {
  TESSERA_NODE(PlaceholderOp)
  TESSERA_FIELDS(name, shape, dtype)
  static Tensor make(std::string name, std::vector<Expr> shape, DataType dtype);
  PlaceholderOp(std::string n, std::vector<Expr> s, DataType t) : OperationNode(kKind, std::move(n), std::move(s), t) {}
};

struct ComputeOp : OperationNode {
  TESSERA_NODE(ComputeOp)
  std::vector<IterVar> axis;  // one data-parallel axis per output dimension
  Expr body;                  // a Reduce only at the top, never nested
  std::string tag;            // the op family ("elemwise", "matmul", ...), for schedules
  TESSERA_FIELDS(name, axis, body, tag)
  static Tensor make(std::string name, std::vector<IterVar> axis, Expr body, std::string tag);
  // The reduction axes of a reducing body, else empty.
  const std::vector<IterVar>& reduce_axis() const;
  ComputeOp(std::string n, std::vector<Expr> s, DataType t, std::vector<IterVar> a, Expr b, std::string g)
      : OperationNode(kKind, std::move(n), std::move(s), t),
        axis(std::move(a)),
        body(std::move(b)),
        tag(std::move(g)) {}
};

// Before lowering: an element of a tensor read at multi-dimensional indices.
struct ProducerLoad : ExprNode {
  TESSERA_NODE(ProducerLoad)
  Tensor tensor;
  std::vector<Expr> indices;
  TESSERA_FIELDS(tensor, indices)
  static Expr make(Tensor tensor, std::vector<Expr> indices);
  ProducerLoad(DataType t, Tensor te, std::vector<Expr> i)
      : ExprNode(kKind, t), tensor(std::move(te)), indices(std::move(i)) {}
};

enum class ReduceKind : uint8_t { Sum, Prod, Max, Min };
const char* reduce_kind_name(ReduceKind kind);

// combiner over `axis` of `source`, counting only points where `condition` holds.
struct Reduce : ExprNode {
  TESSERA_NODE(Reduce)
  ReduceKind combiner;
  Expr source;
  std::vector<IterVar> axis;
  Expr condition;
  TESSERA_FIELDS(combiner, source, axis, condition)
  static Expr make(ReduceKind combiner, Expr source, std::vector<IterVar> axis, Expr condition);
  Reduce(DataType t, ReduceKind c, Expr s, std::vector<IterVar> a, Expr cond)
      : ExprNode(kKind, t), combiner(c), source(std::move(s)), axis(std::move(a)), condition(std::move(cond)) {}
};

// The identity of a combiner in a type (0, 1, lowest, highest) and one combining step.
Expr reduce_identity(ReduceKind kind, DataType type);
Expr reduce_combine(ReduceKind kind, Expr accumulated, Expr value);

// --- The DSL: build operations the way TE does -------------------------------------------

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name = "placeholder");
IterVar reduce_axis(Range dom, std::string name = "k");
// compute(shape, f): f receives one index variable per dimension, named by `axis_names`
// (default i, j, k, l; i0, i1, ... beyond four dimensions).
Tensor compute(std::vector<Expr> shape, const std::function<Expr(const std::vector<Var>&)>& f,
               std::string name = "compute", std::string tag = "", std::vector<std::string> axis_names = {});
Expr sum(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr prod(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr condition = Expr());
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr condition = Expr());

}  // namespace tessera::tensor_ir

#include "tensor_ir/bind_sizes.h"

#include <unordered_map>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

void add_vars(const Expr& e, std::vector<Var>& vars) {
  for (const Var& v : vars_of(e)) {
    bool seen = false;
    for (const Var& w : vars) seen |= w.same_as(v);
    if (!seen) vars.push_back(v);
  }
}

// Replaces the dimension variables, folds the integer expressions they made constant, and reads
// the rebuilt tensors.
class SizeBinder : public IRMutator {
 public:
  SizeBinder(const VarMap& values, const std::unordered_map<const OperationNode*, Tensor>& rebuilt)
      : values_(values), rebuilt_(rebuilt) {}
  using IRMutator::mutate;

  // An extent, folded: operators compute shapes as integers where they are constant.
  Expr extent(const Expr& e) { return fold(mutate(e)); }

  // A product of dimensions (`L*N`, a flattened batch) is one dimension, an integer at constant
  // sizes; other arithmetic on dimensions (`m - 1`) is the operator's, written as it is.
  Expr mutate(const Expr& e) override { return is_size_product(e) ? fold(IRMutator::mutate(e)) : IRMutator::mutate(e); }
  // Set while rebuilding the body of a broadcasting compute (tag "broadcast"), as_static.
  bool broadcasting_ = false;

  IterVar axis(const IterVar& iv) {
    return IterVarNode::make(iv->var, Range(extent(iv->dom.min), extent(iv->dom.extent)), iv->iter_kind);
  }

 protected:
  Expr fold(const Expr& e) {
    Expr folded = arith::simplify(e);
    return as_const_int(folded) ? folded : e;
  }
  bool is_size_product(const Expr& e) const {
    if (const auto* m = e.as<Mul>()) return is_size_product(m->a) && is_size_product(m->b);
    return as_const_int(e) || (e.as<VarNode>() && values_.count(e.as<VarNode>()));
  }
  Expr mutate_(const VarNode* op) override {
    auto it = values_.find(op);
    return it == values_.end() ? Expr(op) : it->second;
  }
  Expr mutate_(const ProducerLoad* op) override {
    const Tensor& tensor = rebuilt_.at(op->tensor.get());
    std::vector<Expr> indices;
    for (size_t d = 0; d < op->indices.size(); ++d) {
      // A broadcasting operator reads a dimension of size 1 at 0 when the size is a constant.
      const bool at_zero = broadcasting_ && op->indices[d].as<VarNode>() && is_const_int(tensor->shape[d], 1);
      indices.push_back(at_zero ? Expr(0) : mutate(op->indices[d]));
    }
    return ProducerLoad::make(tensor, std::move(indices));
  }
  Expr mutate_(const Reduce* op) override {
    std::vector<IterVar> axes;
    for (const IterVar& iv : op->axis) axes.push_back(axis(iv));
    return Reduce::make(op->combiner, mutate(op->source), std::move(axes), mutate(op->condition));
  }

 private:
  const VarMap& values_;
  const std::unordered_map<const OperationNode*, Tensor>& rebuilt_;
};

}  // namespace

std::vector<Var> size_vars(const std::vector<Tensor>& outputs) {
  std::vector<Var> vars;
  for (const Tensor& t : topological_order(outputs)) {
    for (const Expr& d : t->shape) add_vars(d, vars);
    if (const auto* c = t.as<ComputeOp>())
      for (const IterVar& iv : c->reduce_axis()) add_vars(iv->dom.extent, vars);
  }
  return vars;
}

std::vector<Tensor> bind_sizes(const std::vector<Tensor>& outputs, const std::map<std::string, int64_t>& values,
                               bool as_static) {
  VarMap map;
  for (const Var& v : size_vars(outputs)) {
    auto it = values.find(v.name());
    if (it == values.end()) fail("bind_sizes: no value for the dimension ", v.name());
    map[v.get()] = make_const(v.type(), it->second);
  }
  std::unordered_map<const OperationNode*, Tensor> rebuilt;
  SizeBinder binder(map, rebuilt);
  for (const Tensor& t : topological_order(outputs)) {
    if (const auto* c = t.as<ComputeOp>()) {
      std::vector<IterVar> axes;
      for (const IterVar& iv : c->axis) axes.push_back(binder.axis(iv));
      binder.broadcasting_ = as_static && c->tag == "broadcast";
      rebuilt[t.get()] = ComputeOp::make(c->name, std::move(axes), binder.mutate(c->body), c->tag);
    } else {
      std::vector<Expr> shape;
      for (const Expr& d : t->shape) shape.push_back(binder.extent(d));
      rebuilt[t.get()] = PlaceholderOp::make(t->name, std::move(shape), t->dtype);
    }
  }
  std::vector<Tensor> out;
  for (const Tensor& t : outputs) out.push_back(rebuilt.at(t.get()));
  return out;
}

}  // namespace tessera::tensor_ir

#include "tensor_ir/tensor.h"

#include <limits>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {
// Index expressions are int64; narrower integer indices are widened so users may write int32.
Expr as_index(const Expr& e, const std::string& where) {
  if (!e) fail(where, ": undefined index");
  if (!e.type().is_integer() || e.type().is_vector())
    fail(where, ": index ", to_string(e), " must be a scalar integer, got ", e.type().str());
  return cast(kIndexType, e);
}

class NestedReduceFinder : public IRVisitor {
 public:
  bool found = false;
  void visit_(const Reduce*) override { found = true; }
};
}  // namespace

int64_t OperationNode::dim(size_t i) const {
  if (i >= shape.size()) fail("tensor ", name, " has no dimension ", i);
  const auto* c = shape[i].as<IntImm>();
  if (!c) fail("tensor ", name, ": dimension ", i, " (", to_string(shape[i]), ") is not a constant");
  return c->value;
}

std::vector<int64_t> OperationNode::dims() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < shape.size(); ++i) out.push_back(dim(i));
  return out;
}

Expr Tensor::operator()(std::vector<Expr> indices) const { return ProducerLoad::make(*this, std::move(indices)); }

Tensor PlaceholderOp::make(std::string name, std::vector<Expr> shape, DataType dtype) {
  if (dtype.is_vector() || dtype.is_handle()) fail("placeholder ", name, ": invalid element type ", dtype.str());
  for (auto& d : shape) {
    d = as_index(d, "placeholder " + name + " shape");
    if (const auto* c = d.as<IntImm>(); c && c->value < 0)
      fail("placeholder ", name, ": negative dimension ", c->value);
  }
  return Tensor(new PlaceholderOp(std::move(name), std::move(shape), dtype));
}

Tensor ComputeOp::make(std::string name, std::vector<IterVar> axis, Expr body, std::string tag) {
  if (!body) fail("compute ", name, ": body is undefined");
  if (body.type().is_vector()) fail("compute ", name, ": body must be a scalar expression");
  const Expr& inner = body.as<Reduce>() ? body.as<Reduce>()->source : body;
  NestedReduceFinder finder;
  finder.visit(inner);
  if (const auto* r = body.as<Reduce>()) finder.visit(r->condition);
  if (finder.found)
    fail("compute ", name, ": a reduction must be the whole body, not nested in ", to_string(body),
         " (compute the reduction in a stage of its own)");
  std::vector<Expr> shape;
  for (const auto& iv : axis) {
    if (iv->iter_kind != IterKind::DataPar) fail("compute ", name, ": axis ", iv.name(), " is a reduction axis");
    shape.push_back(iv->dom.extent);
  }
  DataType t = body.type();
  return Tensor(new ComputeOp(std::move(name), std::move(shape), t, std::move(axis), std::move(body), std::move(tag)));
}

const std::vector<IterVar>& ComputeOp::reduce_axis() const {
  static const std::vector<IterVar> none;
  const auto* r = body.as<Reduce>();
  return r ? r->axis : none;
}

Expr ProducerLoad::make(Tensor tensor, std::vector<Expr> indices) {
  if (!tensor) fail("load from an undefined tensor");
  if (indices.size() != tensor.ndim())
    fail("tensor ", tensor.name(), " has ", tensor.ndim(), " dimensions, indexed with ", indices.size());
  for (auto& i : indices) i = as_index(i, "tensor " + tensor.name());
  DataType t = tensor.dtype();
  return Expr(new ProducerLoad(t, std::move(tensor), std::move(indices)));
}

Expr Reduce::make(ReduceKind combiner, Expr source, std::vector<IterVar> axis, Expr condition) {
  if (!source) fail("reduction: source is undefined");
  if (source.type().is_bool()) fail("reduction of bool values; cast them to an integer type first");
  if (axis.empty()) fail("reduction of ", to_string(source), " over no axis");
  for (const auto& iv : axis)
    if (iv->iter_kind != IterKind::Reduce) fail("reduction over ", iv.name(), ", which is not a reduce_axis");
  if (!condition) condition = const_true();
  if (condition.type() != runtime::kBool) fail("reduction condition must be a scalar bool");
  DataType t = source.type();
  return Expr(new Reduce(t, combiner, std::move(source), std::move(axis), std::move(condition)));
}

Expr reduce_identity(ReduceKind kind, DataType type) {
  switch (kind) {
    case ReduceKind::Sum:
      return make_zero(type);
    case ReduceKind::Prod:
      return make_one(type);
    case ReduceKind::Max:
      return make_const(type, type.is_float() ? -std::numeric_limits<double>::infinity() : type.min_value());
    case ReduceKind::Min:
      return make_const(type, type.is_float() ? std::numeric_limits<double>::infinity() : type.max_value());
  }
  fail("unknown reduction");
}

Expr reduce_combine(ReduceKind kind, Expr accumulated, Expr value) {
  switch (kind) {
    case ReduceKind::Sum:
      return accumulated + value;
    case ReduceKind::Prod:
      return accumulated * value;
    case ReduceKind::Max:
      return max(accumulated, value);
    case ReduceKind::Min:
      return min(accumulated, value);
  }
  fail("unknown reduction");
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name) {
  return PlaceholderOp::make(std::move(name), std::move(shape), dtype);
}

IterVar reduce_axis(Range dom, std::string name) {
  dom.min = as_index(dom.min, "reduce_axis " + name);
  dom.extent = as_index(dom.extent, "reduce_axis " + name);
  return IterVarNode::make(Var(std::move(name)), dom, IterKind::Reduce);
}

Tensor compute(std::vector<Expr> shape, const std::function<Expr(const std::vector<Var>&)>& f, std::string name,
               std::string tag, std::vector<std::string> axis_names) {
  std::vector<IterVar> axis;
  std::vector<Var> vars;
  static const char* kNames[] = {"i", "j", "k", "l"};
  if (!axis_names.empty() && axis_names.size() != shape.size())
    fail("compute ", name, ": ", axis_names.size(), " axis names for ", shape.size(), " dimensions");
  for (size_t d = 0; d < shape.size(); ++d) {
    Expr extent = as_index(shape[d], "compute " + name + " shape");
    if (const auto* c = extent.as<IntImm>(); c && c->value < 0)
      fail("compute ", name, ": negative dimension ", c->value);
    Var v(!axis_names.empty() ? axis_names[d] : shape.size() <= 4 ? kNames[d] : "i" + std::to_string(d));
    vars.push_back(v);
    axis.push_back(IterVarNode::make(v, Range(Expr(0), extent), IterKind::DataPar));
  }
  return ComputeOp::make(std::move(name), std::move(axis), f(vars), std::move(tag));
}

Expr sum(Expr source, std::vector<IterVar> axis, Expr condition) {
  return Reduce::make(ReduceKind::Sum, std::move(source), std::move(axis), std::move(condition));
}
Expr prod(Expr source, std::vector<IterVar> axis, Expr condition) {
  return Reduce::make(ReduceKind::Prod, std::move(source), std::move(axis), std::move(condition));
}
Expr max_reduce(Expr source, std::vector<IterVar> axis, Expr condition) {
  return Reduce::make(ReduceKind::Max, std::move(source), std::move(axis), std::move(condition));
}
Expr min_reduce(Expr source, std::vector<IterVar> axis, Expr condition) {
  return Reduce::make(ReduceKind::Min, std::move(source), std::move(axis), std::move(condition));
}

}  // namespace tessera::tensor_ir

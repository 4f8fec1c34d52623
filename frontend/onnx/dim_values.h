// Shape arithmetic on symbolic dimensions. Exporters compute a reshape's target from the input's
// sizes at run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, with Add/Mul/Div on the
// way); in a model of symbolic sizes those values are integer tensors whose elements are
// expressions of the dimension variables (`[N, L * 4, 64]`). The importer keeps them as DimValues
// and evaluates the shape arithmetic on them, as ONNX Runtime's symbolic shape inference and
// TVM Relax's shape values do, so that Reshape, Expand and ConstantOfShape get symbolic targets.
// An operator that would compute with such a value on tensors is refused by name.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "relay_ir/attrs.h"
#include "relay_ir/shape.h"
#include "runtime/ndarray.h"
#include "tensor_ir/arith/const_bound.h"

namespace tessera::frontend::onnx {

// An integer (or, from a comparison, bool) tensor whose elements are integer expressions,
// simplified, in row-major order: a scalar or a shape, or a matrix on the way of reordered pads
// (exporters write Reshape to [-1, 2], Slice backwards, Transpose).
struct DimValue {
  std::vector<tensor_ir::Expr> elements;
  std::vector<int64_t> shape;  // {} for a scalar
  runtime::DataType dtype = runtime::kInt64;

  static DimValue vector(std::vector<tensor_ir::Expr> elements, runtime::DataType dtype = runtime::kInt64);
  static DimValue scalar_of(tensor_ir::Expr element, runtime::DataType dtype = runtime::kInt64);
  bool scalar() const { return shape.empty(); }
  bool is_constant() const;
  runtime::NDArray constant() const;  // throws unless is_constant()
  std::string str() const;            // "[N, L*4, 64]", "[[0, 0], [0, (8 - L % 8) % 8]]"
};

// The value of ONNX Shape of a tensor of shape `shape`, with opset 15's start and end as given
// (negative ones count from the end; both are clamped to [0, rank]).
DimValue shape_value(const relay_ir::Shape& shape, int64_t start, int64_t end);

// The attributes of the graph op shape_values that computes `value` (of an integer dtype) from the
// sizes at each call, for an operator that computes with it as a tensor; `name` names it in the
// error for another dtype.
relay_ir::Attrs shape_values_attrs(const DimValue& value, const std::string& name);

// An operand of shape arithmetic: a DimValue, or a constant (any array; only integer arrays of
// rank 0 or 1 take part).
struct DimOperand {
  std::optional<DimValue> dims;
  std::optional<runtime::NDArray> constant;
};

// Evaluates `node`, whose operands at least one of which is a DimValue, when it is shape
// arithmetic (Identity, Cast to an integer, Gather, Unsqueeze, Squeeze, Concat, Slice, Add, Sub,
// Mul, Div, Mod, Min, Max, Neg, Abs, Equal, Less, Greater, Where with a known condition, Shape,
// Size): one DimValue per output. std::nullopt when `node` is none of those; an error naming
// the node when it is one but the operands do not decide its value (a division of a
// symbolic size that may not be exact, a comparison the sizes do not decide). `dim_bounds`
// bounds the dimension variables (non-negative).
std::optional<std::vector<DimValue>> evaluate_dim_node(const ::onnx::NodeProto& node, int opset,
                                                       const std::vector<DimOperand>& operands,
                                                       const tensor_ir::arith::BoundMap& dim_bounds);

}  // namespace tessera::frontend::onnx

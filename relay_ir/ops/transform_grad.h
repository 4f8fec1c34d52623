// Shared pieces of the transform family's gradients (relay_ir/ops/transform_grad*.cc).
#pragma once
#include <vector>

#include "relay_ir/op.h"
#include "runtime/ndarray.h"

namespace tessera::relay_ir::transform_grad {

// The ops only gradients use (unslice, take_grad, weighted_gather), with their own gradients
// (transform_grad_ops.cc); registered before the gradients that build them.
void register_ops(OpRegistry& r);
void register_pad(OpRegistry& r);     // transform_grad_pad.cc
void register_index(OpRegistry& r);   // transform_grad_index.cc: take, gather_*, scatter_*, topk, one_hot
void register_resize(OpRegistry& r);  // transform_grad_resize.cc

const CallNode& as_call(const Expr& e);
const Expr& arg(const Expr& call, size_t i);
// The tensor type of a value (typed first if it is new).
const TensorTypeNode& tensor_of(const Expr& e);
// Element `i` (flat) of an integer or float array, as int64 / double.
int64_t int_at(const runtime::NDArray& a, int64_t i);
double float_at(const runtime::NDArray& a, int64_t i);
// Constants of `shape` from values in row-major order: an integer or a float (32/64) dtype.
Expr int_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<int64_t>& values);
Expr float_constant(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values);

// A sparse linear map along one axis, as weighted_gather's tables: row i of the result is the
// sum over k of weight[i * taps + k] times element index[i * taps + k] of the input.
struct AxisMap {
  int64_t rows = 0, taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
};
// The map's transpose applied to g along `axis` (g has map.rows there; the result has
// `length`, the map's input length): a weighted_gather with the transposed tables.
Expr transposed_gather(const Expr& g, const AxisMap& map, int64_t axis, int64_t length);

}  // namespace tessera::relay_ir::transform_grad

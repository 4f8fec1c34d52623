// Shared pieces of the transform family's op registrations (transform*.cc): the files that
// register_transform_ops calls, and small helpers for type relations, computes and gradients.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "relay_ir/op.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/ndarray.h"
#include "tensor_ir/ops/transform_resize.h"

namespace tessera::relay_ir::transform {

void register_pad_ops(OpRegistry& r);     // pad (transform_pad.cc)
void register_index_ops(OpRegistry& r);   // take, gather_*, scatter_* (transform_index.cc)
void register_resize_ops(OpRegistry& r);  // resize, topk (transform_resize.cc)
// The ops only gradients build (unslice, take_grad, weighted_gather), with their own gradients
// (transform_grad_ops.cc).
void register_grad_ops(OpRegistry& r);

// Fails unless the argument's dtype is an integer type.
void require_integer(const TensorTypeNode& t, const char* what);

// The parameters of a resize call on data of shape `in`, as its compute reads them (scales from
// sizes when only sizes are given; `scales_input`: the call's second input gives them), checked.
tensor_ir::ops::ResizeParams resize_params(const Shape& in, const Attrs& a, bool scales_input);

// For gradients: element `i` (flat) of an integer or float array, as int64 / double.
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

inline AttrSpec required_ints(const std::string& name) { return {name, std::vector<int64_t>{}, true}; }
inline AttrSpec optional_ints(const std::string& name) { return {name, std::vector<int64_t>{}, false}; }

}  // namespace tessera::relay_ir::transform

// Shared pieces of the nn family's gradients (relay_ir/ops/nn_grad*.cc): the ops only gradients
// (and training) use, each group's registration, and helpers that read a call and build the
// graph ops gradients are made of.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/op.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/ops/nn_ops.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir::nn_grad {

// Ops added for gradients and training (nn_grad_ops.cc: conv_weight_grad, max_pool_grad,
// window_sum_grad; nn_grad_ops_norm.cc: batch_norm_train); registered before the gradients.
void register_ops(OpRegistry& r);
void register_norm_ops(OpRegistry& r);
// Gradients by group.
void register_matmul(OpRegistry& r);   // nn_grad_matmul.cc: gemm, einsum
void register_conv(OpRegistry& r);     // nn_grad_conv.cc: conv, conv_transpose, conv_weight_grad
void register_pool(OpRegistry& r);     // nn_grad_pool.cc: pooling and the pooling gradient ops
void register_norm(OpRegistry& r);     // nn_grad_norm.cc: batch_norm(_train), instance_norm, layer_norm, lrn
void register_softmax(OpRegistry& r);  // nn_grad_softmax.cc: softmax, log_softmax, hardmax, nll_loss

const CallNode& as_call(const Expr& e);
const Expr& arg(const Expr& call, size_t i);
// The tensor type of a value (typed first if it is new).
const TensorTypeNode& tensor_of(const Expr& e);
// Element `i` of a Tuple cotangent (of an op returning a tuple), or undefined.
Expr element(const Expr& tuple_grad, size_t i);
// Whether `e` is a constant of zeros (the cotangent the gradient pass gives unused outputs).
bool is_zeros(const Expr& e);

// Graph-op shorthands.
Expr reshape(const Expr& x, const std::vector<int64_t>& shape);
Expr reduce_sum(const Expr& x, const std::vector<int64_t>& axes, bool keepdims);
Expr reduce_mean(const Expr& x, const std::vector<int64_t>& axes, bool keepdims);
Expr cast_to(const Expr& x, DataType dtype);  // x itself when it has that dtype
Expr scalar_like(double value, const Expr& like);
// A per-channel vector [C] reshaped to broadcast along axis 1 of a rank-`rank` value.
Expr channel_view(const Expr& v, size_t rank);
// The axes of a rank-`rank` value except axis 1 (batch and spatial).
std::vector<int64_t> all_but_channels(size_t rank);
// A constant of `shape` and `dtype` (a float type) holding `values`.
Expr constant_of(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values);

using nn::conv_geometry;
using nn::pool_geometry;
// The window attributes of a pooling call (kernel, strides, pads, dilations, ceil_mode).
Attrs window_attrs(const tensor_ir::ops::PoolGeometry& g);
// strides, pads, dilations and groups of a convolution.
Attrs conv_attrs(const tensor_ir::ops::ConvGeometry& g);

}  // namespace tessera::relay_ir::nn_grad

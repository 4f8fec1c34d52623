// The parts of the nn family's op registration (relay_ir/ops/nn*.cc), which register_nn_ops
// (nn.cc) calls in turn, and the helpers their type relations, computes and gradients share.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/compute_of_call.h"
#include "relay_ir/op.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/ndarray.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

void register_nn_matmul_ops(OpRegistry& r);   // nn_matmul.cc: matmul, gemm, matmul_pack_weight, matmul_integer, einsum
void register_nn_conv_ops(OpRegistry& r);     // nn_conv.cc: conv, conv_pack_weight, conv_integer, conv_transpose,
                                              // conv_weight_grad
void register_nn_pool_ops(OpRegistry& r);     // nn_pool.cc: pooling, max_pool_grad, window_sum_grad
void register_nn_norm_ops(OpRegistry& r);     // nn_norm.cc: normalizations, batch_norm_train
void register_nn_softmax_ops(OpRegistry& r);  // nn_softmax.cc: softmax, log_softmax, hardmax, nll_loss
void register_nn_attention_ops(OpRegistry& r);  // nn_attention.cc: attention (two products around a softmax)

namespace nn {

// Fails unless `t` is one of `allowed` (dtype names).
void require_dtype(const TensorTypeNode& t, const std::string& what, std::initializer_list<const char*> allowed);
// Argument `i`, a quantization scale or zero point named `name`, must be of `dtype` and hold one
// value, or (when per_index > 0) one per index.
void check_quant_param(const std::vector<Type>& args, size_t i, const char* name, DataType dtype, int64_t per_index);
// The geometry of a convolution call (conv, conv_integer, qlinear_conv, conv_transpose) with
// `rank` spatial dimensions, its empty attributes filled with their defaults.
tensor_ir::ops::ConvGeometry conv_geometry(const Attrs& a, size_t rank, bool transposed);
// The window geometry of a pooling call (kernel, strides, dilations, pads, ceil_mode), its empty
// attributes filled with their defaults.
tensor_ir::ops::PoolGeometry pool_geometry(const Attrs& a);
// The output sizes of a windowed call (convolution, pooling) along symbolic spatial dimensions,
// which an input smaller than the window (padding included) makes less than 1: a plan of symbolic
// sizes checks them at each call (OpDef::nonempty_dims).
std::vector<OpDef::NonEmptyDim> window_fits(const CallNode& call);
// The same of a channels-last output [N, OH, OW, M].
std::vector<OpDef::NonEmptyDim> window_fits_nhwc(const CallNode& call);
// The tensor-IR input at `i`, or an undefined tensor when the call has fewer arguments.
inline tensor_ir::Tensor optional_input(const std::vector<tensor_ir::Tensor>& in, size_t i) {
  return i < in.size() ? in[i] : tensor_ir::Tensor();
}

// The attributes of ops whose packed operands are laid out for a target's vector registers (conv,
// matmul, gemm and their packing ops): set by AlterOpLayout where it packs, 0 (the target's,
// from compute_of_call) elsewhere.
std::vector<AttrSpec> with_register_attrs(std::vector<AttrSpec> specs);

// For gradients: element `i` of a Tuple cotangent (of an op returning a tuple), or undefined.
Expr element(const Expr& tuple_grad, size_t i);
// Whether `e` is a constant of zeros (the cotangent the gradient pass gives unused outputs).
bool is_zeros(const Expr& e);

// Graph-op shorthands for gradients.
Expr reshape(const Expr& x, const std::vector<int64_t>& shape);  // x itself when it has that shape
Expr reduce_sum(const Expr& x, const std::vector<int64_t>& axes, bool keepdims);
Expr reduce_mean(const Expr& x, const std::vector<int64_t>& axes, bool keepdims);
Expr cast_to(const Expr& x, DataType dtype);  // x itself when it has that dtype
// A per-channel vector [C] reshaped to broadcast along axis 1 of a rank-`rank` value.
Expr channel_view(const Expr& v, size_t rank);
// The axes of a rank-`rank` value except axis 1 (batch and spatial).
std::vector<int64_t> all_but_channels(size_t rank);
// A constant of `shape` and `dtype` (a float type) holding `values`.
Expr constant_of(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values);
// The window attributes of a pooling call (kernel, strides, pads, dilations, ceil_mode).
Attrs window_attrs(const tensor_ir::ops::PoolGeometry& g);
// strides, pads, dilations and groups of a convolution.
Attrs conv_attrs(const tensor_ir::ops::ConvGeometry& g);

}  // namespace nn
}  // namespace tessera::relay_ir

// Compute definitions the nn family's gradients need beyond its forward ops: the weight
// gradient of a convolution (a correlation of the input with the cotangent, where training a
// CNN spends most of its time), the backward passes of max and window-sum pooling, and batch
// normalization in training mode (batch statistics and running-statistics updates).
#pragma once
#include <vector>

#include "tensor_ir/ops/nn.h"

namespace tessera::tensor_ir::ops {

// --- convolution weight gradient (nn_grad_conv.cc) ----------------------------------------

// dW[m, c, k..] = sum over n and output positions o of
//   x[n, group(m) * C / groups + c, o * stride + k * dilation - pad_begin] * dy[n, m, o]
// (reads outside x are zero): the gradient of conv(x, W) with respect to W for the cotangent dy
// [N, M, out...] of its result. `kernel`: W's spatial sizes. Result [M, C / groups, kernel...].
Tensor conv_weight_grad(const Tensor& x, const Tensor& dy, const std::vector<int64_t>& kernel, const ConvGeometry& g,
                        const Registers& regs);
// Checks the shapes (dy must be the convolution's output) and returns [M, C / groups, kernel...].
std::vector<int64_t> conv_weight_grad_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& dy,
                                            const std::vector<int64_t>& kernel, const ConvGeometry& g);
// The register tile of conv_weight_grad's product: output channels x input channels x kernel
// positions along the last spatial dimension, each a vector of partial sums over the flattened
// output positions.
struct ConvWeightGradTile {
  int64_t m = 1, c = 1, k = 1;
};
ConvWeightGradTile conv_weight_grad_tile(int64_t out_channels, int64_t group_channels, int64_t last_kernel,
                                         const Registers& regs);

// --- pooling backward (nn_grad_pool.cc) ---------------------------------------------------

// The gradient of y = max_pool(x) for the cotangent dy: each window's cotangent goes to the
// first position (row-major over the window) holding its maximum, as PyTorch does; positions
// several windows pick sum their cotangents.
Tensor max_pool_grad(const Tensor& x, const Tensor& y, const Tensor& dy, const PoolGeometry& g, const Registers& regs);
// The transpose of a sum over windows: each position of an input of `input_shape` gets the sum
// of v over the windows (inside the input) that cover it. v has the pooled shape.
Tensor window_sum_grad(const Tensor& v, const std::vector<int64_t>& input_shape, const PoolGeometry& g,
                       const Registers& regs);
// For each output position of a pooling over an input of `input_shape`: how many window
// positions fall inside the input (and with count_include_pad, inside its padding too, but not
// past it in ceil mode): avg_pool's divisor. Shape [out...] (the spatial dimensions only).
std::vector<double> pool_window_counts(const std::vector<int64_t>& input_shape, const PoolGeometry& g,
                                       bool count_include_pad);

// --- batch normalization in training mode (nn_grad_norm.cc) -------------------------------

// Normalizes x [N, C, ...] with the statistics of the batch along axis 1 (the biased variance),
// then * scale + bias, and updates the running statistics as ONNX defines them:
//   running_mean' = momentum * mean + (1 - momentum) * batch_mean
//   running_var'  = momentum * var + (1 - momentum) * batch_var
// where batch_var is the biased variance, or with `unbiased_running_var` the unbiased one (as
// PyTorch's running_var). Returns {y, running_mean', running_var', batch_mean, inv_std_dev}
// (inv_std_dev = 1 / sqrt(batch_var + epsilon)); statistics have mean's dtype.
std::vector<Tensor> batch_norm_train(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                     const Tensor& var, double epsilon, double momentum, bool unbiased_running_var);

}  // namespace tessera::tensor_ir::ops

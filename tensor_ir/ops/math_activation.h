// Compute definitions of activation functions (ONNX's definitions; float tensors unless said
// otherwise). Each is one elementwise compute, tagged "elemwise" (prelu: "broadcast").
#pragma once
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

Tensor leaky_relu(const Tensor& x, double alpha);                 // x < 0 ? alpha x : x
Tensor elu(const Tensor& x, double alpha);                        // x < 0 ? alpha (e^x - 1) : x
Tensor selu(const Tensor& x, double alpha, double gamma);         // gamma (x <= 0 ? alpha (e^x - 1) : x)
Tensor celu(const Tensor& x, double alpha);                       // max(0, x) + min(0, alpha (e^(x/alpha) - 1))
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);  // clamp(alpha x + beta, 0, 1)
Tensor hard_swish(const Tensor& x);                               // x hard_sigmoid(x; 1/6, 1/2)
Tensor softplus(const Tensor& x);                                 // log(1 + e^x), without overflow
Tensor softsign(const Tensor& x);                                 // x / (1 + |x|)
Tensor mish(const Tensor& x);                                     // x tanh(softplus(x))
Tensor thresholded_relu(const Tensor& x, double alpha);           // x > alpha ? x : 0
Tensor shrink(const Tensor& x, double bias, double lambd);        // x < -l ? x + b : x > l ? x - b : 0 (any numeric)
// x < 0 ? slope x : x, slope broadcast to x's shape; with channel_axis >= 0, slope is 1-D and
// indexed by that axis of x (the per-channel form of old exporters).
Tensor prelu(const Tensor& x, const Tensor& slope, int channel_axis = -1);
// min(max(x, lo), hi) for any numeric dtype; bounds outside the dtype's range are clamped to it.
Tensor clip(const Tensor& x, double lo, double hi);

}  // namespace tessera::tensor_ir::ops

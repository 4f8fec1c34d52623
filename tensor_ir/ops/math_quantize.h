// Compute definitions of linear quantization (ONNX QuantizeLinear / DequantizeLinear). Scale
// and zero point are scalars (per tensor) or 1-D along `axis` (per axis).
#pragma once
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// saturate(round_half_even(x / scale) + zero_point), in zero_point's dtype (int8 or uint8).
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis);
// (x - zero_point) * scale, in scale's dtype.
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis);

}  // namespace tessera::tensor_ir::ops

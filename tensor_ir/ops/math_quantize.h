// Compute definitions of linear quantization (ONNX QuantizeLinear / DequantizeLinear). Scale
// and zero point are scalars (per tensor), 1-D along `axis` (per axis) or, with block_size > 0,
// shaped like x but ceil(extent / block_size) along `axis` (per block of that many elements).
#pragma once
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// The types values are quantized to: integers of up to 16 bits (int4 and int2 included), the
// float8 formats but e8m0, float4_e2m1fn.
bool is_quantized_type(DataType t);
// The types of scales: float16/32/64, bfloat16.
bool is_scale_type(DataType t);

// saturate(round_half_even(x / scale) + zero_point), in zero_point's dtype; to a float8 or float4
// type, x / scale + zero_point clipped to the type's range (NaN kept) and rounded to nearest even.
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                       int64_t block_size = 0);
// (x - zero_point) * scale, in scale's dtype.
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                         int64_t block_size = 0);

}  // namespace tessera::tensor_ir::ops

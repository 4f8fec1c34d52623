// Values of the narrow storage types (data_type.h) to and from float, in software, with the
// semantics of the ml_dtypes package's conversions (numpy's `astype`), which ONNX's reference
// implementation and the users' arrays use:
//  - floats round to nearest even; a value past the largest finite one becomes infinity where the
//    format has it, else NaN (float4_e2m1fn, which has neither, saturates); NaN stays NaN;
//  - float8_e8m0fnu keeps float32's exponent, rounding up from half the mantissa; zero, negative
//    values, infinities and NaN become its NaN (0xFF);
//  - 4- and 2-bit integers from floats truncate toward zero, and a value out of range (or NaN)
//    becomes 0.
// The kernels' conversions (tensor_ir/transforms/narrow_types.h) compute the same bits.
#pragma once
#include <cstdint>

#include "runtime/data_type.h"

namespace tessera::runtime {

// The value of a narrow float's bits (the low 8 or 16 bits of `code`).
float narrow_float_value(DataType t, uint32_t code);
// The bits of `x` in narrow float type `t`.
uint32_t narrow_float_bits(DataType t, float x);

// The value of a narrow integer's bits (the low `t.bits` of `code`), sign-extended for int2/int4.
int32_t narrow_int_value(DataType t, uint32_t code);

}  // namespace tessera::runtime

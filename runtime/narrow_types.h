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

// Where a float8/float4 format keeps its NaNs and infinities.
enum class NarrowSpecials : uint8_t {
  IEEE,     // all-ones exponent: infinity with a zero mantissa, NaN otherwise (e5m2)
  AllOnes,  // no infinities; S.1111.111 is NaN (e4m3fn)
  NegZero,  // no infinities; 0x80, negative zero's code, is the only NaN (fnuz)
  None,     // no infinities, no NaN (e2m1fn)
};

// The bit layout of a float8 (but e8m0) or float4 type.
struct NarrowFloatFormat {
  int exponent_bits, mantissa_bits, bias;
  NarrowSpecials specials;
  uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  uint32_t max_exponent() const { return (1u << exponent_bits) - 1; }
  // The code of the largest finite magnitude.
  uint32_t max_code() const;
};
// Throws for any other type than the float8 formats but e8m0 and float4_e2m1fn.
NarrowFloatFormat narrow_float_format(DataType t);

// The value of a narrow float's bits (the low 8 or 16 bits of `code`).
float narrow_float_value(DataType t, uint32_t code);
// The bits of `x` in narrow float type `t`.
uint32_t narrow_float_bits(DataType t, float x);

// The value of a narrow integer's bits (the low `t.bits` of `code`), sign-extended for int2/int4.
int32_t narrow_int_value(DataType t, uint32_t code);

}  // namespace tessera::runtime

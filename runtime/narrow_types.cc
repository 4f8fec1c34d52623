#include "runtime/narrow_types.h"

#include <cmath>
#include <cstring>

#include "runtime/error.h"

namespace tessera::runtime {

uint32_t NarrowFloatFormat::max_code() const {
  const uint32_t top = max_exponent() << mantissa_bits, mantissa = (1u << mantissa_bits) - 1;
  switch (specials) {
    case NarrowSpecials::IEEE:
      return top - 1;  // the all-ones exponent holds infinity and NaN
    case NarrowSpecials::AllOnes:
      return top + mantissa - 1;  // all ones is NaN
    default:
      return top + mantissa;
  }
}

NarrowFloatFormat narrow_float_format(DataType t) {
  switch (t.code) {
    case TypeCode::Float8E4M3FN:
      return {4, 3, 7, NarrowSpecials::AllOnes};
    case TypeCode::Float8E4M3FNUZ:
      return {4, 3, 8, NarrowSpecials::NegZero};
    case TypeCode::Float8E5M2:
      return {5, 2, 15, NarrowSpecials::IEEE};
    case TypeCode::Float8E5M2FNUZ:
      return {5, 2, 16, NarrowSpecials::NegZero};
    case TypeCode::Float4E2M1FN:
      return {2, 1, 1, NarrowSpecials::None};
    default:
      fail("type ", t.str(), " is not a float8 or float4 type");
  }
}

namespace {

using Format = NarrowFloatFormat;
using Specials = NarrowSpecials;

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

float small_float_value(const Format& f, uint32_t code) {
  const int m = f.mantissa_bits;
  const uint32_t sign_bit = f.sign_bit();
  const uint32_t max_exponent = f.max_exponent(), max_mantissa = (1u << m) - 1;
  const uint32_t exponent = (code >> m) & max_exponent, mantissa = code & max_mantissa;
  const bool negative = code & sign_bit;
  if (f.specials == Specials::NegZero && code == sign_bit) return NAN;
  if (f.specials == Specials::IEEE && exponent == max_exponent)
    return mantissa ? NAN : (negative ? -INFINITY : INFINITY);
  if (f.specials == Specials::AllOnes && exponent == max_exponent && mantissa == max_mantissa) return NAN;
  const float magnitude =
      exponent == 0 ? std::ldexp(static_cast<float>(mantissa), 1 - f.bias - m)
                    : std::ldexp(static_cast<float>((1u << m) + mantissa), static_cast<int>(exponent) - f.bias - m);
  return negative ? -magnitude : magnitude;
}

uint32_t small_float_bits(const Format& f, float x) {
  const int m = f.mantissa_bits;
  const uint32_t sign = std::signbit(x) ? f.sign_bit() : 0;
  const uint32_t max_exponent = f.max_exponent();
  const uint32_t nan_or_overflow = f.specials == Specials::NegZero   ? f.sign_bit()
                                   : f.specials == Specials::AllOnes ? sign | ((max_exponent << m) | ((1u << m) - 1))
                                                                     : 0;
  if (std::isnan(x)) {
    if (f.specials == Specials::IEEE) return sign | (max_exponent << m) | (1u << (m - 1));
    if (f.specials == Specials::None) return sign ? 0 : f.sign_bit();  // as ml_dtypes does
    return nan_or_overflow;
  }
  const uint32_t max_code = f.max_code();
  const float a = std::fabs(x);
  uint32_t code = max_code + 1;  // infinity overflows
  if (a == 0) {
    code = 0;
  } else if (std::isfinite(a)) {
    int k = 0;
    std::frexp(a, &k);  // a = f 2^k, f in [0.5, 1): a's exponent is k - 1
    const int exponent = std::max(k - 1 + f.bias, 1);
    const float q = std::nearbyint(std::ldexp(a, -(exponent - f.bias - m)));
    code = ((static_cast<uint32_t>(exponent) - 1) << m) + static_cast<uint32_t>(q);
  }
  if (code > max_code) {
    if (f.specials == Specials::IEEE) return sign | (max_exponent << m);
    if (f.specials == Specials::None) return sign | max_code;
    return nan_or_overflow;
  }
  if (f.specials == Specials::NegZero && code == 0) return 0;
  return sign | code;
}

}  // namespace

float narrow_float_value(DataType t, uint32_t code) {
  switch (t.code) {
    case TypeCode::BFloat:
      return float_of((code & 0xFFFF) << 16);
    case TypeCode::Float8E8M0FNU:
      code &= 0xFF;
      return code == 0xFF ? NAN : std::ldexp(1.0f, static_cast<int>(code) - 127);
    default:
      return small_float_value(narrow_float_format(t), code);
  }
}

uint32_t narrow_float_bits(DataType t, float x) {
  const uint32_t b = bits_of(x);
  switch (t.code) {
    case TypeCode::BFloat:
      if (std::isnan(x)) return ((b >> 16) & 0x8000) | 0x7FC0;  // the quiet NaN, as ml_dtypes
      return (b + 0x7FFF + ((b >> 16) & 1)) >> 16;
    case TypeCode::Float8E8M0FNU: {
      if (!(x > 0) || std::isinf(x)) return 0xFF;
      // A float32 subnormal rounds between 2^-127 (0) and 2^-126 (1); at most 0xFF, the NaN.
      if ((b >> 23) == 0) return b >= 0x600000 ? 1 : 0;
      return (b >> 23) + ((b & 0x400000) ? 1 : 0);
    }
    default:
      return small_float_bits(narrow_float_format(t), x);
  }
}

int32_t narrow_int_value(DataType t, uint32_t code) {
  const uint32_t mask = (1u << t.bits) - 1;
  code &= mask;
  if (t.is_int() && (code >> (t.bits - 1))) return static_cast<int32_t>(code) - (1 << t.bits);
  return static_cast<int32_t>(code);
}

}  // namespace tessera::runtime

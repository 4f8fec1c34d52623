#include "runtime/half.h"

#include <cmath>
#include <cstring>

namespace tessera::runtime {

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0);  // inf, quiet NaN
  } else if (exponent == 0) {
    float f = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal (or zero)
    return sign ? -f : f;
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((abs >> 13) & 0x3ffu);  // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // infinity, or rounds above the largest half
  if (abs < 0x38800000u) {                        // subnormal half: round abs * 2^24 to an integer
    float scaled = std::nearbyint(std::ldexp(std::fabs(f), 24));
    return sign | static_cast<uint16_t>(scaled);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

}  // namespace tessera::runtime

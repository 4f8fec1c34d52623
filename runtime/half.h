// IEEE half precision (float16) to and from float, in software: not every compiler Tessera builds
// with has a half type on x86 (clang 14 has none), and the conversions must agree everywhere
// (constants in the graph IR's text, ONNX tensors, the JIT's helpers, measurement inputs).
#pragma once
#include <cstdint>

namespace tessera::runtime {

// Exact: every half is a float.
float half_to_float(uint16_t bits);
// Rounds to nearest even, overflowing to infinity and underflowing gradually; a NaN stays a
// (quiet) NaN with the top of its payload, as the x86 conversion instructions do.
uint16_t float_to_half(float f);

}  // namespace tessera::runtime

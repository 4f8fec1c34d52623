// float16 in software (runtime/half.h): rounding to nearest even, the edges of the range, and
// every half surviving the trip through float.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/half.h"

namespace tessera::runtime {
namespace {

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(-65504.0f), 0xfbff);           // the largest half
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);            // below the midpoint to 65536
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);            // the midpoint rounds to even: infinity
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // a tie rounds to the even neighbour
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_EQ(float_to_half(6e-8f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half(2e-8f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(Half, EveryHalfIsAFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float f = half_to_float(h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << bits;
      continue;
    }
    EXPECT_EQ(float_to_half(f), h) << bits;
  }
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
}

}  // namespace
}  // namespace tessera::runtime

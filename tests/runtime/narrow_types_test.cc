// The narrow types' conversions in software (runtime/narrow_types.h): known values of each
// format, every code surviving the trip through float, and the types' names. (Python's
// test_narrow_types.py compares them with ml_dtypes bit for bit.)
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/data_type.h"
#include "runtime/narrow_types.h"

namespace tessera::runtime {
namespace {

const DataType kE4M3FN(TypeCode::Float8E4M3FN, 8), kE4M3FNUZ(TypeCode::Float8E4M3FNUZ, 8),
    kE5M2(TypeCode::Float8E5M2, 8), kE5M2FNUZ(TypeCode::Float8E5M2FNUZ, 8), kE8M0(TypeCode::Float8E8M0FNU, 8),
    kE2M1(TypeCode::Float4E2M1FN, 4);

TEST(NarrowTypes, NamesParseBackAndTypesSayWhatTheyComputeIn) {
  for (DataType t : {kBFloat16, kE4M3FN, kE4M3FNUZ, kE5M2, kE5M2FNUZ, kE8M0, kE2M1, DataType::Int(4), DataType::UInt(4),
                     DataType::Int(2), DataType::UInt(2)}) {
    EXPECT_EQ(DataType::parse(t.str()), t) << t.str();
    EXPECT_TRUE(t.is_narrow()) << t.str();
    EXPECT_EQ(t.element_bytes(), t == kBFloat16 ? 2 : 1);
  }
  EXPECT_EQ(kE4M3FN.str(), "float8_e4m3fn");
  EXPECT_EQ(kBFloat16.compute_type(), kFloat32);
  EXPECT_EQ(DataType::Int(4).compute_type(), DataType::Int(8));
  EXPECT_EQ(kBFloat16.with_lanes(4).storage_type(), DataType::UInt(16, 4));
  EXPECT_FALSE(kFloat16.is_narrow());
  EXPECT_FALSE(DataType::Int(8).is_narrow());
}

TEST(NarrowTypes, KnownValues) {
  EXPECT_EQ(narrow_float_bits(kBFloat16, 1.0f), 0x3F80u);
  EXPECT_EQ(narrow_float_bits(kBFloat16, 1.0f + 1.0f / 256), 0x3F80u);  // a tie rounds to even
  EXPECT_EQ(narrow_float_bits(kBFloat16, -NAN), 0xFFC0u);
  EXPECT_EQ(narrow_float_bits(kE4M3FN, 448), 0x7Eu);         // the largest
  EXPECT_EQ(narrow_float_bits(kE4M3FN, 464), 0x7Eu);         // the tie below NaN rounds to even
  EXPECT_EQ(narrow_float_bits(kE4M3FN, 470), 0x7Fu);         // past it: NaN (no infinity)
  EXPECT_EQ(narrow_float_bits(kE4M3FN, 0.001f), 0x01u);      // a subnormal
  EXPECT_EQ(narrow_float_bits(kE4M3FNUZ, -0.0f), 0x00u);     // no negative zero
  EXPECT_EQ(narrow_float_bits(kE4M3FNUZ, INFINITY), 0x80u);  // its only NaN
  EXPECT_EQ(narrow_float_bits(kE5M2, 1e9f), 0x7Cu);          // infinity
  EXPECT_EQ(narrow_float_bits(kE2M1, 5.0f), 0x6u);           // 4, the even neighbour of 6
  EXPECT_EQ(narrow_float_bits(kE2M1, 100.0f), 0x7u);         // saturates
  EXPECT_EQ(narrow_float_bits(kE8M0, 3.0f), 129u);           // half the mantissa rounds up
  EXPECT_EQ(narrow_float_bits(kE8M0, 0.0f), 0xFFu);          // no zero: NaN
  EXPECT_EQ(narrow_float_bits(kE8M0, std::ldexp(1.0f, -127)), 0u);
  EXPECT_EQ(narrow_float_value(kE8M0, 127), 1.0f);
  EXPECT_EQ(narrow_float_value(kE5M2FNUZ, 0x7F), 57344.0f);
  EXPECT_EQ(narrow_int_value(DataType::Int(4), 0xD), -3);
  EXPECT_EQ(narrow_int_value(DataType::UInt(2), 0x7), 3);
}

TEST(NarrowTypes, EveryCodeSurvivesTheTripThroughFloat) {
  for (DataType t : {kBFloat16, kE4M3FN, kE4M3FNUZ, kE5M2, kE5M2FNUZ, kE8M0, kE2M1}) {
    for (uint32_t code = 0; code < (1u << t.bits); ++code) {
      const float f = narrow_float_value(t, code);
      if (std::isnan(f)) continue;
      EXPECT_EQ(narrow_float_bits(t, f), code) << t.str() << " " << code;
    }
  }
}

}  // namespace
}  // namespace tessera::runtime

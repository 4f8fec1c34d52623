#include "runtime/data_type.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "runtime/error.h"

namespace tessera::runtime {

namespace {

struct NarrowFloatName {
  TypeCode code;
  int bits;
  const char* name;
};
constexpr NarrowFloatName kNarrowFloats[] = {
    {TypeCode::BFloat, 16, "bfloat16"},
    {TypeCode::Float8E4M3FN, 8, "float8_e4m3fn"},
    {TypeCode::Float8E4M3FNUZ, 8, "float8_e4m3fnuz"},
    {TypeCode::Float8E5M2, 8, "float8_e5m2"},
    {TypeCode::Float8E5M2FNUZ, 8, "float8_e5m2fnuz"},
    {TypeCode::Float8E8M0FNU, 8, "float8_e8m0fnu"},
    {TypeCode::Float4E2M1FN, 4, "float4_e2m1fn"},
};

// Largest finite values of the narrow floats.
double narrow_float_max(TypeCode code) {
  switch (code) {
    case TypeCode::BFloat:
      return 3.3895313892515355e38;
    case TypeCode::Float8E4M3FN:
      return 448;
    case TypeCode::Float8E4M3FNUZ:
      return 240;
    case TypeCode::Float8E5M2:
    case TypeCode::Float8E5M2FNUZ:
      return 57344;
    case TypeCode::Float8E8M0FNU:
      return std::ldexp(1.0, 127);
    case TypeCode::Float4E2M1FN:
      return 6;
    default:
      return 0;
  }
}

}  // namespace

DataType DataType::compute_type() const {
  if (is_narrow_float()) return Float(32, lanes);
  if (is_narrow()) return {code, 8, lanes};
  return *this;
}

std::string DataType::str() const {
  std::string base;
  switch (code) {
    case TypeCode::Int:
      base = "int" + std::to_string(bits);
      break;
    case TypeCode::UInt:
      base = "uint" + std::to_string(bits);
      break;
    case TypeCode::Float:
      base = "float" + std::to_string(bits);
      break;
    case TypeCode::Bool:
      base = "bool";
      break;
    case TypeCode::Handle:
      base = "handle";
      break;
    default:
      for (const auto& n : kNarrowFloats)
        if (n.code == code) base = n.name;
  }
  return lanes == 1 ? base : base + "x" + std::to_string(lanes);
}

DataType DataType::parse(const std::string& name) {
  std::string s = name;
  int lanes = 1;
  if (auto x = s.find('x'); x != std::string::npos) {
    try {
      lanes = std::stoi(s.substr(x + 1));
    } catch (...) {
      fail("unknown data type '", name, "'");
    }
    s = s.substr(0, x);
  }
  DataType t;
  if (s == "bool") {
    t = Bool();
  } else if (s == "handle") {
    t = Handle();
  } else if (s == "float16" || s == "float32" || s == "float64") {
    t = Float(std::stoi(s.substr(5)));
  } else if (s == "int2" || s == "int4" || s == "int8" || s == "int16" || s == "int32" || s == "int64") {
    t = Int(std::stoi(s.substr(3)));
  } else if (s == "uint2" || s == "uint4" || s == "uint8" || s == "uint16" || s == "uint32" || s == "uint64") {
    t = UInt(std::stoi(s.substr(4)));
  } else {
    auto n = std::find_if(std::begin(kNarrowFloats), std::end(kNarrowFloats),
                          [&](const NarrowFloatName& f) { return s == f.name; });
    if (n == std::end(kNarrowFloats))
      fail("unknown data type '", name,
           "' (expected float16/32/64, int2/4/8/16/32/64, uint2/4/8/16/32/64, bool, bfloat16, float8_e4m3fn, "
           "float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu or float4_e2m1fn)");
    t = DataType(n->code, n->bits);
  }
  if (lanes < 1 || lanes > 1024) fail("data type '", name, "' has an invalid lane count");
  return t.with_lanes(lanes);
}

double DataType::max_value() const {
  switch (code) {
    case TypeCode::Int:
      return std::ldexp(1.0, bits - 1) - 1;
    case TypeCode::UInt:
      return std::ldexp(1.0, bits) - 1;
    case TypeCode::Bool:
      return 1;
    case TypeCode::Float:
      if (bits == 16) return 65504.0;
      if (bits == 32) return std::numeric_limits<float>::max();
      return std::numeric_limits<double>::max();
    case TypeCode::Handle:
      break;
    default:
      return narrow_float_max(code);
  }
  fail("type ", str(), " has no maximum value");
}

double DataType::min_value() const {
  switch (code) {
    case TypeCode::Int:
      return -std::ldexp(1.0, bits - 1);
    case TypeCode::UInt:
    case TypeCode::Bool:
      return 0;
    case TypeCode::Float:
      return -max_value();
    case TypeCode::Float8E8M0FNU:
      return std::ldexp(1.0, -127);  // unsigned, without zero: the smallest value
    case TypeCode::Handle:
      break;
    default:
      return -narrow_float_max(code);
  }
  fail("type ", str(), " has no minimum value");
}

}  // namespace tessera::runtime

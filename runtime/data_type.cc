#include "runtime/data_type.h"

#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace tessera::runtime {

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
  } else if (s == "int8" || s == "int16" || s == "int32" || s == "int64") {
    t = Int(std::stoi(s.substr(3)));
  } else if (s == "uint8" || s == "uint16" || s == "uint32" || s == "uint64") {
    t = UInt(std::stoi(s.substr(4)));
  } else {
    fail("unknown data type '", name, "' (expected float16/32/64, int8/16/32/64, uint8/16/32/64 or bool)");
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
    case TypeCode::Handle:
      break;
  }
  fail("type ", str(), " has no minimum value");
}

}  // namespace tessera::runtime

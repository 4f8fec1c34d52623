// Converters of elementwise, broadcasting, reduction and quantization ONNX operators.
#include "frontend/onnx/ops_math.h"

#include <cstring>

#include "runtime/element.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

namespace {

// IEEE binary16 bits of a float, rounding to nearest even.
uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exponent = (x >> 23) & 0xff;
  uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  int e = static_cast<int>(exponent) - 112;  // the binary16 biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t shift = 13, bits;
  if (e <= 0) {  // a binary16 subnormal (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    shift = static_cast<uint32_t>(14 - e);
    bits = mantissa >> shift;
  } else {
    bits = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  }
  uint32_t rest = mantissa & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (bits & 1))) ++bits;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | bits);
}

template <typename T>
void fill_as(const runtime::NDArray& a, T value) {
  T* p = a.data_as<T>();
  for (int64_t i = 0; i < a.numel(); ++i) p[i] = value;
}

// Element i of a numeric array, if a double holds it exactly.
std::optional<double> exact_element(const runtime::NDArray& a, int64_t i) {
  constexpr int64_t kExact = int64_t{1} << 53;
  runtime::DataType t = a.dtype();
  if (t.is_narrow()) return runtime::element_as_double(a, i);  // every narrow value is a double
  switch (t.code) {
    case runtime::TypeCode::Float:
      if (t.bits == 64) return a.data_as<double>()[i];
      if (t.bits == 32) return a.data_as<float>()[i];
      return std::nullopt;
    case runtime::TypeCode::Int: {
      int64_t v = t.bits == 8    ? a.data_as<int8_t>()[i]
                  : t.bits == 16 ? a.data_as<int16_t>()[i]
                  : t.bits == 32 ? a.data_as<int32_t>()[i]
                                 : a.data_as<int64_t>()[i];
      if (v <= -kExact || v >= kExact) return std::nullopt;
      return static_cast<double>(v);
    }
    case runtime::TypeCode::UInt: {
      uint64_t v = t.bits == 8    ? a.data_as<uint8_t>()[i]
                   : t.bits == 16 ? a.data_as<uint16_t>()[i]
                   : t.bits == 32 ? a.data_as<uint32_t>()[i]
                                  : a.data_as<uint64_t>()[i];
      if (v >= static_cast<uint64_t>(kExact)) return std::nullopt;
      return static_cast<double>(v);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<double> uniform_value(const runtime::NDArray& a) {
  std::optional<double> v;
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::optional<double> x = exact_element(a, i);
    if (!x || (v && *v != *x)) return std::nullopt;
    v = x;
  }
  return v;
}

runtime::NDArray filled(const std::vector<int64_t>& shape, runtime::DataType dtype, double value) {
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  using runtime::TypeCode;
  if (dtype.is_narrow()) {
    for (int64_t i = 0; i < a.numel(); ++i) runtime::store_element(a, i, value);
    return a;
  }
  switch (dtype.code) {
    case TypeCode::Float:
      if (dtype.bits == 16) fill_as(a, half_bits(static_cast<float>(value)));
      else if (dtype.bits == 32) fill_as(a, static_cast<float>(value));
      else fill_as(a, value);
      break;
    case TypeCode::Bool:
      fill_as(a, static_cast<uint8_t>(value != 0));
      break;
    case TypeCode::Int:
    case TypeCode::UInt:
      switch (dtype.bits) {
        case 8:
          fill_as(a, static_cast<uint8_t>(static_cast<int64_t>(value)));
          break;
        case 16:
          fill_as(a, static_cast<uint16_t>(static_cast<int64_t>(value)));
          break;
        case 32:
          fill_as(a, static_cast<uint32_t>(static_cast<int64_t>(value)));
          break;
        default:
          fill_as(a, static_cast<int64_t>(value));
      }
      break;
    default:
      fail("no constants of type ", dtype.str());
  }
  return a;
}

relay_ir::Expr scalar_constant(double value, runtime::DataType dtype) {
  return relay_ir::constant(filled({}, dtype, value));
}

relay_ir::Expr cast_to(ConvertContext& c, const relay_ir::Expr& x, runtime::DataType from, const std::string& dtype) {
  return from.str() == dtype ? x : c.call("cast", {x}, {{"dtype", dtype}});
}

void register_math_converters(ConverterTable& t) {
  register_math_unary_converters(t);
  register_math_binary_converters(t);
  register_math_reduce_converters(t);
  register_math_quantize_converters(t);
}

}  // namespace tessera::frontend::onnx

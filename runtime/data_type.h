// Element types of tensors and IR values: a type code, a bit width and a vector lane count.
// float16 is a storage type; arithmetic on it happens in float32 (see targets/llvm).
// The narrow types (bfloat16, the float8 and float4 formats, 4- and 2-bit integers) are storage
// types too, named and laid out as the ml_dtypes package does (one element per byte below 8
// bits): kernels compute on them in their compute_type(), converting at every load and store
// (tensor_ir/transforms/narrow_types.h).
#pragma once
#include <cstdint>
#include <string>

namespace tessera::runtime {

enum class TypeCode : uint8_t {
  Int,
  UInt,
  Float,
  Bool,
  Handle,
  BFloat,          // bfloat16: float32's sign and exponent, 7 mantissa bits
  Float8E4M3FN,    // 4 exponent, 3 mantissa bits; no infinities; NaN is S.1111.111
  Float8E4M3FNUZ,  // the same, exponent bias 8; the only NaN is 0x80 (no negative zero)
  Float8E5M2,      // IEEE-like: infinities and NaNs
  Float8E5M2FNUZ,  // exponent bias 16; the only NaN is 0x80
  Float8E8M0FNU,   // a power of two 2^(e-127), unsigned; 0xFF is NaN; no zero
  Float4E2M1FN,    // 2 exponent, 1 mantissa bit; no infinities, no NaN
};

struct DataType {
  TypeCode code = TypeCode::Float;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DataType() = default;
  constexpr DataType(TypeCode c, int b, int l = 1)
      : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {TypeCode::Int, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {TypeCode::UInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {TypeCode::Float, bits, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {TypeCode::Bool, 1, lanes}; }
  static constexpr DataType Handle() { return {TypeCode::Handle, 64, 1}; }
  // Parses "float32", "int64", "bool", "float32x16", "bfloat16", "float8_e4m3fn", "int4";
  // throws tessera::Error on anything else.
  static DataType parse(const std::string& name);

  bool is_int() const { return code == TypeCode::Int; }
  bool is_uint() const { return code == TypeCode::UInt; }
  bool is_float() const { return code == TypeCode::Float; }
  bool is_bool() const { return code == TypeCode::Bool; }
  bool is_handle() const { return code == TypeCode::Handle; }
  bool is_integer() const { return is_int() || is_uint(); }  // bool is not an integer type
  // bfloat16, float8 or float4.
  bool is_narrow_float() const { return code >= TypeCode::BFloat; }
  // A type kernels only store: a narrow float or an integer of fewer than 8 bits.
  bool is_narrow() const { return is_narrow_float() || (is_integer() && bits < 8); }
  // The unsigned integer type of a narrow type's bits in memory (uint16 or uint8).
  DataType storage_type() const { return {TypeCode::UInt, bits > 8 ? 16 : 8, lanes}; }
  // What kernels compute a narrow type's values in: float32, int8 or uint8.
  DataType compute_type() const;
  bool is_scalar() const { return lanes == 1; }
  bool is_vector() const { return lanes > 1; }

  DataType element() const { return with_lanes(1); }
  DataType with_lanes(int l) const { return {code, bits, l}; }
  // Bytes one element occupies in memory (bool and the types below 8 bits take one byte).
  int element_bytes() const { return (bits + 7) / 8; }

  // Largest and smallest finite values, as doubles (exact for every type but 64-bit ints).
  double max_value() const;
  double min_value() const;

  std::string str() const;
  bool operator==(const DataType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

constexpr DataType kFloat32 = DataType::Float(32);
constexpr DataType kFloat64 = DataType::Float(64);
constexpr DataType kFloat16 = DataType::Float(16);
constexpr DataType kInt32 = DataType::Int(32);
constexpr DataType kInt64 = DataType::Int(64);
constexpr DataType kBool = DataType::Bool();
constexpr DataType kBFloat16 = DataType(TypeCode::BFloat, 16);

}  // namespace tessera::runtime

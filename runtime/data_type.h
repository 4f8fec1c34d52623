// Element types of tensors and IR values: a type code, a bit width and a vector lane count.
// float16 is a storage type; arithmetic on it happens in float32 (see targets/llvm).
#pragma once
#include <cstdint>
#include <string>

namespace tessera::runtime {

enum class TypeCode : uint8_t { Int, UInt, Float, Bool, Handle };

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
  // Parses "float32", "int64", "bool", "float32x16"; throws tessera::Error on anything else.
  static DataType parse(const std::string& name);

  bool is_int() const { return code == TypeCode::Int; }
  bool is_uint() const { return code == TypeCode::UInt; }
  bool is_float() const { return code == TypeCode::Float; }
  bool is_bool() const { return code == TypeCode::Bool; }
  bool is_handle() const { return code == TypeCode::Handle; }
  bool is_integer() const { return is_int() || is_uint(); }  // bool is not an integer type
  bool is_scalar() const { return lanes == 1; }
  bool is_vector() const { return lanes > 1; }

  DataType element() const { return with_lanes(1); }
  DataType with_lanes(int l) const { return {code, bits, l}; }
  // Bytes one element occupies in memory (bool is stored as one byte).
  int element_bytes() const { return is_bool() ? 1 : bits / 8; }

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

}  // namespace tessera::runtime

#include "frontend/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "runtime/shape_size.h"

namespace tessera::frontend::onnx {

using runtime::DataType;
using TP = ::onnx::TensorProto;

namespace {

// The element types ONNX added after 1.12, whose names Debian's protobuf schema may lack.
enum NewerType : int {
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

}  // namespace

DataType dtype_from_onnx(int t, const std::string& what) {
  using runtime::TypeCode;
  switch (t) {
    case TP::BFLOAT16:
      return runtime::kBFloat16;
    case kFloat8E4M3FN:
      return DataType(TypeCode::Float8E4M3FN, 8);
    case kFloat8E4M3FNUZ:
      return DataType(TypeCode::Float8E4M3FNUZ, 8);
    case kFloat8E5M2:
      return DataType(TypeCode::Float8E5M2, 8);
    case kFloat8E5M2FNUZ:
      return DataType(TypeCode::Float8E5M2FNUZ, 8);
    case kFloat8E8M0:
      return DataType(TypeCode::Float8E8M0FNU, 8);
    case kFloat4E2M1:
      return DataType(TypeCode::Float4E2M1FN, 4);
    case kUInt4:
      return DataType::UInt(4);
    case kInt4:
      return DataType::Int(4);
    case kUInt2:
      return DataType::UInt(2);
    case kInt2:
      return DataType::Int(2);
    case TP::FLOAT:
      return runtime::kFloat32;
    case TP::DOUBLE:
      return runtime::kFloat64;
    case TP::FLOAT16:
      return runtime::kFloat16;
    case TP::INT8:
      return DataType::Int(8);
    case TP::INT16:
      return DataType::Int(16);
    case TP::INT32:
      return runtime::kInt32;
    case TP::INT64:
      return runtime::kInt64;
    case TP::UINT8:
      return DataType::UInt(8);
    case TP::UINT16:
      return DataType::UInt(16);
    case TP::UINT32:
      return DataType::UInt(32);
    case TP::UINT64:
      return DataType::UInt(64);
    case TP::BOOL:
      return runtime::kBool;
    case TP::STRING:
      fail(what, ": string tensors are not supported");
    case TP::COMPLEX64:
    case TP::COMPLEX128:
      fail(what, ": complex tensors are not supported");
    default:
      fail(what, ": unknown ONNX data type ", t);
  }
}

int onnx_type_of(DataType dtype) {
  for (int code = TP::FLOAT; code <= kInt2; ++code)
    if (code != TP::STRING && code != TP::COMPLEX64 && code != TP::COMPLEX128 && dtype_from_onnx(code, "") == dtype)
      return code;
  fail("the data type ", dtype.str(), " has no ONNX type");
}

namespace {

// Reads [offset, offset + length) of an external data file that must lie inside base_dir.
std::string read_external(const TP& t, const std::string& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (location.empty()) fail("tensor '", t.name(), "': external data without a location");
  namespace fs = std::filesystem;
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir));
  fs::path file = fs::weakly_canonical(base / location);
  auto rel = file.lexically_relative(base);
  if (fs::path(location).is_absolute() || rel.empty() || *rel.begin() == "..")
    fail("tensor '", t.name(), "': external data file '", location, "' is outside the model's folder ", base.string());
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("tensor '", t.name(), "': cannot open external data file ", file.string());
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    fail("tensor '", t.name(), "': external data range [", offset, ", ", offset + length, ") is outside ",
         file.string(), " (", size, " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

// How many values the typed field that holds `t`'s data type has.
int64_t typed_value_count(const TP& t, const std::string& what) {
  switch (t.data_type()) {
    case TP::FLOAT:
      return t.float_data_size();
    case TP::DOUBLE:
      return t.double_data_size();
    case TP::INT64:
      return t.int64_data_size();
    case TP::UINT32:
    case TP::UINT64:
      return t.uint64_data_size();
    case TP::INT32:
    case TP::INT16:
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16:
    case TP::INT8:
    case TP::UINT8:
    case TP::BOOL:
      return t.int32_data_size();
    default:
      fail(what, ": unsupported data type");
  }
}

// ONNX packs the types below 8 bits, 8 / bits values a byte from the low bits up (raw data, and
// int32_data's entries, one byte each); arrays hold one value a byte.
bool is_packed(const DataType& t) { return t.bits < 8 && !t.is_bool(); }  // a bool takes a byte

int64_t packed_bytes(const DataType& t, int64_t n) {
  const int64_t per_byte = 8 / t.bits;
  return (n + per_byte - 1) / per_byte;
}

runtime::NDArray unpacked(const std::string& packed, const std::vector<int64_t>& shape, DataType t, int64_t n) {
  runtime::NDArray a = runtime::NDArray::empty(shape, t);
  auto* out = static_cast<uint8_t*>(a.data());
  const int per_byte = 8 / t.bits;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<uint8_t>((static_cast<uint8_t>(packed[i / per_byte]) >> (t.bits * (i % per_byte))) &
                                  ((1 << t.bits) - 1));
  return a;
}

template <typename Src, typename Dst>
void copy_converted(const google::protobuf::RepeatedField<Src>& src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<Dst*>(dst)[i] = static_cast<Dst>(src.Get(static_cast<int>(i)));
}

}  // namespace

runtime::NDArray tensor_from_proto(const TP& t, const std::string& base_dir) {
  std::string what = "tensor '" + t.name() + "'";
  DataType dtype = dtype_from_onnx(t.data_type(), what);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  // The data is checked against the shape before the array is allocated: a file's dims may claim
  // far more than its data holds.
  const size_t bytes = runtime::checked_nbytes(shape, dtype, what);
  const int64_t n = runtime::checked_numel(shape, what);
  if (is_packed(dtype)) {
    std::string raw;
    if (t.data_location() == TP::EXTERNAL) raw = read_external(t, base_dir);
    else if (t.has_raw_data()) raw = t.raw_data();
    else
      for (int32_t byte : t.int32_data()) raw.push_back(static_cast<char>(byte));
    if (static_cast<int64_t>(raw.size()) != packed_bytes(dtype, n))
      fail(what, ": has ", raw.size(), " bytes of packed ", dtype.str(), " values, its shape needs ",
           packed_bytes(dtype, n));
    return unpacked(raw, shape, dtype, n);
  }
  if (t.data_location() == TP::EXTERNAL) {
    std::string raw = read_external(t, base_dir);
    if (raw.size() != bytes) fail(what, ": external data has ", raw.size(), " bytes, its shape needs ", bytes);
    runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
    std::memcpy(a.data(), raw.data(), bytes);
    return a;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      fail(what, ": raw data has ", t.raw_data().size(), " bytes, its shape needs ", bytes);
    runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
    std::memcpy(a.data(), t.raw_data().data(), bytes);
    return a;
  }
  // Typed fields: int32_data also holds int8/16, uint8/16, bool, float16, bfloat16 and float8 bits.
  const int64_t have = typed_value_count(t, what);
  if (have != n) fail(what, ": has ", have, " values, its shape needs ", n);
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  switch (t.data_type()) {
    case TP::FLOAT:
      copy_converted<float, float>(t.float_data(), a.data(), n);
      break;
    case TP::DOUBLE:
      copy_converted<double, double>(t.double_data(), a.data(), n);
      break;
    case TP::INT64:
      copy_converted<int64_t, int64_t>(t.int64_data(), a.data(), n);
      break;
    case TP::UINT32:
    case TP::UINT64:
      if (dtype.bits == 32) copy_converted<uint64_t, uint32_t>(t.uint64_data(), a.data(), n);
      else copy_converted<uint64_t, uint64_t>(t.uint64_data(), a.data(), n);
      break;
    case TP::INT32:
      copy_converted<int32_t, int32_t>(t.int32_data(), a.data(), n);
      break;
    case TP::INT16:
      copy_converted<int32_t, int16_t>(t.int32_data(), a.data(), n);
      break;
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16:
      copy_converted<int32_t, uint16_t>(t.int32_data(), a.data(), n);
      break;
    case TP::INT8:
      copy_converted<int32_t, int8_t>(t.int32_data(), a.data(), n);
      break;
    case TP::UINT8:
    case TP::BOOL:
    case kFloat8E4M3FN:
    case kFloat8E4M3FNUZ:
    case kFloat8E5M2:
    case kFloat8E5M2FNUZ:
    case kFloat8E8M0:
      copy_converted<int32_t, uint8_t>(t.int32_data(), a.data(), n);
      break;
    default:
      break;  // typed_value_count refused it
  }
  return a;
}

}  // namespace tessera::frontend::onnx

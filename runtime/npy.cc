#include "runtime/npy.h"

#include <cstring>
#include <fstream>

#include "runtime/error.h"

namespace tessera::runtime {

namespace {

// numpy's type string for a dtype ("<f4", "|b1", ...).
std::string descr_of(DataType t) {
  if (t.is_bool()) return "|b1";
  char kind = t.is_float() ? 'f' : t.is_int() ? 'i' : 'u';
  int bytes = t.element_bytes();
  return std::string(bytes == 1 ? "|" : "<") + kind + std::to_string(bytes);
}

DataType dtype_of(const std::string& descr, const std::string& path) {
  if (descr == "|b1") return kBool;
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|'))
    fail(path, ": unsupported .npy dtype '", descr, "' (only little-endian)");
  int bits = std::stoi(descr.substr(2)) * 8;
  switch (descr[1]) {
    case 'f':
      return DataType::Float(bits);
    case 'i':
      return DataType::Int(bits);
    case 'u':
      return DataType::UInt(bits);
    default:
      fail(path, ": unsupported .npy dtype '", descr, "'");
  }
}

// The value of `key` in the header dict ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }).
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) fail(path, ": .npy header has no '", key, "'");
  size_t colon = header.find(':', k);
  size_t start = header.find_first_not_of(' ', colon + 1);
  size_t end = header[start] == '(' ? header.find(')', start) + 1 : header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

}  // namespace

NDArray load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path);
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, ": not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 2);
    header_len = n;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  if (!in || header_len > (1u << 20)) fail(path, ": corrupt .npy header");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) fail(path, ": truncated .npy header");
  std::string descr = header_value(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);  // strip quotes
  if (header_value(header, "fortran_order", path) != "False") fail(path, ": Fortran-ordered arrays are not supported");
  std::string shape_text = header_value(header, "shape", path);
  std::vector<int64_t> shape;
  for (size_t i = 1; i < shape_text.size();) {
    size_t j = shape_text.find_first_of(",)", i);
    std::string item = shape_text.substr(i, j - i);
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(item));
    i = j + 1;
  }
  NDArray a = NDArray::empty(shape, dtype_of(descr, path));
  in.read(static_cast<char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
  if (!in) fail(path, ": truncated .npy data (expected ", a.nbytes(), " bytes)");
  return a;
}

void save_npy(const std::string& path, const NDArray& array) {
  // An array on a device is copied to the host first, before the file is opened: a failed copy
  // leaves no half-written file.
  const NDArray a = array.device().type == DeviceType::CPU ? array : array.copy_to(Device::cpu());
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i)
    shape += std::to_string(a.shape()[i]) + (a.shape().size() == 1 || i + 1 < a.shape().size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '" + descr_of(a.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // The data starts 64-byte aligned; the header ends with a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("cannot write ", path);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t n = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&n), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
  if (!out) fail("error writing ", path);
}

}  // namespace tessera::runtime

// Small graph-building helpers shared by the relay_ir tests.
#pragma once
#include <cstring>
#include <vector>

#include "relay_ir/expr.h"

namespace tessera::relay_ir::testing {

using runtime::kFloat32;

inline Type f32(std::vector<int64_t> shape) { return tensor_type(std::move(shape), kFloat32); }

// A constant of `dtype` whose elements are `values`, stored as T (the dtype's C type).
template <typename T>
Expr constant_of(DataType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), dtype);
  std::memcpy(a.data(), values.data(), values.size() * sizeof(T));
  return constant(a);
}

}  // namespace tessera::relay_ir::testing

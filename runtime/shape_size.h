// The element and byte counts of a shape, checked: a shape read from a file (an ONNX initializer,
// a graph's text) may claim more elements than int64 counts or memory holds, and must be refused
// by name before anything is allocated for it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data_type.h"

namespace tessera::runtime {

// The number of elements of `shape`; throws an Error naming `what` and the shape when a dimension
// is negative or the count overflows int64.
int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what);
// The bytes of `shape` elements of `dtype`, checked as checked_numel does, and refused beyond
// 2^62 bytes (no allocator gives that much; it keeps every later offset computation in range).
size_t checked_nbytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& what);

}  // namespace tessera::runtime

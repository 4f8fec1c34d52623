#include "runtime/shape_size.h"

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(what, ": negative dimension in shape ", shape_str(shape));
    if (__builtin_mul_overflow(n, d, &n))
      fail(what, ": shape ", shape_str(shape), " has more elements than int64 counts");
  }
  return n;
}

size_t checked_nbytes(const std::vector<int64_t>& shape, DataType dtype, const std::string& what) {
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  int64_t n = checked_numel(shape, what), bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype.element_bytes()), &bytes) || bytes > kMaxBytes)
    fail(what, ": shape ", shape_str(shape), " of ", dtype.str(), " needs more memory than can be allocated");
  return static_cast<size_t>(bytes);
}

}  // namespace tessera::runtime

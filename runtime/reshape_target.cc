#include "runtime/reshape_target.h"

#include <string>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

std::vector<int64_t> reshape_target(const std::vector<int64_t>& in, std::vector<int64_t> shape, bool allowzero,
                                    bool check_count) {
  int64_t known = 1, infer = -1;
  bool zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= in.size())
        fail("shape entry ", i, " is 0 (copy the input dimension), but the input has rank ", in.size());
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) fail("the shape ", shape_str(shape), " has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail("the shape ", shape_str(shape), " has the invalid dimension ", shape[i]);
    } else {
      zero |= shape[i] == 0;
      if (__builtin_mul_overflow(known, shape[i], &known))
        fail("the shape ", shape_str(shape), " has more elements than 64 bits count");
    }
  }
  int64_t numel = 1;
  for (int64_t d : in)
    if (__builtin_mul_overflow(numel, d, &numel))
      fail("the input shape ", shape_str(in), " has more elements than 64 bits count");
  if (infer >= 0) {
    if (allowzero && zero) fail("with allowzero=1 the shape cannot hold both 0 and -1");
    if (known == 0 || numel % known)
      fail("cannot infer the -1 of shape ", shape_str(shape), " for an input of shape ", shape_str(in));
    shape[infer] = numel / known;
  } else if (check_count && known != numel) {
    fail("cannot reshape ", shape_str(in), " (", numel, " elements) to ", shape_str(shape), " (", known, ")");
  }
  return shape;
}

}  // namespace tessera::runtime

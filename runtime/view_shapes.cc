#include "runtime/view_shapes.h"

#include <algorithm>
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

namespace {

// `axes` in [-rank, rank) made non-negative; throws naming an axis out of range or given twice.
std::vector<int64_t> normalized_axes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) fail("axis ", a, " is out of range for rank ", rank);
    if (a < 0) a += rank;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("the axes ", shape_str(axes), " name an axis twice");
  return sorted;
}

}  // namespace

std::vector<int64_t> squeezed_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& axes) {
  const std::vector<int64_t> drop = normalized_axes(axes, static_cast<int64_t>(in.size()));
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!std::binary_search(drop.begin(), drop.end(), static_cast<int64_t>(d))) out.push_back(in[d]);
    else if (in[d] != 1) fail("cannot squeeze axis ", d, " of ", shape_str(in), ": its size is ", in[d], ", not 1");
  }
  return out;
}

std::vector<int64_t> unsqueezed_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  const std::vector<int64_t> ones = normalized_axes(axes, rank);
  std::vector<int64_t> out;
  auto next = in.begin();
  for (int64_t d = 0; d < rank; ++d) out.push_back(std::binary_search(ones.begin(), ones.end(), d) ? 1 : *next++);
  return out;
}

}  // namespace tessera::runtime

#include "runtime/host_slice.h"

#include <algorithm>
#include <cstring>

#include "runtime/error.h"

namespace tessera::runtime {

SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0) fail("the step is 0");
  if (start < 0) start += dim;
  if (end < 0) end = std::max<int64_t>(end, -dim - 1) + dim;  // no overflow for INT64_MIN
  SliceRange r;
  r.step = step;
  if (step > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > r.start ? (end - r.start + step - 1) / step : 0;
  } else {
    r.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    r.count = r.start > end ? (r.start - end - step - 1) / -step : 0;
  }
  return r;
}

namespace {

// Copies the entries `ranges` select of `src` (of `shape`, row-major, `element` bytes each) from
// dimension `d` on, to `dst`, which it advances.
void copy_ranges(const char* src, const std::vector<int64_t>& shape, const std::vector<SliceRange>& ranges, size_t d,
                 size_t element, char*& dst) {
  int64_t inner = static_cast<int64_t>(element);
  for (size_t e = d + 1; e < shape.size(); ++e) inner *= shape[e];
  const SliceRange& r = ranges[d];
  if (d + 1 == shape.size() && r.step == 1) {
    std::memcpy(dst, src + r.start * inner, r.count * inner);
    dst += r.count * inner;
    return;
  }
  for (int64_t i = 0; i < r.count; ++i) {
    const char* from = src + (r.start + i * r.step) * inner;
    if (d + 1 == shape.size()) {
      std::memcpy(dst, from, element);
      dst += element;
    } else {
      copy_ranges(from, shape, ranges, d + 1, element, dst);
    }
  }
}

}  // namespace

NDArray host_slice(const NDArray& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const int64_t rank = x.ndim();
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    fail("starts, ends, axes and steps must have one length, got ", starts.size(), ", ", ends.size(), ", ", axes.size(),
         " and ", steps.size());
  std::vector<SliceRange> ranges(rank);
  for (int64_t d = 0; d < rank; ++d) ranges[d] = {0, 1, x.shape()[d]};
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (axis < -rank || axis >= rank) fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    if (seen[axis]) fail("axis ", axis, " is sliced twice");
    seen[axis] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) fail("the step of axis ", axis, " is 0");
    ranges[axis] = slice_range(x.shape()[axis], starts[i], ends[i], step);
  }
  std::vector<int64_t> shape;
  for (const SliceRange& r : ranges) shape.push_back(r.count);
  NDArray out = NDArray::empty(shape, x.dtype());
  if (out.numel() == 0) return out;
  char* dst = static_cast<char*>(out.data());
  if (rank == 0) std::memcpy(dst, x.data(), x.dtype().element_bytes());
  else copy_ranges(static_cast<const char*>(x.data()), x.shape(), ranges, 0, x.dtype().element_bytes(), dst);
  return out;
}

NDArray host_expand(const NDArray& x, const std::vector<int64_t>& target) {
  const size_t rank = std::max(x.shape().size(), target.size());
  std::vector<int64_t> source(rank - x.shape().size(), 1), shape(rank);  // x's shape at the result's rank
  source.insert(source.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> wanted(rank - target.size(), 1);
  wanted.insert(wanted.end(), target.begin(), target.end());
  std::vector<SliceRange> ranges(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (wanted[d] < 0) fail("the target shape ", shape_str(target), " has a negative dimension");
    if (source[d] != wanted[d] && source[d] != 1 && wanted[d] != 1)
      fail("the input of shape ", x.shape_str(), " does not broadcast to the target shape ", shape_str(target),
           " (dimension ", d, " of the result: ", source[d], " against ", wanted[d], ")");
    shape[d] = source[d] == 1 ? wanted[d] : source[d];
    ranges[d] = {0, source[d] == 1 ? 0 : 1, shape[d]};  // a step of 0 repeats the one entry
  }
  NDArray out = NDArray::empty(shape, x.dtype());
  if (out.numel() == 0) return out;
  char* dst = static_cast<char*>(out.data());
  if (rank == 0) std::memcpy(dst, x.data(), x.dtype().element_bytes());
  else copy_ranges(static_cast<const char*>(x.data()), source, ranges, 0, x.dtype().element_bytes(), dst);
  return out;
}

}  // namespace tessera::runtime

#include "runtime/data_dependent_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/narrow_types.h"

namespace tessera::runtime {

namespace {

// Refuses what the host cannot read element by element: an array on another device, or one of
// vector or handle elements.
void check_host_array(const NDArray& a, const char* op, const char* name) {
  if (a.device().type != DeviceType::CPU)
    fail(op, ": ", name, " is on ", a.device().str(), ", but ", op, " runs on the host: copy it to the CPU first");
  if (a.dtype().is_vector() || a.dtype().is_handle())
    fail(op, ": ", name, " has element type ", a.dtype().str(), ", not a scalar number");
}

int normalize_axis(int64_t axis, int rank, const char* op) {
  if (axis < -rank || axis >= rank)
    fail(op, ": axis ", axis, " is out of range for an input of rank ", rank, " (accepted: ", -rank, " to ", rank - 1,
         ")");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// An array seen as [outer, n, inner]: its n slices along an axis, slice i being the elements
// [o, i, k] for every o and k. With no axis, the array flattened: n slices of one element.
struct Slices {
  std::vector<int64_t> shape;  // the array's
  int axis = -1;               // -1: flattened
  int64_t outer = 1, n = 0, inner = 1;

  // The shape of an array holding `count` of these slices.
  std::vector<int64_t> shape_with(int64_t count) const {
    if (axis < 0) return {count};
    std::vector<int64_t> s = shape;
    s[axis] = count;
    return s;
  }
};

Slices slices_of(const NDArray& x, std::optional<int64_t> axis, const char* op) {
  Slices s;
  s.shape = x.shape();
  if (!axis) {
    s.n = x.numel();
    return s;
  }
  s.axis = normalize_axis(*axis, x.ndim(), op);
  s.n = s.shape[s.axis];
  for (int d = 0; d < s.axis; ++d) s.outer *= s.shape[d];
  for (int d = s.axis + 1; d < x.ndim(); ++d) s.inner *= s.shape[d];
  return s;
}

// A new array of x's slices `picked`, in that order, their bytes copied as they are.
NDArray gather_slices(const NDArray& x, const Slices& s, const std::vector<int64_t>& picked) {
  NDArray out = NDArray::empty(s.shape_with(static_cast<int64_t>(picked.size())), x.dtype());
  const size_t element_bytes = x.dtype().element_bytes(), slice_bytes = s.inner * element_bytes;
  if (slice_bytes == 0) return out;
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(out.data());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i : picked) {
      std::memcpy(dst, src + (o * s.n + i) * slice_bytes, slice_bytes);
      dst += slice_bytes;
    }
  return out;
}

NDArray int64_vector(const std::vector<int64_t>& values) {
  NDArray out = NDArray::empty({static_cast<int64_t>(values.size())}, kInt64);
  if (!values.empty()) std::memcpy(out.data(), values.data(), values.size() * sizeof(int64_t));
  return out;
}

template <typename T>
std::vector<T> values_of(const NDArray& x, T (*value)(const NDArray&, int64_t)) {
  std::vector<T> v(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) v[i] = value(x, i);
  return v;
}

// numpy's sort order: NaN after every number, and level with another NaN.
template <typename T>
bool before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a < b || (std::isnan(b) && !std::isnan(a));
  else return a < b;
}

template <typename T>
bool same(T a, T b, bool nans_equal) {
  if constexpr (std::is_floating_point_v<T>) return a == b || (nans_equal && std::isnan(a) && std::isnan(b));
  else return a == b;
}

// Unique's answer, but for Y: the groups of equal slices.
struct Groups {
  std::vector<int64_t> first;    // each group's first slice
  std::vector<int64_t> inverse;  // each slice's group
  std::vector<int64_t> counts;   // each group's number of slices
};

// Groups equal slices of `v` (the elements of an array seen as `s`), ascending, as numpy.unique
// does: a stable sort of the slices, then a new group wherever a slice differs from the one before.
template <typename T>
Groups sorted_groups(const std::vector<T>& v, const Slices& s, bool nans_equal) {
  auto element = [&](int64_t slice, int64_t o, int64_t k) { return v[(o * s.n + slice) * s.inner + k]; };
  auto slice_before = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t k = 0; k < s.inner; ++k) {
        const T a = element(i, o, k), b = element(j, o, k);
        if (before(a, b)) return true;
        if (before(b, a)) return false;
      }
    return false;
  };
  auto slices_equal = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t k = 0; k < s.inner; ++k)
        if (!same(element(i, o, k), element(j, o, k), nans_equal)) return false;
    return true;
  };
  std::vector<int64_t> order(s.n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), slice_before);
  Groups g;
  g.inverse.resize(s.n);
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || !slices_equal(order[r - 1], order[r])) {
      g.first.push_back(order[r]);
      g.counts.push_back(0);
    }
    g.inverse[order[r]] = static_cast<int64_t>(g.first.size()) - 1;
    ++g.counts.back();
  }
  return g;
}

// sorted_groups over x's values, compared as its element type orders them: integers exactly,
// floats as doubles.
Groups sorted_groups_of(const NDArray& x, const Slices& s, bool nans_equal) {
  const DataType t = x.dtype();
  if (t.is_int()) return sorted_groups(values_of(x, signed_value), s, nans_equal);
  if (t.is_uint() || t.is_bool()) return sorted_groups(values_of(x, unsigned_value), s, nans_equal);
  return sorted_groups(values_of(x, element_as_double), s, nans_equal);
}

// TopK's order of two entries a and b (positions along the axis) of values va and vb: the larger
// (largest) or smaller first, a NaN after every number, equal ones the lower position first.
template <typename T>
bool ranks_before(T va, T vb, int64_t a, int64_t b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(va) || std::isnan(vb)) return std::isnan(va) && std::isnan(vb) ? a < b : std::isnan(vb);
  }
  if (va != vb) return largest ? va > vb : va < vb;
  return a < b;
}

// topk over `v`, x's values as its element type orders them.
template <typename T>
std::vector<NDArray> topk_of(const NDArray& x, const std::vector<T>& v, const Slices& s, int64_t k, bool largest) {
  NDArray values = NDArray::empty(s.shape_with(k), x.dtype()), indices = NDArray::empty(s.shape_with(k), kInt64);
  const size_t element_bytes = x.dtype().element_bytes();
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(values.data());
  std::vector<int64_t> order(s.n);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto flat = [&](int64_t i) { return (o * s.n + i) * s.inner + in; };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) { return ranks_before(v[flat(a)], v[flat(b)], a, b, largest); });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * s.inner + in;
        std::memcpy(dst + out * element_bytes, src + flat(order[j]) * element_bytes, element_bytes);
        indices.data_as<int64_t>()[out] = order[j];
      }
    }
  return {values, indices};
}

// Renumbers the groups in the order their first slices come in.
void order_by_first_occurrence(Groups& g) {
  std::vector<int64_t> by_first(g.first.size()), place(g.first.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return g.first[a] < g.first[b]; });
  Groups reordered;
  for (size_t p = 0; p < by_first.size(); ++p) {
    place[by_first[p]] = static_cast<int64_t>(p);
    reordered.first.push_back(g.first[by_first[p]]);
    reordered.counts.push_back(g.counts[by_first[p]]);
  }
  for (int64_t& group : g.inverse) reordered.inverse.push_back(place[group]);
  g = std::move(reordered);
}

// A box's extent, whichever way its corners or center were given.
struct Extent {
  float x_min, x_max, y_min, y_max;
};

// As ONNX's reference reads a box: [y1, x1, y2, x2] in either order, or [xc, yc, w, h].
Extent extent_of(const float* box, bool center_point_box) {
  if (center_point_box) {
    const float half_width = box[2] / 2, half_height = box[3] / 2;
    return {box[0] - half_width, box[0] + half_width, box[1] - half_height, box[1] + half_height};
  }
  auto low = [](float a, float b) { return a >= b ? b : a; };
  auto high = [](float a, float b) { return a >= b ? a : b; };
  return {low(box[1], box[3]), high(box[1], box[3]), low(box[0], box[2]), high(box[0], box[2])};
}

// Whether `candidate` overlaps `kept` by an IOU above the threshold: float32 throughout, with no
// multiply-add in one expression (which a compiler could fuse) and the reference's comparisons,
// so that NaNs and IOUs at the threshold decide as there.
bool suppressed_by(const Extent& candidate, const Extent& kept, float iou_threshold) {
  const float x_min = std::max(candidate.x_min, kept.x_min), x_max = std::min(candidate.x_max, kept.x_max);
  if (x_max <= x_min) return false;
  const float y_min = std::max(candidate.y_min, kept.y_min), y_max = std::min(candidate.y_max, kept.y_max);
  if (y_max <= y_min) return false;
  const float intersection = (x_max - x_min) * (y_max - y_min);
  if (intersection <= 0) return false;
  const float candidate_area = (candidate.x_max - candidate.x_min) * (candidate.y_max - candidate.y_min);
  const float kept_area = (kept.x_max - kept.x_min) * (kept.y_max - kept.y_min);
  const float both_areas = candidate_area + kept_area;
  const float union_area = both_areas - intersection;
  if (candidate_area <= 0 || kept_area <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

// The boxes of one class that compete, taken best first: score descending, NaN last, ties by index.
// A heap, since suppression usually stops after a few of them (max_output_boxes_per_class) and
// sorting them all would be wasted.
class RankedBoxes {
 public:
  RankedBoxes(const float* scores, int64_t num_boxes, std::optional<float> score_threshold) : after_{scores} {
    for (int64_t i = 0; i < num_boxes; ++i)
      if (!score_threshold || scores[i] > *score_threshold) boxes_.push_back(i);
    std::make_heap(boxes_.begin(), boxes_.end(), after_);
  }
  bool empty() const { return boxes_.empty(); }
  int64_t take_best() {
    std::pop_heap(boxes_.begin(), boxes_.end(), after_);
    const int64_t best = boxes_.back();
    boxes_.pop_back();
    return best;
  }

 private:
  struct RanksAfter {
    const float* scores;
    bool operator()(int64_t a, int64_t b) const {
      const bool a_nan = std::isnan(scores[a]), b_nan = std::isnan(scores[b]);
      if (a_nan != b_nan) return a_nan;
      if (!a_nan && scores[a] != scores[b]) return scores[a] < scores[b];
      return a > b;
    }
  };
  RanksAfter after_;
  std::vector<int64_t> boxes_;
};

void check_nms_input(const NDArray& a, const char* name, const char* layout) {
  check_host_array(a, "NonMaxSuppression", name);
  if (a.dtype() != kFloat32 || a.ndim() != 3)
    fail("NonMaxSuppression: ", name, " must be float32 ", layout, ", got ", a.shape_str(), " ", a.dtype().str());
}

}  // namespace

NDArray nonzero(const NDArray& x) {
  check_host_array(x, "NonZero", "X");
  std::vector<int64_t> found;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (element_as_double(x, i) != 0) found.push_back(i);
  const int64_t count = static_cast<int64_t>(found.size());
  NDArray out = NDArray::empty({x.ndim(), count}, kInt64);
  int64_t* coordinates = out.data_as<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = found[j];
    for (int d = x.ndim() - 1; d >= 0; --d) {
      coordinates[d * count + j] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
  }
  return out;
}

NDArray compress(const NDArray& x, const NDArray& condition, std::optional<int64_t> axis) {
  check_host_array(x, "Compress", "input");
  check_host_array(condition, "Compress", "condition");
  if (condition.ndim() != 1) fail("Compress: condition must be 1-D, got shape ", condition.shape_str());
  const Slices s = slices_of(x, axis, "Compress");
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (element_as_double(condition, i) == 0) continue;
    if (i >= s.n)
      fail("Compress: condition is true at index ", i, ", past the input's ", s.n,
           axis ? " slices along axis " + std::to_string(*axis) : std::string(" elements"));
    picked.push_back(i);
  }
  return gather_slices(x, s, picked);
}

std::vector<NDArray> unique(const NDArray& x, std::optional<int64_t> axis, bool sorted) {
  check_host_array(x, "Unique", "X");
  const Slices s = slices_of(x, axis, "Unique");
  Groups g = sorted_groups_of(x, s, /*nans_equal=*/!axis);  // numpy's equal_nan holds for elements, not slices
  if (!sorted) order_by_first_occurrence(g);
  return {gather_slices(x, s, g.first), int64_vector(g.first), int64_vector(g.inverse), int64_vector(g.counts)};
}

std::vector<NDArray> topk(const NDArray& x, int64_t k, int64_t axis, bool largest) {
  check_host_array(x, "TopK", "X");
  if (x.ndim() == 0) fail("TopK: X is a scalar, which has no axis to take the largest entries along");
  const Slices s = slices_of(x, axis, "TopK");
  if (k < 0 || k > s.n) fail("TopK: k (", k, ") must be in [0, ", s.n, "], the length of axis ", s.axis);
  const DataType t = x.dtype();
  if (t.is_int()) return topk_of(x, values_of(x, signed_value), s, k, largest);
  if (t.is_uint() || t.is_bool()) return topk_of(x, values_of(x, unsigned_value), s, k, largest);
  return topk_of(x, values_of(x, element_as_double), s, k, largest);
}

NDArray non_max_suppression(const NDArray& boxes, const NDArray& scores, int64_t max_output_boxes_per_class,
                            float iou_threshold, std::optional<float> score_threshold, bool center_point_box) {
  check_nms_input(boxes, "boxes", "[num_batches, spatial_dimension, 4]");
  check_nms_input(scores, "scores", "[num_batches, num_classes, spatial_dimension]");
  const int64_t num_batches = boxes.shape()[0], num_boxes = boxes.shape()[1], num_classes = scores.shape()[1];
  if (boxes.shape()[2] != 4 || scores.shape()[0] != num_batches || scores.shape()[2] != num_boxes)
    fail("NonMaxSuppression: boxes ", boxes.shape_str(), " and scores ", scores.shape_str(),
         " do not match [num_batches, spatial_dimension, 4] and [num_batches, num_classes, spatial_dimension]");
  std::vector<Extent> extents(num_batches * num_boxes);
  for (size_t i = 0; i < extents.size(); ++i) extents[i] = extent_of(boxes.data_as<float>() + 4 * i, center_point_box);

  std::vector<int64_t> rows;  // (batch, class, box) triples
  for (int64_t b = 0; b < num_batches; ++b)
    for (int64_t c = 0; c < num_classes; ++c) {
      const float* class_scores = scores.data_as<float>() + (b * num_classes + c) * num_boxes;
      const Extent* batch_extents = extents.data() + b * num_boxes;
      std::vector<int64_t> kept;
      RankedBoxes ranked(class_scores, num_boxes, score_threshold);
      while (!ranked.empty() && static_cast<int64_t>(kept.size()) < max_output_boxes_per_class) {
        const int64_t box = ranked.take_best();
        if (std::any_of(kept.begin(), kept.end(),
                        [&](int64_t k) { return suppressed_by(batch_extents[box], batch_extents[k], iou_threshold); }))
          continue;
        kept.push_back(box);
        rows.insert(rows.end(), {b, c, box});
      }
    }
  NDArray out = NDArray::empty({static_cast<int64_t>(rows.size() / 3), 3}, kInt64);
  if (!rows.empty()) std::memcpy(out.data(), rows.data(), rows.size() * sizeof(int64_t));
  return out;
}

NDArray range(const NDArray& start, const NDArray& limit, const NDArray& delta) {
  for (const NDArray* a : {&start, &limit, &delta}) check_host_array(*a, "Range", "an input");
  const DataType t = start.dtype();
  if (limit.dtype() != t || delta.dtype() != t)
    fail("Range: start, limit and delta must have one dtype, got ", t.str(), ", ", limit.dtype().str(), " and ",
         delta.dtype().str());
  for (const NDArray* a : {&start, &limit, &delta})
    if (a->numel() != 1) fail("Range: start, limit and delta must be scalars, got shape ", a->shape_str());
  NDArray out;
  if (t.is_integer()) {
    // Exact integer arithmetic: doubles would round int64 values above 2^53.
    if (t.is_uint() && t.bits == 64) fail("Range: unsupported dtype ", t.str());
    const int64_t s = integer_value(start, 0), l = integer_value(limit, 0), d = integer_value(delta, 0);
    if (d == 0) fail("Range: delta is 0");
    const __int128 span = static_cast<__int128>(l) - s;
    const __int128 n = d > 0 ? (span > 0 ? (span + d - 1) / d : 0) : (span < 0 ? (span + d + 1) / d : 0);
    if (n > 1000000000) fail("Range: the range has too many elements");
    out = NDArray::empty({static_cast<int64_t>(n)}, t);
    for (int64_t i = 0; i < out.numel(); ++i) {
      const int64_t v = s + i * d;
      std::memcpy(static_cast<char*>(out.data()) + i * (t.bits / 8), &v, t.bits / 8);  // little-endian truncation
    }
  } else {
    const double s = element_as_double(start, 0), l = element_as_double(limit, 0), d = element_as_double(delta, 0);
    if (d == 0) fail("Range: delta is 0");
    const double n = std::max(std::ceil((l - s) / d), 0.0);
    if (!std::isfinite(n) || n > 1e9) fail("Range: the range has too many elements (", n, ")");
    out = NDArray::empty({static_cast<int64_t>(n)}, t);
    for (int64_t i = 0; i < out.numel(); ++i) store_element(out, i, s + static_cast<double>(i) * d);
  }
  return out;
}

NDArray resized_shape(const std::vector<int64_t>& shape, const NDArray& scales, std::vector<int64_t> axes) {
  check_host_array(scales, "Resize", "scales");
  if (!scales.dtype().is_float() || scales.ndim() != 1)
    fail("Resize: scales must be a 1-D floating-point tensor, got ", scales.dtype().str(), scales.shape_str());
  const auto rank = static_cast<int64_t>(shape.size());
  if (axes.empty()) {
    axes.resize(shape.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (scales.numel() != static_cast<int64_t>(axes.size()))
    fail("Resize: ", scales.numel(), " scales for ", axes.size(), " axes of an input of shape ", shape_str(shape));
  NDArray out = NDArray::empty({rank}, kInt64);
  std::copy(shape.begin(), shape.end(), out.data_as<int64_t>());
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t axis = axes[j] < 0 ? axes[j] + rank : axes[j];
    if (axis < 0 || axis >= rank) fail("Resize: axis ", axes[j], " is out of range for rank ", rank);
    const double scale = element_as_double(scales, static_cast<int64_t>(j));
    const double size = std::floor(static_cast<double>(shape[axis]) * scale);
    if (!(scale > 0) || !std::isfinite(scale))
      fail("Resize: scale ", scale, " of axis ", axis, " is not a positive number");
    if (size > 1e15) fail("Resize: scale ", scale, " makes axis ", axis, " of size ", shape[axis], " ", size, " long");
    out.data_as<int64_t>()[axis] = static_cast<int64_t>(size);
  }
  return out;
}

}  // namespace tessera::runtime

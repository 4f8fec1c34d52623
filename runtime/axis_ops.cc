#include "runtime/axis_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/element.h"
#include "runtime/error.h"

namespace tessera::runtime {

namespace {

bool integral(DataType t) { return t.is_integer() || t.is_bool(); }

// v as the type's arithmetic leaves it: truncated to its bits, sign-extended if it is signed.
int64_t wrapped(DataType t, int64_t v) {
  if (t.bits >= 64 || t.is_bool()) return v;
  const int shift = 64 - t.bits;
  const uint64_t high = static_cast<uint64_t>(v) << shift;
  return t.is_int() ? static_cast<int64_t>(high) >> shift : static_cast<int64_t>(high >> shift);
}

void store_int(const NDArray& a, int64_t i, int64_t v) {
  const DataType t = a.dtype();
  if (t.is_narrow() || t.is_bool() || t.bits < 8) return store_element(a, i, static_cast<double>(v));
  std::memcpy(static_cast<char*>(a.data()) + i * t.element_bytes(), &v, t.bits / 8);  // little-endian
}

// The identity of max (`highest` false) or min: the type's lowest or highest value.
int64_t extreme(DataType t, bool highest) {
  if (t.is_bool()) return highest ? 1 : 0;
  if (!t.is_int()) return highest ? wrapped(t, -1) : 0;
  const uint64_t top = t.bits >= 64 ? ~uint64_t{0} >> 1 : (uint64_t{1} << (t.bits - 1)) - 1;
  return highest ? static_cast<int64_t>(top) : -static_cast<int64_t>(top) - 1;
}

// The axes `given` holds, each in [0, rank), sorted; none given: none.
std::vector<int64_t> axes_of(const NDArray& given, int64_t rank, const std::string& op) {
  if (!integral(given.dtype()) || given.ndim() > 1)
    fail(op, ": axes must be a 1-D integer tensor, got ", given.dtype().str(), given.shape_str());
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < given.numel(); ++i) {
    const int64_t a = integer_value(given, i);
    if (a < -rank || a >= rank) fail(op, ": axis ", a, " is out of range for a ", rank, "-D tensor");
    axes.push_back(a < 0 ? a + rank : a);
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail(op, ": an axis is repeated in the axes");
  return axes;
}

// For each element of x (row-major), the position of the element of the reduction's output it
// belongs to, given which axes are reduced.
std::vector<int64_t> output_positions(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 0);
  for (int64_t d = static_cast<int64_t>(rank) - 1, s = 1; d >= 0; --d)
    if (!reduced[d]) stride[d] = s, s *= shape[d];
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<int64_t> out(n), coordinate(rank, 0);
  for (int64_t i = 0, at = 0; i < n; ++i) {
    out[i] = at;
    for (size_t d = rank; d-- > 0;) {  // the next coordinate, as an odometer turns
      at += stride[d];
      if (++coordinate[d] < shape[d]) break;
      at -= stride[d] * shape[d];
      coordinate[d] = 0;
    }
  }
  return out;
}

}  // namespace

NDArray reduce_along(const NDArray& x, const NDArray* axes_given, bool keepdims, bool noop_with_empty_axes,
                     const std::string& kind) {
  const std::string op = "reduce_" + kind;
  if (x.device().type != DeviceType::CPU) fail(op, ": the data is on ", x.device().str(), ", not the host");
  const int64_t rank = x.ndim();
  std::vector<int64_t> axes = axes_given ? axes_of(*axes_given, rank, op) : std::vector<int64_t>{};
  if (axes.empty() && noop_with_empty_axes) return x;
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) shape.push_back(x.shape()[d]);
    else if (keepdims) shape.push_back(1);
    if (reduced[d]) count *= x.shape()[d];
  }
  NDArray out = NDArray::empty(shape, x.dtype());
  const std::vector<int64_t> at = output_positions(x.shape(), reduced);
  const int64_t n = out.numel();
  const bool exact = integral(x.dtype()) && kind != "l2" && kind != "log_sum" && kind != "log_sum_exp";
  if (exact) {  // in the type's own arithmetic, as the kernels compute it
    const DataType t = x.dtype();
    const bool is_max = kind == "max", is_min = kind == "min", is_prod = kind == "prod";
    // uint64's values past 2^63 read as negative int64s: compared by their bits.
    auto less = [&](int64_t a, int64_t b) {
      return t.is_uint() ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
    };
    std::vector<int64_t> acc(n, is_prod ? 1 : 0);
    std::vector<bool> seen(n, false);
    for (size_t i = 0; i < at.size(); ++i) {
      const uint64_t v = static_cast<uint64_t>(integer_value(x, static_cast<int64_t>(i)));  // wrapping arithmetic
      int64_t& a = acc[at[i]];
      if (is_max || is_min) {
        if (!seen[at[i]] || less(a, static_cast<int64_t>(v)) == is_max) a = static_cast<int64_t>(v);
        seen[at[i]] = true;
      } else if (is_prod) {
        a = static_cast<int64_t>(static_cast<uint64_t>(a) * v);
      } else {
        const bool negative = t.is_int() && static_cast<int64_t>(v) < 0;
        const uint64_t term = kind == "l1" ? (negative ? 0 - v : v) : kind == "sum_square" ? v * v : v;
        a = static_cast<int64_t>(static_cast<uint64_t>(a) + term);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      if (kind == "mean") store_int(out, j, count == 0 ? 0 : wrapped(t, acc[j]) / count);  // the type's sum, divided
      else if ((is_max || is_min) && count == 0) store_int(out, j, extreme(t, is_min));
      else store_int(out, j, acc[j]);
    }
    return out;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> shift(n, 0.0);  // log_sum_exp's: the maximum, or 0 where it is infinite
  if (kind == "log_sum_exp") {
    std::vector<double> m(n, -inf);
    for (size_t i = 0; i < at.size(); ++i) m[at[i]] = std::max(m[at[i]], element_as_double(x, static_cast<int64_t>(i)));
    for (int64_t j = 0; j < n; ++j) shift[j] = std::isinf(m[j]) ? 0.0 : m[j];
  }
  const double start = kind == "prod" ? 1.0 : kind == "max" ? -inf : kind == "min" ? inf : 0.0;
  std::vector<double> acc(n, start);
  for (size_t i = 0; i < at.size(); ++i) {
    const double v = element_as_double(x, static_cast<int64_t>(i));
    double& a = acc[at[i]];
    if (kind == "max") a = std::isnan(v) || std::isnan(a) ? NAN : std::max(a, v);
    else if (kind == "min") a = std::isnan(v) || std::isnan(a) ? NAN : std::min(a, v);
    else if (kind == "prod") a *= v;
    else if (kind == "l1") a += std::fabs(v);
    else if (kind == "l2" || kind == "sum_square") a += v * v;
    else if (kind == "log_sum_exp") a += std::exp(v - shift[at[i]]);
    else if (kind == "sum" || kind == "mean" || kind == "log_sum") a += v;
    else fail("internal error: no reduction ", kind);
  }
  for (int64_t j = 0; j < n; ++j) {
    double r = acc[j];
    if (kind == "mean") r = r / static_cast<double>(count);
    else if (kind == "l2") r = std::sqrt(r);
    else if (kind == "log_sum") r = std::log(r);
    else if (kind == "log_sum_exp") r = shift[j] + std::log(r);
    store_element(out, j, r);
  }
  return out;
}

NDArray running_along(const NDArray& x, const NDArray& axis_given, bool exclusive, bool reverse, bool product) {
  const std::string op = product ? "cumprod" : "cumsum";
  if (x.device().type != DeviceType::CPU) fail(op, ": the data is on ", x.device().str(), ", not the host");
  if (axis_given.numel() != 1) fail(op, ": axis must hold one value, got shape ", axis_given.shape_str());
  const int64_t rank = x.ndim();
  if (rank == 0) fail(op, ": the input is a scalar, which has no axis");
  const int64_t axis = axes_of(axis_given.view_as({1}, axis_given.dtype()), rank, op)[0];
  int64_t outer = 1, inner = 1;  // the elements before the axis and after it
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  const int64_t length = x.shape()[axis];
  NDArray out = NDArray::empty(x.shape(), x.dtype());
  const bool exact = integral(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t int_acc = product ? 1 : 0;
      double acc = product ? 1.0 : 0.0;
      for (int64_t s = 0; s < length; ++s) {
        const int64_t step = reverse ? length - 1 - s : s;
        const int64_t at = (o * length + step) * inner + i;
        if (exact) {
          const uint64_t v = static_cast<uint64_t>(integer_value(x, at)), a = static_cast<uint64_t>(int_acc);
          const int64_t next = static_cast<int64_t>(product ? a * v : a + v);
          store_int(out, at, exclusive ? int_acc : next);
          int_acc = next;
        } else {
          const double v = element_as_double(x, at), next = product ? acc * v : acc + v;
          store_element(out, at, exclusive ? acc : next);
          acc = next;
        }
      }
    }
  return out;
}

}  // namespace tessera::runtime

#include "tensor_ir/ops/transform.h"
#include "tensor_ir/printer.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir::ops {

namespace {

// The input indices of a reshape. Dimensions are matched in groups with equal products
// (e.g. [6, 4] -> [2, 3, 4] is {6}->{2, 3} and {4}->{4}), so a dimension that reshape leaves
// alone, like the innermost one usually, is indexed directly and stays contiguous.
std::vector<Expr> reshape_indices(const Shape& in, const Shape& out, const std::vector<Var>& o) {
  std::vector<Expr> idx(in.size(), Expr(0));
  size_t p = 0, q = 0;
  while (true) {
    while (p < in.size() && in[p] == 1) ++p;
    while (q < out.size() && out[q] == 1) ++q;
    if (p == in.size() || q == out.size()) break;
    size_t p0 = p, q0 = q;
    int64_t pi = in[p++], po = out[q++];
    while (pi != po) {
      if (pi < po) pi *= in[p++];
      else po *= out[q++];
    }
    if (p - p0 == 1 && q - q0 == 1) {
      idx[p0] = o[q0];
      continue;
    }
    Expr flat = Expr(0);
    for (size_t d = q0; d < q; ++d) flat = flat * Expr(out[d]) + o[d];
    int64_t stride = 1;
    for (size_t d = p; d-- > p0;) {
      Expr e = stride == 1 ? flat : flat / Expr(stride);
      idx[d] = in[d] == 1 ? Expr(0) : d == p0 ? e : e % Expr(in[d]);
      stride *= in[d];
    }
  }
  return idx;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape in = x->dims();
  reshape_shape(in, shape);
  bool empty = numel(shape) == 0;
  return compute(
      shape_exprs(shape),
      [&](const std::vector<Var>& o) {
        // An empty tensor has no element to read; any body will do.
        return empty ? make_zero(x.dtype()) : x(reshape_indices(in, shape, o));
      },
      "reshape", "transform");
}

Tensor reshape(const Tensor& x, const std::vector<Expr>& shape) {
  const std::vector<Expr>& in = x->shape;
  // The leading and trailing dimensions both shapes share (a symbolic batch; the L x L scores of
  // attention's heads split from the batch, (N*4, L, L) to (N, 4, L, L)) are indexed directly:
  // only the dimensions between are computed from a position, so no lane of a vector divides by a
  // symbolic extent they do not have. A static middle reshapes as static shapes do; a symbolic one
  // through the row-major position ([L, N, 256] to [L, N*4, 64] divides by constants only).
  size_t lead = 0, trail = 0;
  while (lead < in.size() && lead < shape.size() && structural_equal(in[lead], shape[lead])) ++lead;
  while (lead + trail < in.size() && lead + trail < shape.size() &&
         structural_equal(in[in.size() - 1 - trail], shape[shape.size() - 1 - trail]))
    ++trail;
  const auto middle = [&](const std::vector<Expr>& dims) {
    return std::vector<Expr>(dims.begin() + static_cast<std::ptrdiff_t>(lead),
                             dims.end() - static_cast<std::ptrdiff_t>(trail));
  };
  const std::vector<Expr> in_middle = middle(in), out_middle = middle(shape);
  auto constant = [](const std::vector<Expr>& dims, Shape& out) {
    for (const Expr& d : dims) {
      const int64_t* c = as_const_int(d);
      if (!c) return false;
      out.push_back(*c);
    }
    return true;
  };
  Shape in_static, out_static;
  const bool static_middle = constant(in_middle, in_static) && constant(out_middle, out_static);
  if (static_middle) reshape_shape(in_static, out_static);
  const bool empty = static_middle && numel(out_static) == 0;
  return compute(
      shape,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(lead));
        const std::vector<Var> at(o.begin() + static_cast<std::ptrdiff_t>(lead),
                                  o.end() - static_cast<std::ptrdiff_t>(trail));
        const std::vector<Expr> from_middle =
            static_middle ? reshape_indices(in_static, out_static, at)
                          : unflat_index(flat_index(std::vector<Expr>(at.begin(), at.end()), out_middle), in_middle);
        idx.insert(idx.end(), from_middle.begin(), from_middle.end());
        idx.insert(idx.end(), o.end() - static_cast<std::ptrdiff_t>(trail), o.end());
        return empty ? make_zero(x.dtype()) : x(idx);
      },
      "reshape", "transform");
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<Expr>& in = x->shape;  // symbolic extents move as constant ones do
  std::vector<int64_t> p = transpose_perm(perm, static_cast<int64_t>(in.size()));
  std::vector<Expr> out;
  for (int64_t d : p) out.push_back(in[d]);
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx(in.size());
        for (size_t d = 0; d < p.size(); ++d) idx[p[d]] = o[d];
        return x(idx);
      },
      "transpose", "transpose");
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  std::vector<std::vector<Expr>> shapes;
  for (const auto& x : xs) {
    if (x.dtype() != xs[0].dtype())
      fail("concat: input ", shapes.size(), " is ", x.dtype().str(), ", input 0 is ", xs[0].dtype().str());
    shapes.push_back(x->shape);
  }
  const std::vector<Expr> out = concat_dims(shapes, axis);
  int64_t a = normalize_axis(axis, static_cast<int64_t>(out.size()));
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        // Nested selects from the last input outwards; Select reads lazily, so an input is only
        // read inside its own range. Each condition is a likely() guard: loop partitioning then
        // splits the loop over the axis at the first input's end, whose part copies it unguarded
        // (a key/value cache growing by a token each step).
        Expr body;
        Expr end = out[a];
        for (size_t i = xs.size(); i-- > 0;) {
          const Expr& size = shapes[i][a];
          const Expr begin = arith::simplify(end - size);
          if (is_const_int(size, 0)) continue;
          std::vector<Expr> idx = as_exprs(o);
          idx[a] = is_const_int(begin, 0) ? Expr(o[a]) : o[a] - begin;
          Expr read = xs[i](idx);
          body = body ? select(call(Intrinsic::likely, {o[a] < end}), read, body) : read;
          end = begin;
        }
        return body ? body : make_zero(xs[0].dtype());
      },
      "concat", "transform");
}

std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  std::vector<std::vector<Expr>> shapes = split_dims(x->shape, axis, sizes);
  int64_t a = normalize_axis(axis, static_cast<int64_t>(x.ndim()));
  std::vector<Tensor> outs;
  int64_t begin = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    outs.push_back(compute(
        shapes[k],
        [&](const std::vector<Var>& o) {
          std::vector<Expr> idx = as_exprs(o);
          if (begin) idx[a] = o[a] + Expr(begin);
          return x(idx);
        },
        "split" + std::to_string(k), "transform"));
    begin += sizes[k];
  }
  return outs;
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes) {
  const std::vector<Expr>& in = x->shape;
  std::vector<int64_t> drop = squeeze_axes(in, axes);
  return compute(
      squeeze_dims(in, axes),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        size_t next = 0;
        for (size_t d = 0; d < in.size(); ++d)
          idx.push_back(std::binary_search(drop.begin(), drop.end(), static_cast<int64_t>(d)) ? Expr(0)
                                                                                              : Expr(o[next++]));
        return x(idx);
      },
      "squeeze", "transform");
}

Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<Expr> out = expand_dims_dims(x->shape, axes);
  std::vector<int64_t> inserted = normalize_axes(axes, static_cast<int64_t>(out.size()));
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < out.size(); ++d)
          if (!std::count(inserted.begin(), inserted.end(), static_cast<int64_t>(d))) idx.push_back(o[d]);
        return x(idx);
      },
      "expand_dims", "transform");
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  check_broadcast_to(x->dims(), shape);
  return broadcast_to(x, shape_exprs(shape));
}

Tensor arange(const Tensor& start, const Tensor& delta, const Expr& length) {
  return compute(
      {length},
      [&](const std::vector<Var>& i) {
        return start(std::vector<Expr>{}) + cast(start.dtype(), i[0]) * delta(std::vector<Expr>{});
      },
      "arange", "transform");
}

Tensor shape_values(const std::vector<Expr>& dims, runtime::DataType dtype, bool scalar) {
  if (dims.empty() || (scalar && dims.size() != 1))
    fail("shape_values: ", dims.size(), " values for a ", scalar ? "scalar" : "vector");
  const std::vector<Expr> shape =
      scalar ? std::vector<Expr>{} : std::vector<Expr>{Expr(static_cast<int64_t>(dims.size()))};
  return compute(
      shape,
      [&](const std::vector<Var>& i) {
        Expr body = cast(dtype, dims.back());
        for (size_t k = dims.size() - 1; k-- > 0;)
          body = select(i[0] == Expr(static_cast<int64_t>(k)), cast(dtype, dims[k]), body);
        return body;
      },
      "shape_values", "transform");
}

Tensor broadcast_to(const Tensor& x, const std::vector<Expr>& shape) {
  const std::vector<Expr>& in = x->shape;
  bool ok = in.size() <= shape.size();
  const size_t offset = ok ? shape.size() - in.size() : 0;
  for (size_t d = 0; ok && d < in.size(); ++d) ok = is_const_int(in[d], 1) || same_dimension(in[d], shape[offset + d]);
  if (!ok) fail("broadcast_to: shape ", shape_str(in), " does not provably broadcast to ", shape_str(shape));
  return compute(
      shape,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < in.size(); ++d) idx.push_back(is_const_int(in[d], 1) ? Expr(0) : Expr(o[offset + d]));
        return x(idx);
      },
      "broadcast_to", "transform");
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) { return tile(x, shape_exprs(repeats)); }

Tensor tile(const Tensor& x, const std::vector<Expr>& repeats) {
  const std::vector<Expr>& in = x->shape;
  return compute(
      tile_dims(in, repeats),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < in.size(); ++d)
          idx.push_back(is_const_int(in[d], 1) ? Expr(0) : is_const_int(repeats[d], 1) ? Expr(o[d]) : o[d] % in[d]);
        return x(idx);
      },
      "tile", "transform");
}

namespace {

// A start or end at least this far from 0 (as exporters write INT64_MAX) stands for the axis' end.
constexpr int64_t kBeyond = int64_t{1} << 31;

// A symbolic axis of size n sliced from `start` to `end` by `step` (constants), as ONNX clamps
// them: [0, n] with a positive step, [0, n - 1] and [-1, n - 1] with a negative one.
SliceAxis symbolic_slice(const Expr& n, int64_t start, int64_t end, int64_t step) {
  arith::BoundMap sizes;  // n's variables are sizes
  for (const Var& v : vars_of(n)) sizes[v.get()] = {0, arith::ConstBound::kPosInf};
  auto position = [&](int64_t p, int64_t lowest, const Expr& highest) -> Expr {
    if (p >= kBeyond) return highest;
    if (p <= -kBeyond) return Expr(lowest);
    return p >= 0 ? min(Expr(p), highest) : max(n + Expr(p), Expr(lowest));
  };
  if (step > 0) {
    const Expr first = position(start, 0, n), last = position(end, 0, n);
    // To the end from a start within the first step (x[1::2]): ceil((n - start) / step), which is 0
    // where n <= start, with no clamp to keep (so x[::2] and x[1::2] agree wherever n is even).
    if (end >= kBeyond && start >= 0 && start < step)
      return {arith::simplify(first, sizes), step,
              arith::simplify(floordiv(n - Expr(start) + Expr(step - 1), Expr(step)), sizes)};
    return {arith::simplify(first, sizes), step,
            arith::simplify(floordiv(max(last - first, Expr(0)) + Expr(step - 1), Expr(step)), sizes)};
  }
  const Expr first = position(start, 0, n - Expr(1)), last = position(end, -1, n - Expr(1));
  // At most n: an empty axis has none however its ends clamp.
  Expr length = min(floordiv(max(first - last, Expr(0)) + Expr(-step - 1), Expr(-step)), n);
  return {arith::simplify(first, sizes), step, arith::simplify(length, sizes)};
}

}  // namespace

std::vector<SliceAxis> slice_axes(const std::vector<Expr>& in, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                  const std::vector<int64_t>& steps) {
  // A symbolic axis stands in as an extent no real one reaches, which validates the lists and
  // tells an axis kept whole or reversed whole (their plain forms) from one sliced.
  constexpr int64_t kWholeAxis = int64_t{1} << 60;
  Shape proxy;
  for (const Expr& d : in) proxy.push_back(as_const_int(d) ? *as_const_int(d) : kWholeAxis);
  const std::vector<SliceDim> dims = slice_dims(proxy, starts, ends, axes, steps);
  std::vector<int64_t> ax = axes;
  if (ax.empty())
    for (size_t i = 0; i < starts.size(); ++i) ax.push_back(static_cast<int64_t>(i));
  ax = normalize_axes(ax, static_cast<int64_t>(in.size()), "slice: axes");
  std::vector<SliceAxis> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    const SliceDim& s = dims[d];
    if (as_const_int(in[d])) out.push_back({Expr(s.start), s.step, Expr(s.length)});
    else if (s.length == kWholeAxis && s.step == 1) out.push_back({Expr(0), 1, in[d]});
    else if (s.length == kWholeAxis && s.step == -1 && s.start == kWholeAxis - 1)
      out.push_back({arith::simplify(in[d] - Expr(1)), -1, in[d]});
    else {
      const size_t i = static_cast<size_t>(std::find(ax.begin(), ax.end(), static_cast<int64_t>(d)) - ax.begin());
      out.push_back(symbolic_slice(in[d], starts[i], ends[i], steps.empty() ? 1 : steps[i]));
    }
  }
  return out;
}

std::vector<SliceAxis> slice_axes(const std::vector<Expr>& in, const std::vector<Expr>& starts,
                                  const std::vector<Expr>& ends, const std::vector<int64_t>& axes,
                                  const std::vector<int64_t>& steps) {
  // The constant ones as integers (a value of symbolic size as 0 until it is taken below).
  std::vector<int64_t> fixed_starts, fixed_ends;
  bool all_constant = true;
  for (const auto& [from, to] : {std::pair{&starts, &fixed_starts}, std::pair{&ends, &fixed_ends}})
    for (const Expr& e : *from) {
      const int64_t* v = as_const_int(e);
      all_constant = all_constant && v;
      to->push_back(v ? *v : 0);
    }
  std::vector<SliceAxis> out = slice_axes(in, fixed_starts, fixed_ends, axes, steps);
  if (all_constant) return out;
  std::vector<int64_t> ax = axes;
  if (ax.empty())
    for (size_t i = 0; i < starts.size(); ++i) ax.push_back(static_cast<int64_t>(i));
  ax = normalize_axes(ax, static_cast<int64_t>(in.size()), "slice: axes");
  // A value the sizes give (x[:, :, :skip.shape[2]]) counts from the end where negative, so the
  // sizes must tell its sign; it is taken to lie within the axis (checked where they do not tell
  // it) rather than clamped as a constant is, so that its length stays an expression of it.
  for (size_t i = 0; i < ax.size(); ++i) {
    if (as_const_int(starts[i]) && as_const_int(ends[i])) continue;
    const auto d = static_cast<size_t>(ax[i]);
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step <= 0)
      fail("slice: axis ", d, " is sliced from ", to_string(starts[i]), " to ", to_string(ends[i]), " by step ", step,
           ": a start or end of symbolic value needs a positive step");
    arith::BoundMap sizes;  // dimension variables are sizes
    for (const Expr& e : {in[d], starts[i], ends[i]})
      for (const Var& v : vars_of(e)) sizes[v.get()] = {0, arith::ConstBound::kPosInf};
    std::vector<Expr> within;
    auto position = [&](const Expr& p) {
      if (const int64_t* v = as_const_int(p)) {  // clamped as ONNX does (past 2^31: the axis' end)
        if (*v >= kBeyond) return in[d];
        return arith::simplify(*v >= 0 ? min(p, in[d]) : max(in[d] + p, Expr(0)), sizes);
      }
      Expr at;
      if (arith::can_prove(p >= Expr(0), sizes)) at = p;
      else if (arith::can_prove(p < Expr(0), sizes)) at = in[d] + p;
      // -L (x[:, -L:]): from the end but at L = 0, where it is the axis' start (min(-p, 1) is 0).
      else if (arith::can_prove(p <= Expr(0), sizes)) at = (in[d] + p) * min(Expr(0) - p, Expr(1));
      else fail("slice: axis ", d, " is sliced at ", to_string(p), ", which counts from the end at some sizes only");
      if (!arith::can_prove(logical_and(at >= Expr(0), at <= in[d]), sizes))
        within.push_back(arith::simplify(min(in[d] - at, at) + Expr(1), sizes));
      return arith::simplify(at, sizes);
    };
    const Expr first = position(starts[i]), last = position(ends[i]);
    out[d] = {first, step, arith::simplify(floordiv(max(last - first, Expr(0)) + Expr(step - 1), Expr(step)), sizes),
              within};
  }
  return out;
}

namespace {

Tensor slice_of(const Tensor& x, const std::vector<SliceAxis>& dims) {
  std::vector<Expr> shape;
  for (const SliceAxis& d : dims) shape.push_back(d.length);
  return compute(
      shape,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < dims.size(); ++d) {
          Expr i = dims[d].step == 1 ? Expr(o[d]) : o[d] * Expr(dims[d].step);
          idx.push_back(is_const_int(dims[d].start, 0) ? i : i + dims[d].start);
        }
        return x(idx);
      },
      "slice", "transform");
}

}  // namespace

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  return slice_of(x, slice_axes(x->shape, starts, ends, axes, steps));
}

Tensor slice(const Tensor& x, const std::vector<Expr>& starts, const std::vector<Expr>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  return slice_of(x, slice_axes(x->shape, starts, ends, axes, steps));
}

namespace {

// pad with `fill` (an expression of no index) where the constant mode pads.
Tensor pad_with(const Tensor& x, const std::vector<Expr>& pads, PadMode mode, const Expr& fill) {
  const std::vector<Expr>& in = x->shape;
  const std::vector<Expr> out = pad_dims(in, pads, mode);
  size_t rank = in.size();
  bool empty = std::any_of(in.begin(), in.end(), [](const Expr& d) { return is_const_int(d, 0); });
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        if (empty) return fill;
        std::vector<Expr> idx;
        Expr inside;
        for (size_t d = 0; d < rank; ++d) {
          const Expr &begin = pads[d], &end = pads[d + rank], &n = in[d];
          Expr i = is_const_int(begin, 0) ? Expr(o[d]) : o[d] - begin;
          // A symbolic pad is not negative (pad_dims), and may be 0.
          auto positive = [](const Expr& p) { return !as_const_int(p) || *as_const_int(p) > 0; };
          bool padded = positive(begin) || positive(end);
          if (padded && mode == PadMode::Constant) {
            Expr c = logical_and(i >= Expr(0), i < n);
            inside = inside ? logical_and(inside, c) : c;
          } else if (padded && mode == PadMode::Edge) {
            i = min(max(i, Expr(0)), arith::simplify(n - Expr(1)));
          } else if (padded && mode == PadMode::Wrap) {
            // Wrapped around what is left of the axis after negative pads crop it.
            const int64_t* b = as_const_int(begin);
            const int64_t cropped_begin = b ? std::max<int64_t>(0, -*b) : 0;
            const Expr shifted = o[d] - (b ? Expr(std::max<int64_t>(*b, 0)) : begin);
            i = Expr(cropped_begin) + floormod(shifted, wrapped_length(n, begin, end));
          } else if (padded && mode == PadMode::Reflect) {
            // Reflection repeats with period 2 (n - 1), as numpy's for pads wider than n - 1; a
            // symbolic n of 1 reflects with period 1, onto its one element.
            if (is_const_int(n, 1)) {
              i = Expr(0);
            } else {
              Expr period = arith::simplify(Expr(2) * (n - Expr(1)));
              if (!as_const_int(n)) period = max(period, Expr(1));
              Expr m = floormod(i, period);
              i = select(m < n, m, period - m);
            }
          }
          idx.push_back(i);
        }
        // Select reads lazily: the input is not touched outside its bounds.
        return inside ? select(inside, x(idx), fill) : x(idx);
      },
      "pad", "transform");
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<Expr>& pads, PadMode mode, double value) {
  return pad_with(x, pads, mode,
                  x.dtype().is_bool() ? make_const(x.dtype(), value != 0) : make_const(x.dtype(), value));
}

Tensor pad(const Tensor& x, const std::vector<Expr>& pads, PadMode mode, const Tensor& value) {
  if (value.dtype() != x.dtype())
    fail("pad: the value must be of the input's type ", x.dtype().str(), ", got ", value.dtype().str());
  return pad_with(x, pads, mode, value(std::vector<Expr>(value.ndim(), Expr(0))));
}

Tensor depth_to_space(const Tensor& x, int64_t b, bool crd) {
  const std::vector<Expr> out = depth_to_space_shape(x->shape, b);
  const int64_t channels = *as_const_int(out[1]);
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        Expr by = o[2] % Expr(b), bx = o[3] % Expr(b);
        Expr ch = crd ? o[1] * Expr(b * b) + by * Expr(b) + bx : (by * Expr(b) + bx) * Expr(channels) + o[1];
        return x(o[0], ch, o[2] / Expr(b), o[3] / Expr(b));
      },
      "depth_to_space", "transform");
}

Tensor space_to_depth(const Tensor& x, int64_t b) {
  const std::vector<Expr> out = space_to_depth_shape(x->shape, b);
  const int64_t channels = x->dim(1);
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        // Output channels are ordered (block row, block column, input channel).
        Expr c = o[1] % Expr(channels), bx = (o[1] / Expr(channels)) % Expr(b), by = o[1] / Expr(channels * b);
        return x(o[0], c, o[2] * Expr(b) + by, o[3] * Expr(b) + bx);
      },
      "space_to_depth", "transform");
}

Tensor trilu(const Tensor& x, bool upper, const Expr& k) {
  if (x.ndim() < 2) fail("trilu: the input must have rank >= 2, got ", shape_str(x->shape));
  return compute(
      x->shape,
      [&](const std::vector<Var>& o) {
        Expr diff = o[o.size() - 1] - o[o.size() - 2];
        Expr keep = upper ? diff >= k : diff <= k;
        return select(keep, x(as_exprs(o)), make_zero(x.dtype()));
      },
      upper ? "triu" : "tril", "transform");
}

Tensor trilu(const Tensor& x, bool upper, const Tensor& k) {
  if (!k.dtype().is_integer()) fail("trilu: k must be an integer tensor, got ", k.dtype().str());
  // Clamped to the range of j - i first, so that no k (int64's extremes included) wraps.
  if (x.ndim() < 2) fail("trilu: the input must have rank >= 2, got ", shape_str(x->shape));
  Expr span = x->shape[x.ndim() - 1] + x->shape[x.ndim() - 2];
  Expr value = cast(kIndexType, k(std::vector<Expr>(k.ndim(), Expr(0))));
  return trilu(x, upper, min(max(value, Expr(0) - span), span));
}

Tensor one_hot(const Tensor& indices, const Tensor& values, const Expr& depth, int64_t axis) {
  if (values.ndim() != 1 || !is_const_int(values->shape[0], 2))
    fail("one_hot: values must be [off_value, on_value] (shape [2]), got shape ", shape_str(values->shape));
  const std::vector<Expr> out = one_hot_dims(indices->shape, depth, axis);
  int64_t a = normalize_axis(axis, static_cast<int64_t>(out.size()));
  return compute(
      out,
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx = as_exprs(o);
        idx.erase(idx.begin() + a);
        Expr i = cast(kIndexType, indices(idx));
        Expr wrapped = select(i < Expr(0), i + depth, i);
        return select(wrapped == o[a], values(Expr(1)), values(Expr(0)));
      },
      "one_hot", "transform");
}

Tensor reverse_sequence(const Tensor& x, const Tensor& lengths, int64_t batch_axis, int64_t time_axis) {
  const std::vector<Expr>& in = x->shape;
  int64_t rank = static_cast<int64_t>(in.size());
  if (rank < 2) fail("reverse_sequence: the input must have rank >= 2, got ", shape_str(in));
  int64_t ba = normalize_axis(batch_axis, rank, "reverse_sequence: batch_axis");
  int64_t ta = normalize_axis(time_axis, rank, "reverse_sequence: time_axis");
  if (ba == ta) fail("reverse_sequence: batch_axis and time_axis are both ", ba);
  if (lengths.ndim() != 1 || !arith::equal_as_polynomials(lengths->shape[0], in[ba]))
    fail("reverse_sequence: sequence lengths must have shape (", in[ba], "), got ", shape_str(lengths->shape));
  return compute(
      x->shape,
      [&](const std::vector<Var>& o) {
        // Lengths outside [0, T] are clamped so nothing is read out of bounds.
        Expr len = min(max(cast(kIndexType, lengths(o[ba])), Expr(0)), in[ta]);
        std::vector<Expr> idx = as_exprs(o);
        idx[ta] = select(o[ta] < len, len - Expr(1) - o[ta], Expr(o[ta]));
        return x(idx);
      },
      "reverse_sequence", "transform");
}

}  // namespace tessera::tensor_ir::ops

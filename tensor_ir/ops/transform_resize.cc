#include "tensor_ir/ops/transform_resize.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/math.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"

namespace tessera::tensor_ir::ops {

ResizeMode parse_resize_mode(const std::string& name) {
  if (name == "nearest") return ResizeMode::Nearest;
  if (name == "linear") return ResizeMode::Linear;
  if (name == "cubic") return ResizeMode::Cubic;
  fail("resize: mode '", name, "' is not one of nearest, linear, cubic");
}

AntialiasTaps antialias_taps(const ResizeParams& p, size_t d) {
  if (!p.antialias || p.mode == ResizeMode::Nearest || p.scales[d] >= 1) return {};
  const double support = p.mode == ResizeMode::Cubic ? 2 : 1;
  const auto first = static_cast<int64_t>(std::floor(-support / p.scales[d]) + 1);
  return {first, 2 - 2 * first};
}

double resize_kernel(const ResizeParams& p, double u) {
  u = std::abs(u);
  if (p.mode == ResizeMode::Linear) return std::max(0.0, 1 - u);
  const double a = p.cubic_coeff_a;
  if (u <= 1) return ((a + 2) * u - (a + 3)) * u * u + 1;
  if (u < 2) return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  return 0;
}

Shape ResizeParams::static_out_shape() const {
  Shape out;
  for (const Expr& d : out_shape) {
    const int64_t* n = as_const_int(d);
    if (!n) fail("resize: the output shape ", shape_str(out_shape), " is symbolic where a constant is needed");
    out.push_back(*n);
  }
  return out;
}

double half_pixel_symmetric_offset(const ResizeParams& p, size_t d, int64_t in) {
  const double fractional = p.scales[d] * static_cast<double>(in);
  const double adjustment = static_cast<double>(*as_const_int(p.out_shape[d])) / fractional;
  return static_cast<double>(in) / 2 * (1 - adjustment);
}

ResizeCoordinates parse_resize_coordinates(const std::string& name) {
  if (name == "half_pixel") return ResizeCoordinates::HalfPixel;
  if (name == "half_pixel_symmetric") return ResizeCoordinates::HalfPixelSymmetric;
  if (name == "pytorch_half_pixel") return ResizeCoordinates::PytorchHalfPixel;
  if (name == "align_corners") return ResizeCoordinates::AlignCorners;
  if (name == "asymmetric") return ResizeCoordinates::Asymmetric;
  if (name == "tf_half_pixel_for_nn") return ResizeCoordinates::TfHalfPixelForNn;
  if (name == "tf_crop_and_resize") return ResizeCoordinates::TfCropAndResize;
  fail("resize: coordinate_transformation_mode '", name,
       "' is not one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, "
       "tf_half_pixel_for_nn, "
       "tf_crop_and_resize");
}

ResizeNearest parse_resize_nearest(const std::string& name) {
  if (name == "round_prefer_floor") return ResizeNearest::RoundPreferFloor;
  if (name == "round_prefer_ceil") return ResizeNearest::RoundPreferCeil;
  if (name == "floor") return ResizeNearest::Floor;
  if (name == "ceil") return ResizeNearest::Ceil;
  fail("resize: nearest_mode '", name, "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
}

Expr scaled_size(const Expr& size, double scale) {
  // The smallest power of two that makes the scale an integer, kept small enough that the product
  // with any size (below 2^31) fits in 64 bits.
  constexpr double kLargestNumerator = 2147483648.0;
  if (!(scale > 0) || !std::isfinite(scale)) return Expr();
  for (int k = 0; k <= 48; ++k) {
    const double numerator = std::ldexp(scale, k);
    if (numerator > kLargestNumerator) return Expr();
    if (numerator == std::floor(numerator))
      return arith::simplify(floordiv(size * Expr(static_cast<int64_t>(numerator)), Expr(int64_t{1} << k)));
  }
  return Expr();
}

namespace {

// Does the axis map every output index to itself (so it needs no interpolation)?
bool is_identity(const ResizeParams& p, size_t d, const Expr& in) {
  if (p.scale_at_run_time(d) || p.scales[d] != 1 || !structural_equal(p.out_shape[d], in)) return false;
  switch (p.coordinates) {
    case ResizeCoordinates::TfHalfPixelForNn:
      return false;
    case ResizeCoordinates::TfCropAndResize:
      return !p.roi_at_run_time(d) && p.roi[d] == 0 && p.roi[d + p.scales.size()] == 1;
    default:
      return true;
  }
}

}  // namespace

void check_resize(const std::vector<Expr>& in, const ResizeParams& p) {
  size_t rank = in.size();
  if (p.out_shape.size() != rank)
    fail("resize: output shape ", shape_str(p.out_shape), " and input ", shape_str(in), " differ in rank");
  if (p.scales.size() != rank) fail("resize: ", p.scales.size(), " scales for an input of rank ", rank);
  if (p.coordinates == ResizeCoordinates::TfCropAndResize && p.roi.size() != 2 * rank)
    fail("resize: tf_crop_and_resize needs a roi of ", 2 * rank, " values (starts, then ends), got ", p.roi.size());
  if (!p.run_time_scale.empty() && p.run_time_scale.size() != rank)
    fail("resize: ", p.run_time_scale.size(), " places of scales read as it runs for an input of rank ", rank);
  if (!p.run_time_roi.empty() && (p.run_time_roi.size() != rank || p.coordinates != ResizeCoordinates::TfCropAndResize))
    fail("resize: a roi read as it runs needs tf_crop_and_resize and one place per axis (", p.run_time_roi.size(),
         " for an input of rank ", rank, ")");
  for (size_t d = 0; d < rank; ++d) {
    const int64_t *n = as_const_int(in[d]), *out = as_const_int(p.out_shape[d]);
    const bool run_time = p.scale_at_run_time(d);
    if (p.scales[d] == 0 && !run_time && (n && out))
      fail("resize: the scale of axis ", d, " is left to the run time, but its sizes ", *n, " and ", *out,
           " are constants");
    if ((p.scales[d] == 0 || run_time) && p.antialias)
      fail("resize: antialias needs the scale of axis ", d, " as a constant; it resizes ", to_string(in[d]), " to ",
           to_string(p.out_shape[d]));
    if (!(p.scales[d] >= 0) || !std::isfinite(p.scales[d]))
      fail("resize: scale ", p.scales[d], " of axis ", d, " is not a positive number");
    if (out && *out < 0) fail("resize: negative output size in ", shape_str(p.out_shape));
    if (n && out && *n == 0 && *out > 0) fail("resize: cannot resize the empty axis ", d, " of ", shape_str(in));
  }
}

namespace {

Expr f64(double v) { return make_const(runtime::kFloat64, v); }

// What an axis reads from the resize's inputs as it runs, in float64: its scale, and its roi's
// start and end; each undefined where it is known.
struct RunTimeValues {
  Expr scale, roi_start, roi_end;
};

// Where output index `o` of one axis falls in the input, as in ONNX's reference (which uses
// the fractional output size scale * in_size in half_pixel_symmetric, align_corners and
// tf_crop_and_resize), `in` symbolic or not.
Expr input_coordinate(const ResizeParams& p, size_t d, const Expr& in, const Var& o, const RunTimeValues& values) {
  const Expr& run_time_scale = values.scale;
  const double scale = p.scales[d];
  Expr x = cast(runtime::kFloat64, Expr(o));
  const int64_t* fixed = as_const_int(in);
  const bool known = scale != 0 && !run_time_scale.defined();
  // Folded to a constant at a constant size, so the static kernels stay as they were; a scale of
  // sizes known at run time only (0) is their quotient.
  auto out_size = [&]() -> Expr {
    if (run_time_scale.defined()) return run_time_scale * cast(runtime::kFloat64, in);
    if (scale == 0) return cast(runtime::kFloat64, p.out_shape[d]);
    return fixed ? f64(scale * static_cast<double>(*fixed)) : f64(scale) * cast(runtime::kFloat64, in);
  };
  auto by_scale = [&](const Expr& v) {  // v / scale
    if (run_time_scale.defined()) return v / run_time_scale;
    return scale == 0 ? v * cast(runtime::kFloat64, in) / out_size() : v / f64(scale);
  };
  auto unless_single = [&](const Expr& single, const Expr& other) {  // out_size == 1 ? single : other
    if (fixed && known) return scale * static_cast<double>(*fixed) == 1 ? single : other;
    return select(out_size() == f64(1), single, other);
  };
  switch (p.coordinates) {
    case ResizeCoordinates::HalfPixel:
      return by_scale(x + f64(0.5)) - f64(0.5);
    case ResizeCoordinates::HalfPixelSymmetric: {
      if (fixed && known)
        return f64(half_pixel_symmetric_offset(p, d, *fixed)) + (x + f64(0.5)) / f64(scale) - f64(0.5);
      // The center shifted by the share of the fractional output size that rounding dropped (none
      // where the sizes were given).
      Expr adjustment = cast(runtime::kFloat64, p.out_shape[d]) / out_size();
      Expr offset = cast(runtime::kFloat64, in) / f64(2) * (f64(1) - adjustment);
      return offset + by_scale(x + f64(0.5)) - f64(0.5);
    }
    case ResizeCoordinates::PytorchHalfPixel:
      return unless_single(f64(-0.5), by_scale(x + f64(0.5)) - f64(0.5));
    case ResizeCoordinates::AlignCorners:
      if (fixed && known)
        return unless_single(f64(0),
                             x * f64(static_cast<double>(*fixed - 1) / (scale * static_cast<double>(*fixed) - 1)));
      return unless_single(f64(0), x * (cast(runtime::kFloat64, in - Expr(1)) / (out_size() - f64(1))));
    case ResizeCoordinates::Asymmetric:
      return by_scale(x);
    case ResizeCoordinates::TfHalfPixelForNn:
      return by_scale(x + f64(0.5));
    case ResizeCoordinates::TfCropAndResize: {
      const double start = p.roi[d], end = p.roi[d + p.scales.size()];
      if (fixed && known && !values.roi_start.defined()) {
        double span = static_cast<double>(*fixed - 1), size = scale * static_cast<double>(*fixed);
        Expr base = f64(start * span);
        return size == 1 ? f64((end - start) * span / 2) + base : x * f64((end - start) * span / (size - 1)) + base;
      }
      const Expr first = values.roi_start.defined() ? values.roi_start : f64(start);
      const Expr last = values.roi_end.defined() ? values.roi_end : f64(end);
      Expr span = cast(runtime::kFloat64, in - Expr(1));
      return unless_single((first + last) / f64(2) * span,
                           x * ((last - first) * span / (out_size() - f64(1))) + first * span);
    }
  }
  return x;
}

// The neighbours one output index reads along one axis: input indices (clamped) and weights.
struct Taps {
  std::vector<Expr> index;
  std::vector<Expr> weight;  // float64; empty for nearest
};

Expr clamp_to(const Expr& i, const Expr& n) { return min(max(i, Expr(0)), arith::simplify(n - Expr(1))); }

// Antialiased taps: the kernel stretched by 1 / scale over `a.count` neighbours, normalized.
Taps antialiased_taps(const ResizeParams& p, const Expr& f, const Expr& r, const Expr& in, double scale,
                      const AntialiasTaps& a) {
  Taps t;
  for (int64_t k = a.first; k < a.first + a.count; ++k) {
    Expr u = call(Intrinsic::abs, {(f64(static_cast<double>(k)) - r) * f64(scale)});
    Expr w;
    if (p.mode == ResizeMode::Linear) {
      w = max(f64(0), f64(1) - u);
    } else {
      const double c = p.cubic_coeff_a;
      Expr near = ((f64(c + 2) * u - f64(c + 3)) * u) * u + f64(1);
      Expr far = ((f64(c) * u - f64(5 * c)) * u + f64(8 * c)) * u - f64(4 * c);
      w = select(u <= f64(1), near, select(u < f64(2), far, f64(0)));
    }
    Expr i = f + Expr(k);
    if (p.exclude_outside) w = select(logical_and(i >= Expr(0), i < in), w, f64(0));
    t.index.push_back(clamp_to(i, in));
    t.weight.push_back(w);
  }
  Expr total = t.weight[0];
  for (size_t k = 1; k < t.weight.size(); ++k) total = total + t.weight[k];
  for (auto& w : t.weight) w = w / total;
  return t;
}

// The taps of a coordinate whose floor is `f` (an index) and fraction `r`.
Taps axis_taps(const ResizeParams& p, size_t d, const Expr& f, const Expr& r, const Expr& in) {
  if (const AntialiasTaps a = antialias_taps(p, d); a.count > 0) return antialiased_taps(p, f, r, in, p.scales[d], a);
  Taps t;
  if (p.mode == ResizeMode::Nearest) {
    // Exactly integral coordinates pick themselves (r == 0 rounds down in every mode).
    Expr up;
    switch (p.nearest) {
      case ResizeNearest::RoundPreferFloor:
        up = r > f64(0.5);
        break;
      case ResizeNearest::RoundPreferCeil:
        up = r >= f64(0.5);
        break;
      case ResizeNearest::Floor:
        up = const_false();
        break;
      case ResizeNearest::Ceil:
        up = r > f64(0);
        break;
    }
    t.index.push_back(clamp_to(select(up, f + Expr(1), f), in));
    return t;
  }
  if (p.mode == ResizeMode::Linear) {
    t.index = {clamp_to(f, in), clamp_to(f + Expr(1), in)};
    t.weight = {f64(1) - r, r};
    return t;
  }
  double a = p.cubic_coeff_a;
  Expr s = f64(1) - r;
  auto far = [&](const Expr& u) {  // the kernel at distance 1 + u, u in [0, 1)
    Expr v = u + f64(1);
    return ((f64(a) * v - f64(5 * a)) * v + f64(8 * a)) * v - f64(4 * a);
  };
  auto near = [&](const Expr& u) { return ((f64(a + 2) * u - f64(a + 3)) * u) * u + f64(1); };
  t.weight = {far(r), near(r), near(s), far(s)};
  for (int k = -1; k <= 2; ++k) {
    Expr i = f + Expr(k);
    t.index.push_back(clamp_to(i, in));
    if (p.exclude_outside) t.weight[k + 1] = select(logical_and(i >= Expr(0), i < in), t.weight[k + 1], f64(0));
  }
  if (p.exclude_outside) {
    Expr total = t.weight[0] + t.weight[1] + t.weight[2] + t.weight[3];
    for (auto& w : t.weight) w = w / total;
  }
  return t;
}

// body(taps, coordinate) of axis d's taps at coordinate `c`, its fraction bound once: read by
// every weight, and the source targets print an expression as often as it is read. So are the
// coordinate and its floor where `bind_index`; not where the taps read an intermediate stage,
// whose bounds (a GPU kernel's argument) are inferred from the indices alone.
Expr with_axis_taps(const ResizeParams& p, size_t d, const Expr& c, const Expr& in, bool bind_index,
                    const std::function<Expr(const Taps&, const Expr&)>& body) {
  auto with_coordinate = [&](const Expr& x) {
    const Expr fl = call(Intrinsic::floor, {x});
    return let(x - fl, [&](const Expr& r) {
      if (!bind_index) return body(axis_taps(p, d, cast(kIndexType, fl), r, in), x);
      return let(cast(kIndexType, fl), [&](const Expr& f) { return body(axis_taps(p, d, f, r, in), x); });
    });
  };
  return bind_index ? let(c, with_coordinate) : with_coordinate(c);
}

// The neighbours one output reads along axis d.
int64_t tap_count(const ResizeParams& p, size_t d) {
  if (const AntialiasTaps a = antialias_taps(p, d); a.count > 0) return a.count;
  return p.mode == ResizeMode::Cubic ? 4 : p.mode == ResizeMode::Linear ? 2 : 1;
}

// Whether axis d's coordinate `c` leaves the input (tf_crop_and_resize's extrapolation).
Expr outside(const Expr& c, const Expr& in) {
  return logical_or(c<f64(0), c> cast(runtime::kFloat64, arith::simplify(in - Expr(1))));
}

// Axis d of a resize interpolated alone, into `acc`: its neighbours summed as a reduction, so the
// schedules keep the stage apart rather than inline it into the next axis' (which would read
// every combination of neighbours again). `bind_index`: as with_axis_taps', false where `t` is
// another such stage.
Tensor resize_axis(const Tensor& t, const ResizeParams& p, size_t d, const Expr& in, const RunTimeValues& values,
                   DataType acc, bool bind_index) {
  std::vector<Expr> shape = t->shape;
  shape[d] = p.out_shape[d];
  return compute(
      shape,
      [&](const std::vector<Var>& o) {
        IterVar k = reduce_axis(Range(Expr(0), Expr(tap_count(p, d))), "tap");
        Expr term = with_axis_taps(p, d, input_coordinate(p, d, in, o[d], values), in, bind_index,
                                   [&](const Taps& taps, const Expr& c) {
                                     Expr index = taps.index.back(), weight = taps.weight.back();
                                     for (size_t i = taps.index.size() - 1; i-- > 0;) {
                                       Expr is_i = Expr(k) == Expr(static_cast<int64_t>(i));
                                       index = select(is_i, taps.index[i], index);
                                       weight = select(is_i, taps.weight[i], weight);
                                     }
                                     std::vector<Expr> idx(o.begin(), o.end());
                                     idx[d] = index;
                                     Expr value = cast(acc, weight) * cast(acc, t(idx));
                                     if (p.coordinates != ResizeCoordinates::TfCropAndResize) return value;
                                     Expr first = Expr(k) == Expr(0);
                                     return select(
                                         outside(c, in),
                                         select(first, make_const(acc, p.extrapolation_value), make_zero(acc)), value);
                                   });
        return sum(term, {k});
      },
      "resize_axis", "resize");
}

}  // namespace

Tensor resize(const Tensor& x, const ResizeParams& p, const Tensor& scales, const Tensor& roi) {
  const std::vector<Expr>& in = x->shape;
  check_resize(in, p);
  if (!p.run_time_scale.empty() && (!scales.defined() || !scales.dtype().is_float() || scales->shape.size() != 1))
    fail("resize: the scales it reads as it runs must be a 1-D floating-point tensor");
  if (!p.run_time_roi.empty() && (!roi.defined() || !roi.dtype().is_float() || roi->shape.size() != 1))
    fail("resize: the roi it reads as it runs must be a 1-D floating-point tensor");
  DataType dt = x.dtype();
  if (!dt.is_float() && !dt.is_integer()) fail("resize: unsupported dtype ", dt.str());
  DataType acc = dt == runtime::kFloat64 ? runtime::kFloat64 : runtime::kFloat32;
  bool empty = std::any_of(p.out_shape.begin(), p.out_shape.end(), [](const Expr& d) { return is_const_int(d, 0); });
  const auto roi_axes = static_cast<int64_t>(
      std::count_if(p.run_time_roi.begin(), p.run_time_roi.end(), [](int64_t j) { return j >= 0; }));
  auto run_time_values = [&](size_t d) {
    RunTimeValues v;
    if (p.scale_at_run_time(d)) v.scale = cast(runtime::kFloat64, scales(Expr(p.run_time_scale[d])));
    if (p.roi_at_run_time(d)) {
      v.roi_start = cast(runtime::kFloat64, roi(Expr(p.run_time_roi[d])));
      v.roi_end = cast(runtime::kFloat64, roi(Expr(p.run_time_roi[d] + roi_axes)));
    }
    return v;
  };
  // Every interpolated axis but the last one alone where their neighbours together are more than 4
  // per output (cubic along two axes, linear along three): a pass per axis reads 4 + 4 rather than
  // 4 * 4 and weighs each neighbour once, not once for each combination it is in.
  std::vector<size_t> interpolated;
  int64_t taps = 1;
  for (size_t d = 0; d < in.size(); ++d)
    if (!is_identity(p, d, in[d])) interpolated.push_back(d), taps *= tap_count(p, d);
  Tensor source = x;
  std::vector<bool> done(in.size(), false);
  if (taps > 4 && !empty)
    for (size_t i = 0; i + 1 < interpolated.size(); ++i) {
      const size_t d = interpolated[i];
      source = resize_axis(source, p, d, in[d], run_time_values(d), acc, source.same_as(x));
      done[d] = true;
    }
  // The sum over every combination of the axes' taps, their weights multiplied.
  auto interpolate = [&](const std::vector<Taps>& taps, const std::vector<Expr>& outside_any) {
    Expr total;
    std::vector<size_t> pick(in.size(), 0);
    while (true) {
      std::vector<Expr> idx;
      Expr w;
      for (size_t d = 0; d < in.size(); ++d) {
        idx.push_back(taps[d].index[pick[d]]);
        if (!taps[d].weight.empty()) w = w ? w * taps[d].weight[pick[d]] : taps[d].weight[pick[d]];
      }
      Expr term = w ? cast(acc, w) * cast(acc, source(idx)) : source(idx);
      total = total ? total + term : term;
      size_t d = in.size();
      while (d > 0 && ++pick[d - 1] == taps[d - 1].index.size()) pick[--d] = 0;
      if (d == 0) break;
    }
    if (total.type() != dt) {
      // Integer outputs truncate like the reference's astype, clamped so the cast is defined.
      if (dt.is_integer()) total = min(max(total, make_const(acc, dt.min_value())), make_const(acc, dt.max_value()));
      total = cast(dt, total);
    }
    if (outside_any.empty()) return total;
    Expr any = outside_any[0];
    for (size_t i = 1; i < outside_any.size(); ++i) any = logical_or(any, outside_any[i]);
    return select(any, make_const(dt, p.extrapolation_value), total);
  };
  return compute(
      p.out_shape,
      [&](const std::vector<Var>& o) {
        if (empty) return make_zero(dt);
        std::vector<Taps> taps(in.size());
        std::vector<Expr> outside_any;  // tf_crop_and_resize: the coordinate left the input
        // Binds each interpolated axis' coordinate around the axes after it.
        std::function<Expr(size_t)> from_axis = [&](size_t d) -> Expr {
          if (d == in.size()) return interpolate(taps, outside_any);
          if (done[d] || is_identity(p, d, in[d])) {
            taps[d].index = {Expr(o[d])};
            return from_axis(d + 1);
          }
          return with_axis_taps(p, d, input_coordinate(p, d, in[d], o[d], run_time_values(d)), in[d], source.same_as(x),
                                [&](const Taps& t, const Expr& c) {
                                  taps[d] = t;
                                  if (p.coordinates == ResizeCoordinates::TfCropAndResize)
                                    outside_any.push_back(outside(c, in[d]));
                                  return from_axis(d + 1);
                                });
        };
        return from_axis(0);
      },
      "resize", "resize");
}

}  // namespace tessera::tensor_ir::ops

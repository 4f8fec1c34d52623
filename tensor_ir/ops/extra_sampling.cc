// grid_sample and roi_align: gathers at data-dependent, fractional coordinates. A coordinate
// becomes an index only after it is clamped (NaN included) into a range around the tensor, and
// each tap reads at that index clamped into the tensor while a separate bounds test decides
// whether the tap counts; so no input value can make a kernel read out of bounds.
#include <cmath>
#include <functional>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/extra.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops {

GridSampleMode parse_grid_sample_mode(const std::string& name) {
  if (name == "bilinear") return GridSampleMode::Bilinear;
  if (name == "nearest") return GridSampleMode::Nearest;
  if (name == "bicubic") return GridSampleMode::Bicubic;
  fail("grid_sample: mode '", name, "' is not one of bilinear, nearest, bicubic");
}

GridSamplePadding parse_grid_sample_padding(const std::string& name) {
  if (name == "zeros") return GridSamplePadding::Zeros;
  if (name == "border") return GridSamplePadding::Border;
  if (name == "reflection") return GridSamplePadding::Reflection;
  fail("grid_sample: padding_mode '", name, "' is not one of zeros, border, reflection");
}

namespace {

// body(v) with v bound to `value`: a value used several times is computed once.
Expr bind(const Expr& value, const std::function<Expr(Expr)>& body) {
  Var v("v", value.type());
  return Let::make(v, value, body(v));
}

// An integral-valued float as an index, first clamped to [lo, hi] (NaN goes to lo) so that the
// conversion is defined for every value.
Expr to_index(const Expr& x, const Expr& lo, const Expr& hi) {
  return cast(kIndexType, select(x >= lo, select(x <= hi, x, hi), lo));
}
Expr to_index(const Expr& x, double lo, double hi) {
  return to_index(x, make_const(x.type(), lo), make_const(x.type(), hi));
}

Expr inside(const Expr& i, const Expr& n) { return logical_and(i >= Expr(0), i < n); }
Expr clamp_index(const Expr& i, const Expr& n) { return min(max(i, Expr(0)), n - Expr(1)); }

// --- grid_sample ------------------------------------------------------------------------------

// One spatial axis of X, of a size that may be symbolic (its float value then computed per call).
struct GridAxis {
  GridSamplePadding padding;
  bool align;
  Expr size;
  DataType t;
  Expr c(double v) const { return make_const(t, v); }
  Expr n() const {
    const int64_t* s = as_const_int(size);
    return s ? c(static_cast<double>(*s)) : cast(t, size);
  }

  // [-1, 1] -> pixel coordinates.
  Expr unnormalize(const Expr& g) const {
    return align ? (g + c(1)) / c(2) * (n() - c(1)) : ((g + c(1)) * n() - c(1)) / c(2);
  }
  Expr clip(const Expr& x) const { return min(max(x, c(0)), n() - c(1)); }
  // Reflects x into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates); 0 where
  // that span is empty (an axis of one pixel, aligned at the corners).
  Expr reflect(const Expr& x, const Expr& twice_low, const Expr& twice_high) const {
    if (const int64_t* s = as_const_int(size); s && align && *s == 1) return c(0);
    Expr low = twice_low / c(2), span = (twice_high - twice_low) / c(2);
    Expr reflected = bind(tensor_ir::abs(x - low), [&](Expr in) {
      return bind(call(Intrinsic::floor, {in / span}), [&](Expr flips) {
        Expr extra = in - flips * span;
        Expr even = flips - call(Intrinsic::floor, {flips / c(2)}) * c(2) == c(0);
        return select(even, extra + low, span - extra + low);
      });
    });
    return as_const_int(size) ? reflected : select(span > c(0), reflected, c(0));
  }
  // The padding mode applied to a pixel coordinate.
  Expr pad(const Expr& x) const {
    switch (padding) {
      case GridSamplePadding::Zeros:
        return x;
      case GridSamplePadding::Border:
        return clip(x);
      case GridSamplePadding::Reflection:
        return clip(align ? reflect(x, c(0), c(2) * (n() - c(1))) : reflect(x, c(-1), c(2) * n() - c(1)));
    }
    return x;
  }
  // The index of an integral-valued coordinate; anything far outside stays outside.
  Expr index(const Expr& x) const { return to_index(x, c(-4), n() + c(4)); }
};

// PyTorch's cubic convolution weights (A = -0.75) of the four taps around fraction t.
std::vector<Expr> cubic_weights(const Expr& t, const GridAxis& a) {
  const double A = -0.75;
  auto near = [&](const Expr& x) { return ((a.c(A + 2) * x - a.c(A + 3)) * x) * x + a.c(1); };
  auto far = [&](const Expr& x) { return ((a.c(A) * x - a.c(5 * A)) * x + a.c(8 * A)) * x - a.c(4 * A); };
  return {far(t + a.c(1)), near(t), near(a.c(1) - t), far(a.c(2) - t)};
}

}  // namespace

std::vector<Expr> grid_sample_dims(const std::vector<Expr>& x, const std::vector<Expr>& grid, GridSampleMode mode) {
  if (x.size() != 4 && x.size() != 5)
    fail("grid_sample: X must be [N, C, H, W] or [N, C, D, H, W], got ", shape_str(x));
  const size_t rank = x.size() - 2;  // spatial dimensions
  if (grid.size() != x.size() || !arith::equal_as_polynomials(grid[0], x[0]) ||
      !is_const_int(grid.back(), static_cast<int64_t>(rank)))
    fail("grid_sample: grid must be [N, out..., ", rank, "] with N = ", to_string(x[0]), ", got ", shape_str(grid));
  if (rank == 3 && mode == GridSampleMode::Bicubic) fail("grid_sample: bicubic sampling of volumes is not supported");
  std::vector<Expr> out{x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return out;
}

Tensor grid_sample(const Tensor& x, const Tensor& grid, GridSampleMode mode, GridSamplePadding padding,
                   bool align_corners) {
  DataType dt = x.dtype();
  if (!dt.is_float()) fail("grid_sample: X must be float16, float32 or float64, got ", dt.str());
  if (grid.dtype() != dt) fail("grid_sample: grid is ", grid.dtype().str(), ", X ", dt.str());
  const std::vector<Expr> out_shape = grid_sample_dims(x->shape, grid->shape, mode);
  const size_t rank = x.ndim() - 2;  // spatial dimensions
  DataType acc = dt == runtime::kFloat64 ? dt : runtime::kFloat32;
  // Spatial dimension k (D, H, W) and the grid component that addresses it (x is W's).
  std::vector<GridAxis> axes;
  bool empty = false;  // known to be: an input of symbolic size reads nothing when it is (tap's select)
  for (size_t k = 0; k < rank; ++k) {
    axes.push_back({padding, align_corners, x->shape[2 + k], acc});
    empty |= is_const_int(x->shape[2 + k], 0);
  }
  return compute(
      out_shape,
      [&](const std::vector<Var>& o) -> Expr {
        if (empty) return make_zero(dt);
        // The voxel at integer indices idx times w, or 0 outside the input.
        auto tap = [&](const std::vector<Expr>& idx, const Expr& w) {
          std::vector<Expr> at{o[0], o[1]};
          Expr in;
          for (size_t k = 0; k < rank; ++k) {
            at.push_back(clamp_index(idx[k], axes[k].size));
            in = in.defined() ? logical_and(in, inside(idx[k], axes[k].size)) : inside(idx[k], axes[k].size);
          }
          return select(in, cast(acc, x(at)) * w, make_zero(acc));
        };
        auto component = [&](size_t k) {
          std::vector<Expr> at{o[0]};
          for (size_t j = 0; j < rank; ++j) at.push_back(o[2 + j]);
          at.push_back(Expr(static_cast<int64_t>(rank - 1 - k)));
          return cast(acc, grid(at));
        };
        Expr out;
        if (mode == GridSampleMode::Bicubic) {
          const GridAxis &ay = axes[0], &ax = axes[1];
          out = bind(ax.unnormalize(component(1)), [&](Expr ix) {
            return bind(ay.unnormalize(component(0)), [&](Expr iy) {
              Expr x0 = call(Intrinsic::floor, {ix}), y0 = call(Intrinsic::floor, {iy});
              auto wx = cubic_weights(ix - x0, ax), wy = cubic_weights(iy - y0, ay);
              Expr sum;
              for (int i = 0; i < 4; ++i) {
                Expr yi = ay.index(ay.pad(y0 + ay.c(i - 1))), row;
                for (int j = 0; j < 4; ++j) {
                  Expr t = tap({yi, ax.index(ax.pad(x0 + ax.c(j - 1)))}, wx[j]);
                  row = row.defined() ? row + t : t;
                }
                sum = sum.defined() ? sum + row * wy[i] : row * wy[i];
              }
              return sum;
            });
          });
        } else {
          // Each coordinate padded and bound once, then nearest: the rounded voxel; linear: the
          // 2^rank voxels around it, each weighted by the product of its distances' complements.
          std::vector<Expr> coords(rank);
          std::function<Expr(size_t)> nest = [&](size_t k) -> Expr {
            if (k < rank)
              return bind(axes[k].pad(axes[k].unnormalize(component(k))), [&, k](Expr c) {
                coords[k] = c;
                return nest(k + 1);
              });
            if (mode == GridSampleMode::Nearest) {
              // Round half to even, as std::nearbyint in PyTorch.
              std::vector<Expr> idx;
              for (size_t j = 0; j < rank; ++j) idx.push_back(axes[j].index(call(Intrinsic::round, {coords[j]})));
              return tap(idx, axes[0].c(1));
            }
            Expr sum;
            for (size_t corner = 0; corner < (size_t{1} << rank); ++corner) {
              std::vector<Expr> idx;
              Expr w;
              for (size_t j = 0; j < rank; ++j) {
                Expr lo = call(Intrinsic::floor, {coords[j]});
                const bool up = (corner >> (rank - 1 - j)) & 1;
                idx.push_back(axes[j].index(lo) + Expr(up ? 1 : 0));
                Expr wj = up ? coords[j] - lo : lo + axes[j].c(1) - coords[j];
                w = w.defined() ? w * wj : wj;
              }
              Expr t = tap(idx, w);
              sum = sum.defined() ? sum + t : t;
            }
            return sum;
          };
          out = nest(0);
        }
        return cast(dt, out);
      },
      "grid_sample", "grid_sample");
}

// --- roi_align --------------------------------------------------------------------------------

namespace {

// Where the samples of one bin of one roi lie along one axis: sample k of `grid` lies at
// start + (k + 0.5) * bin / grid.
struct RoiAxis {
  Expr start, bin;
  Expr grid;  // int64, >= 0
};

RoiAxis roi_axis(const Tensor& rois, const Expr& r, int coord, const Expr& bin_index, int64_t out_size,
                 const RoiAlignParams& p, DataType acc) {
  auto c = [&](double v) { return make_const(acc, v); };
  double offset = p.half_pixel ? 0.5 : 0;
  Expr begin = cast(acc, rois(r, Expr(coord))) * c(p.spatial_scale) - c(offset);
  Expr end = cast(acc, rois(r, Expr(coord + 2))) * c(p.spatial_scale) - c(offset);
  Expr extent = end - begin;
  if (!p.half_pixel) extent = max(extent, c(1));  // output_half_pixel: at least one pixel
  Expr bin = extent / c(static_cast<double>(out_size));
  // Adaptive: ceil(bin) samples, none for an empty or inverted roi (the count is clamped so that
  // products of counts stay exact).
  Expr grid = p.sampling_ratio > 0 ? Expr(p.sampling_ratio) : to_index(call(Intrinsic::ceil, {bin}), 0, 1 << 30);
  return {begin + cast(acc, bin_index) * bin, bin, grid};
}

}  // namespace

Tensor roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices, const RoiAlignParams& p) {
  DataType dt = x.dtype();
  if (!dt.is_float()) fail("roi_align: X must be float16, float32 or float64, got ", dt.str());
  auto xs = x->dims(), rs = rois->dims(), bs = batch_indices->dims();
  if (xs.size() != 4) fail("roi_align: X must be [N, C, H, W], got ", runtime::shape_str(xs));
  if (rois.dtype() != dt || rs.size() != 2 || rs[1] != 4)
    fail("roi_align: rois must be ", dt.str(), "[num_rois, 4], got ", rois.dtype().str(), runtime::shape_str(rs));
  if (!batch_indices.dtype().is_integer() || bs != std::vector<int64_t>{rs[0]})
    fail("roi_align: batch_indices must be integers of shape [", rs[0], "], got ", batch_indices.dtype().str(),
         runtime::shape_str(bs));
  if (p.output_height < 1 || p.output_width < 1 || p.sampling_ratio < 0)
    fail("roi_align: output_height and output_width must be positive and sampling_ratio not negative");
  int64_t batch = xs[0], height = xs[2], width = xs[3];
  DataType acc = dt == runtime::kFloat64 ? dt : runtime::kFloat32;
  auto c = [&](double v) { return make_const(acc, v); };
  std::vector<Expr> shape = {Expr(rs[0]), Expr(xs[1]), Expr(p.output_height), Expr(p.output_width)};
  if (batch == 0 || height == 0 || width == 0)
    return compute(
        shape, [&](const std::vector<Var>&) { return make_zero(dt); }, "roi_align", "roi_align");

  // Per bin: the sum (or maximum) of its samples' bilinear interpolations. An adaptive count of
  // samples is a loop bound computed from the roi (the same for all bins of a roi), so a kernel
  // visits exactly the samples ONNX Runtime does.
  Tensor pooled = compute(
      shape,
      [&](const std::vector<Var>& o) {
        Expr r = o[0], ch = o[1];
        RoiAxis ay = roi_axis(rois, r, 1, o[2], p.output_height, p, acc),
                ax = roi_axis(rois, r, 0, o[3], p.output_width, p, acc);
        IterVar ky = reduce_axis(Range(Expr(0), ay.grid), "ky"), kx = reduce_axis(Range(Expr(0), ax.grid), "kx");
        Expr b = clamp_index(cast(kIndexType, batch_indices(r)), batch);
        // In ONNX Runtime's order of operations.
        auto at = [&](const RoiAxis& a, const Expr& k) {
          return a.start + (cast(acc, k) + c(0.5)) * a.bin / cast(acc, max(a.grid, Expr(1)));
        };
        Expr y = at(ay, ky), xx = at(ax, kx);
        // ONNX Runtime's bilinear_interpolate: nothing past one pixel outside, edges clamped.
        Expr valid = logical_and(logical_and(y >= c(-1), y <= c(static_cast<double>(height))),
                                 logical_and(xx >= c(-1), xx <= c(static_cast<double>(width))));
        Expr value = bind(max(y, c(0)), [&](Expr yc) {
          return bind(max(xx, c(0)), [&](Expr xc) {
            Expr top = yc >= c(static_cast<double>(height - 1)), right = xc >= c(static_cast<double>(width - 1));
            Expr yl = select(top, Expr(height - 1),
                             to_index(call(Intrinsic::floor, {yc}), 0, static_cast<double>(height - 1)));
            Expr xl = select(right, Expr(width - 1),
                             to_index(call(Intrinsic::floor, {xc}), 0, static_cast<double>(width - 1)));
            Expr yh = min(yl + Expr(1), Expr(height - 1)), xh = min(xl + Expr(1), Expr(width - 1));
            Expr ly = select(top, c(0), yc - cast(acc, yl)), lx = select(right, c(0), xc - cast(acc, xl));
            Expr hy = c(1) - ly, hx = c(1) - lx;
            auto v = [&](const Expr& yi, const Expr& xi) { return cast(acc, x(b, ch, yi, xi)); };
            Expr t1 = hy * hx * v(yl, xl), t2 = hy * lx * v(yl, xh), t3 = ly * hx * v(yh, xl), t4 = ly * lx * v(yh, xh);
            return p.max_mode ? max(max(max(t1, t2), t3), t4) : t1 + t2 + t3 + t4;
          });
        });
        Expr sample = select(valid, value, c(0));
        return p.max_mode ? max_reduce(sample, {ky, kx}) : sum(sample, {ky, kx});
      },
      "roi_align_pool", "roi_align");

  return compute(
      shape,
      [&](const std::vector<Var>& o) {
        Expr gy = roi_axis(rois, o[0], 1, o[2], p.output_height, p, acc).grid;
        Expr gx = roi_axis(rois, o[0], 0, o[3], p.output_width, p, acc).grid;
        Expr v = pooled(o[0], o[1], o[2], o[3]), total = gy * gx;
        if (p.max_mode) return cast(dt, select(total > Expr(0), v, c(0)));  // no sample: 0
        return cast(dt, v / cast(acc, max(total, Expr(1))));
      },
      "roi_align", "roi_align");
}

}  // namespace tessera::tensor_ir::ops

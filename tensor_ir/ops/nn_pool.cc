// Pooling over the spatial dimensions of [N, C, spatial...] data. Window reads outside the
// input are selects (lazy: a masked load, never an out-of-bounds read) of the pool's neutral
// value, so windows vectorize along the last output dimension (tag "pool", template "pool").
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

struct Window {
  std::vector<IterVar> axes;  // one reduction axis per spatial dimension
  std::vector<Expr> pos;      // the input position read, per spatial dimension
  Expr inside;                // all positions inside the input
};

// The window over the first `dims` spatial dimensions (all of them by default).
Window window(const Tensor& data, const PoolGeometry& g, const std::vector<Var>& out, size_t dims = SIZE_MAX) {
  Window w;
  w.inside = const_true();
  size_t rank = std::min(dims, g.kernel.size());
  for (size_t d = 0; d < rank; ++d) {
    IterVar k = reduce_axis(Range(Expr(0), Expr(g.kernel[d])), "r" + std::to_string(d));
    Expr x = out[2 + d] * Expr(g.strides[d]) + k * Expr(g.dilations[d]) - Expr(g.pads[d]);
    w.axes.push_back(k);
    w.pos.push_back(x);
    w.inside = logical_and(w.inside, logical_and(x >= Expr(0), x < data->shape[2 + d]));
  }
  return w;
}

Expr read(const Tensor& data, const std::vector<Var>& out, const std::vector<Expr>& pos) {
  std::vector<Expr> idx{out[0], out[1]};
  idx.insert(idx.end(), pos.begin(), pos.end());
  return data(idx);
}

// How many of kernel positions start + k * dilation (k < kernel) fall in [lo, hi).
Expr count_in(const Expr& start, int64_t kernel, int64_t dilation, int64_t lo, const Expr& hi) {
  Expr first = max(floordiv(Expr(lo) - start + Expr(dilation - 1), Expr(dilation)), Expr(0));
  Expr last = min(floordiv(hi - Expr(1) - start, Expr(dilation)), Expr(kernel - 1));
  return max(last - first + Expr(1), Expr(0));
}

Tensor pool_compute(const Tensor& data, const PoolGeometry& g, const std::string& name,
                    const std::function<Expr(const std::vector<Var>&)>& body) {
  std::vector<Expr> out = pool_shape(dims_per_image(data), g);
  return compute(with_batch_of(data, out), body, name, "pool", nc_axis_names(out.size()));
}

}  // namespace

std::vector<int64_t> pool_shape(const std::vector<int64_t>& data, const PoolGeometry& g) {
  return const_dims(pool_shape(shape_exprs(data), g));
}

std::vector<Expr> pool_shape(const std::vector<Expr>& data, const PoolGeometry& g) {
  if (data.size() < 3) fail("pool: data must be [N, C, spatial...], got ", shape_str(data));
  size_t rank = data.size() - 2;
  if (g.kernel.size() != rank || g.strides.size() != rank || g.dilations.size() != rank || g.pads.size() != 2 * rank)
    fail("pool: kernel, strides, dilations and pads must have ", rank, ", ", rank, ", ", rank, " and ", 2 * rank,
         " entries for data ", shape_str(data), ", got ", g.kernel.size(), ", ", g.strides.size(), ", ",
         g.dilations.size(), " and ", g.pads.size());
  std::vector<Expr> out{data[0], data[1]};
  for (size_t d = 0; d < rank; ++d) {
    if (g.kernel[d] < 1 || g.strides[d] < 1 || g.dilations[d] < 1)
      fail("pool: kernel, strides and dilations must be positive");
    if (g.pads[d] < 0 || g.pads[d + rank] < 0) fail("pool: pads must not be negative");
    if (g.pads[d] >= (g.kernel[d] - 1) * g.dilations[d] + 1 ||
        g.pads[d + rank] >= (g.kernel[d] - 1) * g.dilations[d] + 1)
      fail("pool: pads (", g.pads[d], ", ", g.pads[d + rank], ") must be smaller than the window (",
           (g.kernel[d] - 1) * g.dilations[d] + 1, ") in spatial dimension ", d);
    const int64_t window = (g.kernel[d] - 1) * g.dilations[d] + 1, stride = g.strides[d];
    Expr span = arith::simplify(data[2 + d] + Expr(g.pads[d] + g.pads[d + rank] - window));
    const int64_t* fixed = as_const_int(span);
    if (fixed && *fixed < 0) fail("pool: the window is larger than the padded input in spatial dimension ", d);
    Expr o = (g.ceil_mode ? ceil_div(span, stride) : floordiv(span, Expr(stride))) + Expr(1);
    // With ceil_mode, the last window must start inside the input or its left padding.
    if (g.ceil_mode) o = min(o, floordiv(data[2 + d] + Expr(g.pads[d] - 1), Expr(stride)) + Expr(1));
    out.push_back(arith::simplify(o));
  }
  return out;
}

// A maximum over a window of two or more dimensions is taken in steps whose vectors are
// contiguous loads: over the leading window dimensions for every input column the windows touch
// (the borders a masked load each), then along the last one at every column (loads at
// consecutive offsets), both per row (tag "pool_partial"); with a stride along the last
// dimension, the output (tag "pool") then picks every stride-th column, one gathered load per
// vector where reading the input directly would take one per window position.
Tensor max_pool(const Tensor& data, const PoolGeometry& g) {
  Expr lowest = make_const(data.dtype(), data.dtype().min_value());
  if (data.dtype().is_float()) lowest = make_const(data.dtype(), -std::numeric_limits<double>::infinity());
  size_t rank = g.kernel.size();
  if (rank < 2) {
    return pool_compute(data, g, "max_pool", [&](const std::vector<Var>& o) {
      Window w = window(data, g, o);
      return max_reduce(select(w.inside, read(data, o, w.pos), lowest), w.axes);
    });
  }
  size_t last = rank - 1;
  int64_t stride = g.strides[last], dilation = g.dilations[last];
  std::vector<Expr> out = pool_shape(dims_per_image(data), g);
  std::vector<Expr> columns = out;
  columns.back() = arith::simplify((out.back() - Expr(1)) * Expr(stride) + Expr((g.kernel[last] - 1) * dilation + 1));
  std::vector<std::string> names = nc_axis_names(out.size());
  Tensor leading = compute(
      with_batch_of(data, columns),
      [&](const std::vector<Var>& o) {
        Window w = window(data, g, o, last);
        Expr x = o.back() - Expr(g.pads[last]);
        w.pos.push_back(x);
        Expr inside = logical_and(w.inside, logical_and(x >= Expr(0), x < data->shape[2 + last]));
        return max_reduce(select(inside, read(data, o, w.pos), lowest), w.axes);
      },
      "max_pool_leading", "pool_partial", names);
  // The window's maximum starting at each column (at every stride-th one: the output).
  auto along_last = [&](const Expr& width, const std::string& name, const std::string& tag) {
    std::vector<Expr> shape = out;
    shape.back() = width;
    IterVar k = reduce_axis(Range(Expr(0), Expr(g.kernel[last])), "r" + std::to_string(last));
    return compute(
        with_batch_of(data, shape),
        [&](const std::vector<Var>& o) {
          std::vector<Expr> idx = as_exprs(o);
          idx.back() = o.back() + k * Expr(dilation);
          return max_reduce(leading(idx), {k});
        },
        name, tag, names);
  };
  if (stride == 1) return along_last(out.back(), "max_pool", "pool");
  Tensor window_max =
      along_last(arith::simplify((out.back() - Expr(1)) * Expr(stride) + Expr(1)), "max_pool_window", "pool_partial");
  return compute(
      with_batch_of(data, out),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx = as_exprs(o);
        idx.back() = o.back() * Expr(stride);
        return window_max(idx);
      },
      "max_pool", "pool", names);
}

Tensor max_pool_indices(const Tensor& data, const Tensor& pooled, const PoolGeometry& g, int storage_order) {
  size_t rank = g.kernel.size();
  std::vector<Expr> in;  // the sizes, as int64 (symbolic or not)
  for (const Expr& e : data->shape) in.push_back(cast(runtime::kInt64, e));
  // The row-major flat index of the first maximum in scan order, then (storage_order 1) the same
  // element's index with the spatial dimensions column-major.
  Tensor first = pool_compute(data, g, "max_pool_argmax", [&](const std::vector<Var>& o) {
    Window w = window(data, g, o);
    Expr flat = cast(runtime::kInt64, o[0]) * in[1] + cast(runtime::kInt64, o[1]);
    for (size_t d = 0; d < rank; ++d) flat = flat * in[2 + d] + cast(runtime::kInt64, w.pos[d]);
    Expr hit = select(w.inside, read(data, o, w.pos) == pooled(as_exprs(o)), const_false());
    return min_reduce(select(hit, flat, Expr(std::numeric_limits<int64_t>::max())), w.axes);
  });
  if (storage_order == 0) return first;
  Expr plane = make_const(runtime::kInt64, 1);
  for (size_t d = 0; d < rank; ++d) plane = plane * in[2 + d];
  return compute(
      first->shape,
      [&](const std::vector<Var>& o) {
        Expr f = first(as_exprs(o));
        Expr offset = floormod(f, plane), result = f - offset;
        std::vector<Expr> coord(rank);
        for (size_t d = rank; d-- > 0;) {
          coord[d] = floormod(offset, in[2 + d]);
          offset = floordiv(offset, in[2 + d]);
        }
        Expr col = make_zero(runtime::kInt64);
        for (size_t d = rank; d-- > 0;) col = col * in[2 + d] + coord[d];
        return result + col;
      },
      "max_pool_indices", "pool_indices", nc_axis_names(rank + 2));
}

Tensor avg_pool(const Tensor& data, const PoolGeometry& g, bool count_include_pad) {
  size_t rank = g.kernel.size();
  DataType acc = accumulation_type(data.dtype());
  Tensor sum_t = pool_compute(data, g, "avg_pool_sum", [&](const std::vector<Var>& o) {
    Window w = window(data, g, o);
    return sum(select(w.inside, cast(acc, read(data, o, w.pos)), make_zero(acc)), w.axes);
  });
  return compute(
      sum_t->shape,
      [&](const std::vector<Var>& o) {
        Expr count = Expr(1);
        for (size_t d = 0; d < rank; ++d) {
          Expr start = o[2 + d] * Expr(g.strides[d]) - Expr(g.pads[d]);
          int64_t lo = count_include_pad ? -g.pads[d] : 0;
          Expr hi = data->shape[2 + d] + Expr(count_include_pad ? g.pads[d + rank] : 0);
          count = count * count_in(start, g.kernel[d], g.dilations[d], lo, hi);
        }
        return cast(data.dtype(), sum_t(as_exprs(o)) / cast(acc, count));
      },
      "avg_pool", "pool_epilogue", nc_axis_names(rank + 2));
}

Tensor lp_pool(const Tensor& data, const PoolGeometry& g, double p) {
  if (!(p > 0)) fail("lp_pool: p must be positive, got ", p);
  DataType acc = accumulation_type(data.dtype());
  Tensor total = pool_compute(data, g, "lp_pool_sum", [&](const std::vector<Var>& o) {
    Window w = window(data, g, o);
    Expr x = abs(cast(acc, read(data, o, w.pos)));
    Expr term = p == 1 ? x : p == 2 ? x * x : call(Intrinsic::pow, {x, make_const(acc, p)});
    return sum(select(w.inside, term, make_zero(acc)), w.axes);
  });
  return compute(
      total->shape,
      [&](const std::vector<Var>& o) {
        Expr s = total(as_exprs(o));
        Expr r = p == 1 ? s : p == 2 ? sqrt(s) : call(Intrinsic::pow, {s, make_const(acc, 1.0 / p)});
        return cast(data.dtype(), r);
      },
      "lp_pool", "pool_epilogue", nc_axis_names(total.ndim()));
}

Tensor global_pool(const Tensor& data, const std::string& kind, double p) {
  if (data.ndim() < 3) fail("global_pool: data must be [N, C, spatial...], got rank ", data.ndim());
  size_t rank = data.ndim() - 2;
  DataType acc = accumulation_type(data.dtype());
  std::vector<Expr> shape{Expr(1), data->shape[1]};
  std::vector<IterVar> axes;
  Expr count = 1;
  for (size_t d = 0; d < rank; ++d) {
    shape.push_back(Expr(1));
    axes.push_back(reduce_axis(Range(Expr(0), data->shape[2 + d]), "r" + std::to_string(d)));
    count = count * data->shape[2 + d];
  }
  count = arith::simplify(count);
  auto at = [&](const std::vector<Var>& o) {
    std::vector<Expr> idx{o[0], o[1]};
    for (const auto& a : axes) idx.push_back(a);
    return data(idx);
  };
  if (kind == "max")
    return compute(
        with_batch_of(data, shape), [&](const std::vector<Var>& o) { return max_reduce(at(o), axes); },
        "global_max_pool", "global_pool", nc_axis_names(rank + 2));
  if (kind != "avg" && kind != "lp") fail("global_pool: kind must be avg, max or lp, got '", kind, "'");
  if (kind == "lp" && !(p > 0)) fail("global_pool: p must be positive, got ", p);
  Tensor total = compute(
      with_batch_of(data, shape),
      [&](const std::vector<Var>& o) {
        Expr x = cast(acc, at(o));
        if (kind == "lp") x = p == 1 ? abs(x) : p == 2 ? x * x : call(Intrinsic::pow, {abs(x), make_const(acc, p)});
        return sum(x, axes);
      },
      "global_" + kind + "_pool_sum", "global_pool", nc_axis_names(rank + 2));
  return compute(
      total->shape,
      [&](const std::vector<Var>& o) {
        Expr s = total(as_exprs(o));
        const int64_t* fixed = as_const_int(count);
        Expr r = kind == "avg" ? s / (fixed ? make_const(acc, static_cast<double>(*fixed)) : cast(acc, count))
                 : p == 1      ? s
                 : p == 2      ? sqrt(s)
                               : call(Intrinsic::pow, {s, make_const(acc, 1.0 / p)});
        return cast(data.dtype(), r);
      },
      "global_" + kind + "_pool", "global_pool", nc_axis_names(rank + 2));
}

std::vector<Expr> unpooled_shape(const std::vector<Expr>& pooled, const PoolGeometry& g) {
  const size_t rank = g.kernel.size();
  if (pooled.size() != rank + 2 || g.strides.size() != rank || g.pads.size() != 2 * rank)
    fail("max_unpool: data ", shape_str(pooled), " does not match a ", rank, "-D kernel with ", g.strides.size(),
         " strides and ", g.pads.size(), " pads");
  std::vector<Expr> full{pooled[0], pooled[1]};
  for (size_t d = 0; d < rank; ++d) {
    full.push_back(arith::simplify((pooled[2 + d] - Expr(1)) * Expr(g.strides[d]) +
                                   Expr(g.kernel[d] - g.pads[d] - g.pads[d + rank])));
    if (const int64_t* n = as_const_int(full.back()); n && *n < 1)
      fail("max_unpool: pads leave no output in spatial dimension ", d);
  }
  return full;
}

Tensor max_unpool(const Tensor& data, const Tensor& indices, const PoolGeometry& g,
                  const std::vector<Expr>& output_shape) {
  const std::vector<Expr>& in = data->shape;
  const size_t rank = g.kernel.size();
  if (indices->shape.size() != in.size() ||
      !std::equal(in.begin(), in.end(), indices->shape.begin(),
                  [](const Expr& a, const Expr& b) { return arith::can_prove(a == b); }))
    fail("max_unpool: indices ", shape_str(indices->shape), " must have the shape of data ", shape_str(in));
  // Indices are flat positions in the shape max_pool's input had (the default output shape);
  // a larger output_shape keeps those coordinates and fills the rest with zeros. Its batch and
  // channels are the data's (the caller checks that it gives the same).
  const std::vector<Expr> full = unpooled_shape(in, g);
  std::vector<Expr> out = full;
  if (!output_shape.empty()) {
    if (output_shape.size() != rank + 2)
      fail("max_unpool: output_shape ", shape_str(output_shape), " must be [N, C, ", rank, " spatial sizes]");
    std::copy(output_shape.begin() + 2, output_shape.end(), out.begin() + 2);
  }
  std::vector<IterVar> axes;
  for (size_t d = 0; d < rank; ++d)
    axes.push_back(
        reduce_axis(Range(Expr(0), Expr((g.kernel[d] + g.strides[d] - 1) / g.strides[d])), "r" + std::to_string(d)));
  auto int64 = [](const Expr& e) { return cast(runtime::kInt64, e); };
  // The input positions whose windows cover output position o: q = (o + pad) / stride - r.
  auto candidate = [&](const std::vector<Var>& o, Expr& match, std::vector<Expr>& q) {
    Expr flat = int64(o[0]) * int64(in[1]) + int64(o[1]);
    match = const_true();
    for (size_t d = 0; d < rank; ++d) {
      Expr base = o[2 + d] + Expr(g.pads[d]);
      Expr qd = floordiv(base, Expr(g.strides[d])) - axes[d];
      q.push_back(max(min(qd, in[2 + d] - Expr(1)), Expr(0)));
      match = logical_and(
          match, logical_and(logical_and(qd >= Expr(0), qd < in[2 + d]),
                             logical_and(o[2 + d] < full[2 + d], base - qd * Expr(g.strides[d]) < Expr(g.kernel[d]))));
      flat = flat * int64(full[2 + d]) + int64(o[2 + d]);
    }
    std::vector<Expr> idx{o[0], o[1]};
    idx.insert(idx.end(), q.begin(), q.end());
    match = logical_and(match, indices(idx) == flat);
    q = idx;
  };
  Tensor found = compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        Expr match;
        std::vector<Expr> q;
        candidate(o, match, q);
        return max_reduce(select(match, Expr(1), Expr(0)), axes);
      },
      "max_unpool_found", "pool", nc_axis_names(rank + 2));
  Expr lowest = make_const(
      data.dtype(), data.dtype().is_float() ? -std::numeric_limits<double>::infinity() : data.dtype().min_value());
  Tensor value = compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        Expr match;
        std::vector<Expr> q;
        candidate(o, match, q);
        return max_reduce(select(match, data(q), lowest), axes);
      },
      "max_unpool_value", "pool", nc_axis_names(rank + 2));
  return compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        return select(found(as_exprs(o)) > Expr(0), value(as_exprs(o)), make_zero(data.dtype()));
      },
      "max_unpool", "pool_epilogue", nc_axis_names(rank + 2));
}

}  // namespace tessera::tensor_ir::ops

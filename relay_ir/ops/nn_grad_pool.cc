// Gradients of pooling. A maximum sends its window's cotangent to the first position holding it
// (max_pool_grad, PyTorch's choice among ties); averages and p-norms are window sums scaled per
// window, whose transpose is window_sum_grad; global pools broadcast back over space; unpooling
// gathers the cotangent back.
#include "relay_ir/ops/nn_grad.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"

namespace tessera::relay_ir::nn_grad {

namespace ops = tensor_ir::ops;

namespace {

// Per output window, as a constant broadcasting over batch and channels: how many of its
// positions avg_pool divides by (count_include_pad) or lie inside the input.
Expr window_counts(const std::vector<int64_t>& in, const ops::PoolGeometry& g, bool count_include_pad, DataType dtype) {
  std::vector<int64_t> shape = ops::pool_shape(in, g);
  shape[0] = shape[1] = 1;
  return constant_of(shape, dtype, ops::pool_window_counts(in, g, count_include_pad));
}

Expr window_sum_grad(const Expr& v, const std::vector<int64_t>& in, const ops::PoolGeometry& g) {
  Attrs a = window_attrs(g);
  a.set("input_shape", in);
  return call("window_sum_grad", {v}, a);
}

Expr max_pool_grad(const Expr& x, const Expr& y, const Expr& g, const ops::PoolGeometry& geo) {
  return call("max_pool_grad", {x, y, g}, window_attrs(geo));
}

// d/dx of (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) y^(1-p): `spread` takes the per-window factor
// g * y^(1-p) back to the positions it sums over.
Expr lp_grad(const Expr& x, const Expr& y, const Expr& g, double p, const std::function<Expr(const Expr&)>& spread) {
  if (p == 1) return mul(spread(g), call("sign", {x}));
  if (p == 2) return mul(spread(div(g, y)), x);
  Expr per_window = mul(g, call("pow", {y, scalar_like(1 - p, y)}));
  Expr per_input = mul(call("sign", {x}), call("pow", {call("abs", {x}), scalar_like(p - 1, x)}));
  return mul(spread(per_window), per_input);
}

}  // namespace

void register_pool(OpRegistry& r) {
  r.set_gradient("max_pool", [](const Expr& c, const Expr& g) {
    return std::vector<Expr>{max_pool_grad(arg(c, 0), c, g, pool_geometry(as_call(c).attrs))};
  });
  r.set_gradient("max_pool_with_indices", [](const Expr& c, const Expr& g) {
    return std::vector<Expr>{max_pool_grad(arg(c, 0), tuple_get(c, 0), element(g, 0), pool_geometry(as_call(c).attrs))};
  });
  r.set_gradient("avg_pool", [](const Expr& c, const Expr& g) {
    const Expr& x = arg(c, 0);
    const auto& xt = tensor_of(x);
    auto geo = pool_geometry(as_call(c).attrs);
    Expr counts = window_counts(xt.shape, geo, as_call(c).attrs.get_int("count_include_pad") != 0, xt.dtype);
    return std::vector<Expr>{window_sum_grad(div(g, counts), xt.shape, geo)};
  });
  r.set_gradient("lp_pool", [](const Expr& c, const Expr& g) {
    const Expr& x = arg(c, 0);
    auto geo = pool_geometry(as_call(c).attrs);
    auto spread = [&](const Expr& v) { return window_sum_grad(v, tensor_of(x).shape, geo); };
    return std::vector<Expr>{lp_grad(x, c, g, as_call(c).attrs.get_float("p"), spread)};
  });
  r.set_gradient("global_avg_pool", [](const Expr& c, const Expr& g) {
    const auto& xt = tensor_of(arg(c, 0));
    double count = 1;
    for (size_t d = 2; d < xt.ndim(); ++d) count *= static_cast<double>(xt.shape[d]);
    return std::vector<Expr>{call("broadcast_to", {div(g, scalar_of(count, xt.dtype))}, {{"shape", xt.shape}})};
  });
  // One window over all of space: the first maximum takes the cotangent.
  r.set_gradient("global_max_pool", [](const Expr& c, const Expr& g) {
    const Expr& x = arg(c, 0);
    ops::PoolGeometry geo;
    const auto& xs = tensor_of(x).shape;
    geo.kernel.assign(xs.begin() + 2, xs.end());
    geo.strides.assign(geo.kernel.size(), 1);
    geo.dilations.assign(geo.kernel.size(), 1);
    geo.pads.assign(2 * geo.kernel.size(), 0);
    return std::vector<Expr>{max_pool_grad(x, c, g, geo)};
  });
  r.set_gradient("global_lp_pool", [](const Expr& c, const Expr& g) {
    const Expr& x = arg(c, 0);
    auto spread = [&](const Expr& v) { return call("broadcast_to", {v}, {{"shape", tensor_of(x).shape}}); };
    return std::vector<Expr>{lp_grad(x, c, g, as_call(c).attrs.get_float("p"), spread)};
  });
  // Each input went to the output position its index names: it reads the cotangent there
  // (indices are flat in the unpooled shape, which a larger output_shape keeps at its start).
  r.set_gradient("max_unpool", [](const Expr& c, const Expr& g) {
    const Expr &x = arg(c, 0), &indices = arg(c, 1);
    const auto& xs = tensor_of(x).shape;
    auto geo = pool_geometry(as_call(c).attrs);
    std::vector<int64_t> full{xs[0], xs[1]}, starts(xs.size(), 0);
    int64_t total = xs[0] * xs[1];
    size_t rank = xs.size() - 2;
    for (size_t d = 0; d < rank; ++d) {
      full.push_back((xs[2 + d] - 1) * geo.strides[d] + geo.kernel[d] - geo.pads[d] - geo.pads[d + rank]);
      total *= full.back();
    }
    Expr gf = tensor_of(g).shape == full ? g : call("slice", {g}, {{"starts", starts}, {"ends", full}});
    return std::vector<Expr>{call("take", {reshape(gf, {total}), indices}, {{"axis", int64_t(0)}}), Expr()};
  });
  // window_sum_grad is linear; its transpose sums each window over the positions inside the
  // input: avg_pool counting only those, times their count.
  r.set_gradient("window_sum_grad", [](const Expr& c, const Expr& g) {
    const auto& attrs = as_call(c).attrs;
    auto geo = pool_geometry(attrs);
    std::vector<int64_t> in = attrs.get_ints("input_shape");
    Attrs a = window_attrs(geo);
    a.set("count_include_pad", int64_t(0));
    Expr mean = call("avg_pool", {g}, a);
    return std::vector<Expr>{mul(mean, window_counts(in, geo, false, tensor_of(g).dtype))};
  });
}

}  // namespace tessera::relay_ir::nn_grad

// Pooling over the spatial dimensions of [N, C, spatial...] data: max_pool, max_pool_with_indices,
// avg_pool, lp_pool, their global forms and max_unpool. Window attributes: kernel (required),
// strides and dilations (empty: all 1), pads (begins then ends; empty: none), ceil_mode. The
// backward passes of max and window-sum pooling (max_pool_grad, window_sum_grad) are ops only
// gradients build.
// Gradients: a maximum sends its window's cotangent to the first position holding it
// (max_pool_grad, PyTorch's choice among ties); averages and p-norms are window sums scaled per
// window, whose transpose is window_sum_grad; global pools broadcast back over space; unpooling
// gathers the cotangent back.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn_grad.h"
#include "tensor_ir/printer.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

ops::PoolGeometry nn::pool_geometry(const Attrs& a) {
  ops::PoolGeometry g;
  g.kernel = a.get_ints("kernel");
  size_t rank = g.kernel.size();
  auto or_fill = [&](const char* name, size_t n, int64_t fill) {
    std::vector<int64_t> v = a.get_ints(name);
    return v.empty() ? std::vector<int64_t>(n, fill) : v;
  };
  g.strides = or_fill("strides", rank, 1);
  g.dilations = or_fill("dilations", rank, 1);
  g.pads = or_fill("pads", 2 * rank, 0);
  if (a.has("ceil_mode")) {
    int64_t c = a.get_int("ceil_mode");
    if (c != 0 && c != 1) fail("ceil_mode must be 0 or 1, got ", c);
    g.ceil_mode = c == 1;
  }
  return g;
}

namespace {

std::vector<AttrSpec> window_attrs() {
  return {{"kernel", std::vector<int64_t>{}, true},
          {"strides", std::vector<int64_t>{}},
          {"pads", std::vector<int64_t>{}},
          {"dilations", std::vector<int64_t>{}},
          {"ceil_mode", int64_t(0)}};
}

const TensorTypeNode& pool_data(const std::vector<Type>& args, bool any_numeric) {
  const auto& d = tensor_arg(args, 0, "data");
  if (any_numeric) {
    if (d.dtype.is_bool()) fail("data must be numeric, got bool");
  } else {
    require_float(d, "data");
  }
  if (d.ndim() < 3) fail("data must be [N, C, spatial...], got ", d.shape.str());
  return d;
}

Type pool_rel(const std::vector<Type>& args, const Attrs& attrs, bool any_numeric) {
  const auto& d = pool_data(args, any_numeric);
  auto g = nn::pool_geometry(attrs);
  return tensor_type(
      keep_batch(d.shape, [&](const std::vector<tensor_ir::Expr>& data) { return ops::pool_shape(data, g); }), d.dtype);
}

Type max_pool_rel(const std::vector<Type>& args, const Attrs& attrs) { return pool_rel(args, attrs, true); }
Type float_pool_rel(const std::vector<Type>& args, const Attrs& attrs) { return pool_rel(args, attrs, false); }

Type max_pool_with_indices_rel(const std::vector<Type>& args, const Attrs& attrs) {
  int64_t order = attrs.get_int("storage_order");
  if (order != 0 && order != 1) fail("storage_order must be 0 (row major) or 1 (column major), got ", order);
  Type pooled = pool_rel(args, attrs, true);
  return tuple_type({pooled, tensor_type(as_tensor(pooled, "max_pool_with_indices").shape, runtime::kInt64)});
}

Type lp_pool_rel(const std::vector<Type>& args, const Attrs& attrs) {
  if (!(attrs.get_float("p") > 0)) fail("p must be positive, got ", attrs.get_float("p"));
  return pool_rel(args, attrs, false);
}

Type global_pool_rel(const std::vector<Type>& args, const Attrs& attrs, bool any_numeric) {
  const auto& d = pool_data(args, any_numeric);
  if (attrs.has("p") && !(attrs.get_float("p") > 0)) fail("p must be positive, got ", attrs.get_float("p"));
  std::vector<tensor_ir::Expr> shape{d.shape.dim(0), d.shape.dim(1)};
  shape.resize(d.ndim(), 1);
  return tensor_type(Shape(shape), d.dtype);
}

const TensorTypeNode& pooled_input(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "x");
  require_float(x, "x");
  if (x.ndim() < 3) fail("x must be [N, C, spatial...], got ", runtime::shape_str(x.shape));
  if (attrs.get_ints("kernel").size() + 2 != x.ndim())
    fail("kernel ", runtime::shape_str(attrs.get_ints("kernel")), " must have one entry per spatial dimension of x ",
         runtime::shape_str(x.shape));
  return x;
}

Type max_pool_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = pooled_input(args, attrs);
  std::vector<int64_t> pooled = ops::pool_shape(x.shape, nn::pool_geometry(attrs));
  for (size_t i = 1; i < 3; ++i) {
    const auto& t = tensor_arg(args, i, i == 1 ? "y" : "dy");
    if (t.dtype != x.dtype || t.shape != pooled)
      fail(i == 1 ? "y" : "dy", " must be ", to_string(tensor_type(pooled, x.dtype)), " (the pooled x), got ",
           to_string(args[i]));
  }
  return args[0];
}

Type window_sum_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& v = tensor_arg(args, 0, "v");
  require_float(v, "v");
  std::vector<int64_t> in = attrs.get_ints("input_shape");
  if (in.size() != v.ndim() || attrs.get_ints("kernel").size() + 2 != in.size())
    fail("input_shape ", runtime::shape_str(in), " and kernel must match v ", runtime::shape_str(v.shape));
  std::vector<int64_t> pooled = ops::pool_shape(in, nn::pool_geometry(attrs));
  if (pooled != v.shape)
    fail("v ", runtime::shape_str(v.shape), " must have the pooled shape ", runtime::shape_str(pooled),
         " of input_shape ", runtime::shape_str(in));
  return tensor_type(in, v.dtype);
}

Type max_unpool_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = pool_data(args, true);
  const auto& idx = tensor_arg(args, 1, "indices");
  if (idx.dtype != runtime::kInt64) fail("indices must be int64, got ", idx.dtype.str());
  if (idx.shape != d.shape) fail("indices ", idx.shape.str(), " must have the shape of data ", d.shape.str());
  const std::vector<tensor_ir::Expr> full = ops::unpooled_shape(d.shape.dims(), nn::pool_geometry(attrs));
  const Shape out = attrs.get_shape("output_shape");
  if (out.empty()) return tensor_type(Shape(full), d.dtype);
  if (out.size() != d.ndim())
    fail("output_shape ", out.str(), " must be [N, C, spatial sizes...] for data ", d.shape.str());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out.is_static(i) || !d.shape.is_static(i)) continue;  // checked at each call (max_unpool_checks)
    const int64_t size = Shape(full)[i];
    if (i < 2 ? out[i] != size : out[i] < size)
      fail("output_shape ", out.str(), " must be ", i < 2 ? "[N, C, ...] of data " : "at least the unpooled size ",
           i < 2 ? d.shape.str() : Shape(full).str());
  }
  std::vector<tensor_ir::Expr> dims = out.dims();
  dims[0] = full[0];
  dims[1] = full[1];
  return tensor_type(Shape(dims), d.dtype);
}

// What the type relation cannot tell of a symbolic output_shape, checked at each call: batch and
// channels the data's, spatial sizes at least the unpooled ones.
std::vector<OpDef::NonEmptyDim> max_unpool_checks(const CallNode& call) {
  const Shape out = call.attrs.get_shape("output_shape");
  if (out.empty() || out.size() != tensor_of(call.args.at(0)).shape.size()) return {};
  const std::vector<tensor_ir::Expr> full =
      ops::unpooled_shape(tensor_of(call.args.at(0)).shape.dims(), nn::pool_geometry(call.attrs));
  std::vector<OpDef::NonEmptyDim> checks;
  const tensor_ir::Expr one(1);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out.is_static(i) && Shape(full).is_static(i)) continue;
    const std::string out_i = tensor_ir::to_string(out.dim(i)), full_i = tensor_ir::to_string(full[i]);
    const std::string which = "needs output_shape's dimension " + std::to_string(i) + ", " + out_i + ", ";
    const std::string positive = " must be positive)";
    checks.push_back({out.dim(i) - full[i] + one, one,
                      which + (i < 2 ? "equal to the data's " : "at least the unpooled size ") + full_i + " (" + out_i +
                          " - " + full_i + " + 1" + positive});
    if (i < 2)
      checks.push_back({full[i] - out.dim(i) + one, one,
                        which + "equal to the data's " + full_i + " (" + full_i + " - " + out_i + " + 1" + positive});
  }
  return checks;
}

}  // namespace

namespace nn {
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

std::vector<Expr> max_pool_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{max_pool_grad(arg(c, 0), c, g, pool_geometry(as_call(c).attrs))};
}

std::vector<Expr> max_pool_with_indices_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{max_pool_grad(arg(c, 0), tuple_get(c, 0), element(g, 0), pool_geometry(as_call(c).attrs))};
}

std::vector<Expr> avg_pool_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  const auto& xt = tensor_of(x);
  auto geo = pool_geometry(as_call(c).attrs);
  Expr counts = window_counts(xt.shape, geo, as_call(c).attrs.get_int("count_include_pad") != 0, xt.dtype);
  return std::vector<Expr>{window_sum_grad(div(g, counts), xt.shape, geo)};
}

std::vector<Expr> lp_pool_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  auto geo = pool_geometry(as_call(c).attrs);
  auto spread = [&](const Expr& v) { return window_sum_grad(v, tensor_of(x).shape, geo); };
  return std::vector<Expr>{lp_grad(x, c, g, as_call(c).attrs.get_float("p"), spread)};
}

std::vector<Expr> global_avg_pool_gradient(const Expr& c, const Expr& g) {
  const auto& xt = tensor_of(arg(c, 0));
  double count = 1;
  for (size_t d = 2; d < xt.ndim(); ++d) count *= static_cast<double>(xt.shape[d]);
  return std::vector<Expr>{call("broadcast_to", {div(g, scalar_of(count, xt.dtype))}, {{"shape", xt.shape}})};
}

// One window over all of space: the first maximum takes the cotangent.
std::vector<Expr> global_max_pool_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  ops::PoolGeometry geo;
  const auto& xs = tensor_of(x).shape;
  geo.kernel.assign(xs.begin() + 2, xs.end());
  geo.strides.assign(geo.kernel.size(), 1);
  geo.dilations.assign(geo.kernel.size(), 1);
  geo.pads.assign(2 * geo.kernel.size(), 0);
  return std::vector<Expr>{max_pool_grad(x, c, g, geo)};
}

std::vector<Expr> global_lp_pool_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  auto spread = [&](const Expr& v) { return call("broadcast_to", {v}, {{"shape", tensor_of(x).shape}}); };
  return std::vector<Expr>{lp_grad(x, c, g, as_call(c).attrs.get_float("p"), spread)};
}

// Each input went to the output position its index names: it reads the cotangent there
// (indices are flat in the unpooled shape, which a larger output_shape keeps at its start).
std::vector<Expr> max_unpool_gradient(const Expr& c, const Expr& g) {
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
}

// window_sum_grad is linear; its transpose sums each window over the positions inside the
// input: avg_pool counting only those, times their count.
std::vector<Expr> window_sum_grad_gradient(const Expr& c, const Expr& g) {
  const auto& attrs = as_call(c).attrs;
  auto geo = pool_geometry(attrs);
  std::vector<int64_t> in = attrs.get_ints("input_shape");
  Attrs a = window_attrs(geo);
  a.set("count_include_pad", int64_t(0));
  Expr mean = call("avg_pool", {g}, a);
  return std::vector<Expr>{mul(mean, window_counts(in, geo, false, tensor_of(g).dtype))};
}

}  // namespace
}  // namespace nn

void register_nn_pool_ops(OpRegistry& r) {
  r.add({"max_pool", "maximum over each window (padding never wins)", 1, 1, window_attrs(), max_pool_rel,
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) { return ops::max_pool(in[0], nn::pool_geometry(a)); }), "pool",
         nn::max_pool_gradient, /*is_view=*/false, nn::window_fits});
  auto with_indices = window_attrs();
  with_indices.push_back({"storage_order", int64_t(0)});
  r.add(
      {"max_pool_with_indices",
       "(maximum, int64 flat index of its first occurrence in the input; spatial dims column-major if storage_order=1)",
       1, 1, with_indices, max_pool_with_indices_rel, OpPattern::Opaque,
       [](const In& in, const Attrs& a, const Type&) {
         tensor_ir::Tensor y = ops::max_pool(in[0], nn::pool_geometry(a));
         return std::vector<tensor_ir::Tensor>{
             y, ops::max_pool_indices(in[0], y, nn::pool_geometry(a), static_cast<int>(a.get_int("storage_order")))};
       },
       "pool", nn::max_pool_with_indices_gradient});
  auto avg = window_attrs();
  avg.push_back({"count_include_pad", int64_t(0)});
  r.add({"avg_pool", "mean over each window; padding counts only with count_include_pad", 1, 1, avg, float_pool_rel,
         OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::avg_pool(in[0], nn::pool_geometry(a), a.get_int("count_include_pad") != 0);
         }),
         "pool_epilogue", nn::avg_pool_gradient, /*is_view=*/false, nn::window_fits});
  auto lp = window_attrs();
  lp.push_back({"p", 2.0});
  r.add({"lp_pool", "(sum |x|^p over each window)^(1/p)", 1, 1, lp, lp_pool_rel, OpPattern::OutEWiseFusable,
         single_output(
             [](const In& in, const Attrs& a) { return ops::lp_pool(in[0], nn::pool_geometry(a), a.get_float("p")); }),
         "pool_epilogue", nn::lp_pool_gradient, /*is_view=*/false, nn::window_fits});
  r.add({"global_avg_pool",
         "mean over all spatial dimensions (kept as size 1)",
         1,
         1,
         {},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, false); },
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs&) { return ops::global_pool(in[0], "avg"); }),
         "global_pool",
         nn::global_avg_pool_gradient});
  r.add({"global_max_pool",
         "maximum over all spatial dimensions (kept as size 1)",
         1,
         1,
         {},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, true); },
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs&) { return ops::global_pool(in[0], "max"); }),
         "global_pool",
         nn::global_max_pool_gradient});
  r.add({"global_lp_pool",
         "(sum |x|^p over all spatial dimensions)^(1/p)",
         1,
         1,
         {{"p", 2.0}},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, false); },
         OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) { return ops::global_pool(in[0], "lp", a.get_float("p")); }),
         "global_pool",
         nn::global_lp_pool_gradient});
  auto unpool = window_attrs();
  unpool.push_back({"output_shape", std::vector<int64_t>{}});
  r.add({"max_unpool", "inverse of max_pool: data goes to the positions its indices name, zeros elsewhere", 2, 2,
         unpool, max_unpool_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::max_unpool(in[0], in[1], nn::pool_geometry(a), a.get_shape("output_shape").dims());
         }),
         "pool_epilogue", nn::max_unpool_gradient, false, max_unpool_checks});
  r.add({"max_pool_grad",
         "the gradient of y = max_pool(x) for the cotangent dy: each window's goes to its first maximum (row-major), "
         "as PyTorch",
         3, 3, window_attrs(), max_pool_grad_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::max_pool_grad(in[0], in[1], in[2], nn::pool_geometry(a), registers_of(a, "max_pool_grad"));
         }),
         "pool_grad"});
  auto sum_attrs = window_attrs();
  sum_attrs.push_back({"input_shape", std::vector<int64_t>{}, true});
  r.add({"window_sum_grad",
         "the transpose of a sum over pooling windows: each position of an input_shape input gets the sum of v over "
         "the windows "
         "covering it",
         1, 1, sum_attrs, window_sum_grad_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::window_sum_grad(in[0], a.get_ints("input_shape"), nn::pool_geometry(a),
                                       registers_of(a, "window_sum_grad"));
         }),
         "pool_grad", nn::window_sum_grad_gradient});
}

}  // namespace tessera::relay_ir

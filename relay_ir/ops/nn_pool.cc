// Pooling over the spatial dimensions of [N, C, spatial...] data: max_pool, max_pool_with_indices,
// avg_pool, lp_pool, their global forms and max_unpool. Window attributes: kernel (required),
// strides and dilations (empty: all 1), pads (begins then ends; empty: none), ceil_mode.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

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
  return {{"kernel", std::vector<int64_t>{}, true}, {"strides", std::vector<int64_t>{}}, {"pads", std::vector<int64_t>{}},
          {"dilations", std::vector<int64_t>{}}, {"ceil_mode", int64_t(0)}};
}

const TensorTypeNode& pool_data(const std::vector<Type>& args, bool any_numeric) {
  const auto& d = nn::arg(args, 0, "data");
  if (any_numeric) {
    if (d.dtype.is_bool()) fail("data must be numeric, got bool");
  } else {
    nn::require_float(d, "data");
  }
  if (d.ndim() < 3) fail("data must be [N, C, spatial...], got ", runtime::shape_str(d.shape));
  return d;
}

Type pool_rel(const std::vector<Type>& args, const Attrs& attrs, bool any_numeric) {
  const auto& d = pool_data(args, any_numeric);
  return tensor_type(ops::pool_shape(d.shape, nn::pool_geometry(attrs)), d.dtype);
}

Type max_pool_rel(const std::vector<Type>& args, const Attrs& attrs) { return pool_rel(args, attrs, true); }
Type float_pool_rel(const std::vector<Type>& args, const Attrs& attrs) { return pool_rel(args, attrs, false); }

Type max_pool_with_indices_rel(const std::vector<Type>& args, const Attrs& attrs) {
  int64_t order = attrs.get_int("storage_order");
  if (order != 0 && order != 1) fail("storage_order must be 0 (row major) or 1 (column major), got ", order);
  const auto& d = pool_data(args, true);
  auto shape = ops::pool_shape(d.shape, nn::pool_geometry(attrs));
  return tuple_type({tensor_type(shape, d.dtype), tensor_type(shape, runtime::kInt64)});
}

Type lp_pool_rel(const std::vector<Type>& args, const Attrs& attrs) {
  if (!(attrs.get_float("p") > 0)) fail("p must be positive, got ", attrs.get_float("p"));
  return pool_rel(args, attrs, false);
}

Type global_pool_rel(const std::vector<Type>& args, const Attrs& attrs, bool any_numeric) {
  const auto& d = pool_data(args, any_numeric);
  if (attrs.has("p") && !(attrs.get_float("p") > 0)) fail("p must be positive, got ", attrs.get_float("p"));
  std::vector<int64_t> shape(d.shape.begin(), d.shape.begin() + 2);
  shape.resize(d.ndim(), 1);
  return tensor_type(shape, d.dtype);
}

Type max_unpool_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = pool_data(args, true);
  const auto& idx = nn::arg(args, 1, "indices");
  if (idx.dtype != runtime::kInt64) fail("indices must be int64, got ", idx.dtype.str());
  if (idx.shape != d.shape)
    fail("indices ", runtime::shape_str(idx.shape), " must have the shape of data ", runtime::shape_str(d.shape));
  ops::PoolGeometry g = nn::pool_geometry(attrs);
  size_t rank = d.ndim() - 2;
  if (g.kernel.size() != rank || g.strides.size() != rank || g.pads.size() != 2 * rank)
    fail("kernel, strides and pads must have ", rank, ", ", rank, " and ", 2 * rank, " entries for data ", runtime::shape_str(d.shape));
  std::vector<int64_t> out = attrs.get_ints("output_shape");
  std::vector<int64_t> full{d.shape[0], d.shape[1]};
  for (size_t i = 0; i < rank; ++i) {
    full.push_back((d.shape[2 + i] - 1) * g.strides[i] + g.kernel[i] - g.pads[i] - g.pads[i + rank]);
    if (full.back() < 1) fail("pads leave no output in spatial dimension ", i);
  }
  if (out.empty()) return tensor_type(full, d.dtype);
  if (out.size() != d.ndim() || out[0] != d.shape[0] || out[1] != d.shape[1])
    fail("output_shape ", runtime::shape_str(out), " must be [", d.shape[0], ", ", d.shape[1], ", spatial sizes...]");
  for (size_t i = 0; i < rank; ++i)
    if (out[2 + i] < full[2 + i]) fail("output_shape ", runtime::shape_str(out), " is smaller than the unpooled size ", runtime::shape_str(full));
  return tensor_type(out, d.dtype);
}

}  // namespace

void register_nn_pool_ops(OpRegistry& r) {
  r.add({"max_pool", "maximum over each window (padding never wins)", 1, 1, window_attrs(), max_pool_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) { return ops::max_pool(in[0], nn::pool_geometry(a)); })});
  auto with_indices = window_attrs();
  with_indices.push_back({"storage_order", int64_t(0)});
  r.add({"max_pool_with_indices",
         "(maximum, int64 flat index of its first occurrence in the input; spatial dims column-major if storage_order=1)", 1, 1,
         with_indices, max_pool_with_indices_rel, OpPattern::Opaque, [](const In& in, const Attrs& a, const Type&) {
           tensor_ir::Tensor y = ops::max_pool(in[0], nn::pool_geometry(a));
           return std::vector<tensor_ir::Tensor>{y, ops::max_pool_indices(in[0], y, nn::pool_geometry(a), static_cast<int>(a.get_int("storage_order")))};
         }});
  auto avg = window_attrs();
  avg.push_back({"count_include_pad", int64_t(0)});
  r.add({"avg_pool", "mean over each window; padding counts only with count_include_pad", 1, 1, avg, float_pool_rel,
         OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::avg_pool(in[0], nn::pool_geometry(a), a.get_int("count_include_pad") != 0);
         })});
  auto lp = window_attrs();
  lp.push_back({"p", 2.0});
  r.add({"lp_pool", "(sum |x|^p over each window)^(1/p)", 1, 1, lp, lp_pool_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) { return ops::lp_pool(in[0], nn::pool_geometry(a), a.get_float("p")); })});
  r.add({"global_avg_pool", "mean over all spatial dimensions (kept as size 1)", 1, 1, {},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, false); }, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs&) { return ops::global_pool(in[0], "avg"); })});
  r.add({"global_max_pool", "maximum over all spatial dimensions (kept as size 1)", 1, 1, {},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, true); }, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs&) { return ops::global_pool(in[0], "max"); })});
  r.add({"global_lp_pool", "(sum |x|^p over all spatial dimensions)^(1/p)", 1, 1, {{"p", 2.0}},
         [](const auto& args, const Attrs& a) { return global_pool_rel(args, a, false); }, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) { return ops::global_pool(in[0], "lp", a.get_float("p")); })});
  auto unpool = window_attrs();
  unpool.push_back({"output_shape", std::vector<int64_t>{}});
  r.add({"max_unpool", "inverse of max_pool: data goes to the positions its indices name, zeros elsewhere", 2, 2, unpool,
         max_unpool_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::max_unpool(in[0], in[1], nn::pool_geometry(a), a.get_ints("output_shape"));
         })});
}

}  // namespace tessera::relay_ir

// Converters of ONNX pooling operators (opsets 1-17): MaxPool (with its optional Indices
// output), AveragePool, LpPool, the global pools and MaxUnpool.
#include <limits>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

size_t pool_rank(const ConvertContext& c) {
  const auto& x = c.input_type(0);
  if (x.ndim() < 3) c.error("input X must be [N, C, spatial...], got shape " + x.shape.str());
  return x.ndim() - 2;
}

// kernel, strides, dilations, pads (auto_pad resolved) and ceil_mode as graph attributes; with
// `input`, that of the input, padded already with `fill` where SAME pads with a stride depend on
// a symbolic size (nn::window_input), else the pads must be constants.
Attrs window_attrs(const ConvertContext& c, Expr* input = nullptr, double fill = 0) {
  size_t rank = pool_rank(c);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {});
  if (kernel.size() != rank)
    c.error("kernel_shape must have " + std::to_string(rank) + " entries (one per spatial dimension), got " +
            std::to_string(kernel.size()));
  for (int64_t k : kernel)
    if (k < 1) c.error("kernel_shape must be positive, got " + std::to_string(k));
  std::vector<int64_t> strides = nn::spatial_attr(c, "strides", rank, 1);
  std::vector<int64_t> dilations = nn::spatial_attr(c, "dilations", rank, 1);
  const auto& x = c.input_type(0);
  std::vector<int64_t> extent(rank);
  for (size_t d = 0; d < rank; ++d) extent[d] = (kernel[d] - 1) * dilations[d] + 1;
  int64_t ceil_mode = c.attr_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) c.error("ceil_mode must be 0 or 1, got " + std::to_string(ceil_mode));
  std::vector<int64_t> pads;
  if (input) {
    nn::WindowInput in = nn::window_input(c, extent, strides, fill);
    *input = in.x;
    pads = in.pads;
  } else {
    pads = nn::window_pads(c, x.shape, extent, strides);
  }
  return {{"kernel", kernel}, {"strides", strides}, {"dilations", dilations}, {"pads", pads}, {"ceil_mode", ceil_mode}};
}

// LpPool's and GlobalLpPool's p: a float attribute in opset 1, an int from opset 2.
double lp_p(const ConvertContext& c) {
  for (const auto& a : c.node().attribute())
    if (a.name() == "p") return a.type() == ::onnx::AttributeProto::FLOAT ? a.f() : static_cast<double>(a.i());
  return 2.0;
}

// The share of each window of `padded` (the node's input padded by window_input) that lies on
// the input, [1, 1, spatial...]: the average over all of a window divided by it is the average
// over the input alone (count_include_pad 0), where the pads are symbolic and no attribute.
Expr share_on_data(ConvertContext& c, const Expr& padded, const Attrs& window) {
  const relay_ir::Shape& x = c.input_type(0).shape;
  std::vector<tensor_ir::Expr> plane{tensor_ir::Expr(1), tensor_ir::Expr(1)};
  for (size_t d = 2; d < x.size(); ++d) plane.push_back(x.dim(d));
  Expr ones = c.call("broadcast_to", {scalar_constant(1, c.input_type(0).dtype)}, {{"shape", relay_ir::Shape(plane)}});
  const auto* pad = padded.as<relay_ir::CallNode>();
  return c.call("avg_pool", {c.call("pad", {ones}, pad->attrs)}, window);
}

bool wants_output(const ConvertContext& c, int i) { return c.node().output_size() > i && !c.node().output(i).empty(); }

}  // namespace

void register_nn_pool_converters(ConverterTable& t) {
  t.add("MaxPool", [](ConvertContext& c) {
    c.check_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    int64_t order = c.attr_int("storage_order", 0);
    if (!wants_output(c, 1)) {  // the indices would count the pads an explicit pad adds
      const runtime::DataType t = c.input_type(0).dtype;  // narrow floats come widened
      const double lowest = t.is_float() ? -std::numeric_limits<double>::infinity() : t.min_value();
      Expr x;
      Attrs a = window_attrs(c, &x, lowest);
      return std::vector<Expr>{c.call("max_pool", {x}, a)};
    }
    Attrs a = window_attrs(c);
    a.set("storage_order", order);
    Expr both = c.call("max_pool_with_indices", {c.input(0)}, a);
    return std::vector<Expr>{relay_ir::tuple_get(both, 0), relay_ir::tuple_get(both, 1)};
  });
  t.add("AveragePool", nn::one([](ConvertContext& c) {
          c.check_attrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"});
          Expr x;
          Attrs a = window_attrs(c, &x, 0.0);
          const int64_t include_pad = c.attr_int("count_include_pad", 0);
          a.set("count_include_pad", include_pad);
          Expr mean = c.call("avg_pool", {x}, a);
          if (include_pad || x.same_as(c.input(0))) return mean;
          return c.call("div", {mean, share_on_data(c, x, a)});
        }));
  t.add("LpPool", nn::one([](ConvertContext& c) {
          c.check_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"});
          Expr x;
          Attrs a = window_attrs(c, &x, 0.0);  // zeros add nothing to a p-norm
          a.set("p", lp_p(c));
          return c.call("lp_pool", {x}, a);
        }));
  t.add("GlobalAveragePool", nn::one([](ConvertContext& c) {
          c.check_attrs({});
          return c.call("global_avg_pool", {c.input(0)});
        }));
  t.add("GlobalMaxPool", nn::one([](ConvertContext& c) {
          c.check_attrs({});
          return c.call("global_max_pool", {c.input(0)});
        }));
  t.add("GlobalLpPool", nn::one([](ConvertContext& c) {
          c.check_attrs({"p"});
          return c.call("global_lp_pool", {c.input(0)}, {{"p", lp_p(c)}});
        }));
  t.add("MaxUnpool", nn::one([](ConvertContext& c) {
          c.check_attrs({"kernel_shape", "pads", "strides"});
          size_t rank = pool_rank(c);
          std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {});
          if (kernel.size() != rank) c.error("kernel_shape must have " + std::to_string(rank) + " entries");
          std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
          if (pads.size() != 2 * rank)
            c.error("pads must have " + std::to_string(2 * rank) + " entries (begins, then ends)");
          Attrs a{{"kernel", kernel}, {"strides", nn::spatial_attr(c, "strides", rank, 1)}, {"pads", pads}};
          if (c.has_input(2)) a.set("output_shape", relay_ir::Shape(c.dim_ints(2, "output_shape")));
          return c.call("max_unpool", {c.input(0), c.input(1)}, a);
        }),
        {2});
}

}  // namespace tessera::frontend::onnx

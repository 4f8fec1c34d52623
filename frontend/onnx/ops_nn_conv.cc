// Converters of ONNX Conv, ConvTranspose, ConvInteger and QLinearConv (opsets 1-17): auto_pad
// and output_shape are resolved here into explicit pads and output padding. Col2Im (18) is a
// transposed convolution.
#include <cstring>
#include <optional>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"
#include "runtime/element.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

struct Window {
  std::vector<int64_t> strides, dilations, pads, output_padding;
  int64_t groups = 1;
};

// The weight's kernel (input `weight`), checking kernel_shape against it.
std::vector<int64_t> kernel_sizes(const ConvertContext& c, size_t weight = 1) {
  const auto& x = c.input_type(0);
  const auto& w = c.input_type(weight);
  if (x.ndim() < 3) c.error("input X must be [N, C, spatial...], got shape " + x.shape.str());
  if (w.ndim() != x.ndim()) c.error("weight W " + w.shape.str() + " must have the rank of X " + x.shape.str());
  std::vector<int64_t> kernel = w.shape.ints_from(2);
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape", {}) != kernel)
    c.error("kernel_shape " + runtime::shape_str(c.attr_ints("kernel_shape", {})) +
            " differs from the weight's kernel " + runtime::shape_str(kernel));
  return kernel;
}

// The window's attributes; with `input`, that of the input, padded already where SAME pads with a
// stride depend on a symbolic size (nn::window_input), else the pads must be constants.
Window conv_window(const ConvertContext& c, size_t weight = 1, Expr* input = nullptr, double fill = 0) {
  std::vector<int64_t> kernel = kernel_sizes(c, weight);
  size_t rank = kernel.size();
  Window w;
  w.strides = nn::spatial_attr(c, "strides", rank, 1);
  w.dilations = nn::spatial_attr(c, "dilations", rank, 1);
  w.groups = c.attr_int("group", 1);
  std::vector<int64_t> extent(rank);
  for (size_t d = 0; d < rank; ++d) extent[d] = (kernel[d] - 1) * w.dilations[d] + 1;
  if (!input) {
    w.pads = nn::window_pads(c, c.input_type(0).shape, extent, w.strides);
    return w;
  }
  nn::WindowInput in = nn::window_input(c, extent, w.strides, fill);
  *input = in.x;
  w.pads = in.pads;
  return w;
}

// conv_window of an integer convolution: its input padded by its zero point (input
// `zero_point`), which then adds nothing; with a zero point given at run time the pads must be
// constants.
Window integer_conv_window(const ConvertContext& c, size_t weight, size_t zero_point, Expr* input) {
  *input = c.input(0);
  if (!c.has_input(zero_point)) return conv_window(c, weight, input);
  std::optional<runtime::NDArray> zp = c.try_constant_input(zero_point);
  if (!zp) return conv_window(c, weight);
  if (zp->numel() != 1) c.error("x_zero_point must hold one value, got " + std::to_string(zp->numel()));
  return conv_window(c, weight, input, runtime::element_as_double(*zp, 0));
}

Attrs conv_attrs(const Window& w) {
  Attrs a{{"strides", w.strides}, {"dilations", w.dilations}, {"pads", w.pads}, {"groups", w.groups}};
  if (!w.output_padding.empty()) a.set("output_padding", w.output_padding);
  return a;
}

// Output size = stride * (in - 1) + output_padding + dilated kernel - pads. With output_shape
// (or SAME auto_pad, whose output is in * stride) the pads follow from the size: the odd one at
// the end for SAME_UPPER, at the beginning otherwise (the spec's rule); a size beyond what the
// input reaches is zeros at the end, i.e. more output padding.
Window conv_transpose_window(const ConvertContext& c) {
  std::vector<int64_t> kernel = kernel_sizes(c);
  const size_t rank = kernel.size();
  Window w;
  w.strides = nn::spatial_attr(c, "strides", rank, 1);
  w.dilations = nn::spatial_attr(c, "dilations", rank, 1);
  w.groups = c.attr_int("group", 1);
  w.output_padding = c.attr_ints("output_padding", std::vector<int64_t>(rank, 0));
  if (w.output_padding.size() != rank) c.error("output_padding must have one entry per spatial dimension");
  for (size_t d = 0; d < rank; ++d)
    if (w.output_padding[d] < 0 || w.output_padding[d] >= std::max(w.strides[d], w.dilations[d]))
      c.error("output_padding " + std::to_string(w.output_padding[d]) + " must be in [0, max(stride, dilation))");
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    c.error("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!c.has_attr("output_shape") && !same) {
    w.pads = auto_pad == "VALID" ? std::vector<int64_t>(2 * rank, 0)
                                 : c.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
    if (w.pads.size() != 2 * rank)
      c.error("pads must have " + std::to_string(2 * rank) + " entries (begins, then ends)");
    return w;
  }
  std::vector<int64_t> out, in;
  if (c.has_attr("output_shape")) {
    in = c.input_type(0).shape.ints_from(2);  // the batch may be symbolic
    out = c.attr_ints("output_shape", {});
    if (out.size() == rank + 2) out.erase(out.begin(), out.begin() + 2);  // some exporters give N and C too
    if (out.size() != rank) c.error("output_shape must have one entry per spatial dimension");
  }
  w.pads.assign(2 * rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    // full - out, where full = stride * (in - 1) + output_padding + dilated kernel; SAME's output,
    // in * stride, leaves output_padding + dilated kernel - stride whatever the size.
    const int64_t rest = w.output_padding[d] + (kernel[d] - 1) * w.dilations[d] + 1;
    int64_t total = out.empty() ? rest - w.strides[d] : w.strides[d] * (in[d] - 1) + rest - out[d];
    if (total < 0) {
      w.output_padding[d] -= total;
      continue;
    }
    int64_t small = total / 2, big = total - small;
    w.pads[d] = auto_pad == "SAME_UPPER" ? small : big;
    w.pads[d + rank] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return w;
}

// Col2Im (18): the columns of blocks [N, C * prod(block), L] summed back into an image
// [N, C, image...], which is a transposed convolution of the columns (arranged on their grid of
// block positions) with the weights that put each column entry back at its place in the block.
Expr col2im(ConvertContext& c) {
  c.check_attrs({"dilations", "pads", "strides"});
  const auto& x = c.input_type(0);
  const std::vector<int64_t> image = c.constant_ints(1, "image_shape"), block = c.constant_ints(2, "block_shape");
  const size_t rank = image.size();
  if (block.size() != rank || rank == 0)
    c.error("image_shape and block_shape must have one entry per spatial dimension, got " +
            runtime::shape_str(image) + " and " + runtime::shape_str(block));
  int64_t block_size = 1;
  for (int64_t b : block) block_size *= b;
  if (x.ndim() != 3 || x.shape[1] % block_size != 0)
    c.error("the input must be [N, C * " + std::to_string(block_size) + ", L], got " + runtime::shape_str(x.shape));
  const int64_t channels = x.shape[1] / block_size;
  Window w;
  w.strides = nn::spatial_attr(c, "strides", rank, 1);
  w.dilations = nn::spatial_attr(c, "dilations", rank, 1);
  w.pads = c.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  if (w.pads.size() != 2 * rank) c.error("pads must have " + std::to_string(2 * rank) + " entries");
  std::vector<int64_t> grid{x.shape[0], x.shape[1]};
  int64_t blocks = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = (block[d] - 1) * w.dilations[d] + 1, padded = image[d] + w.pads[d] + w.pads[d + rank];
    if (padded < extent) c.error("the block does not fit in the padded image along dimension " + std::to_string(d));
    grid.push_back((padded - extent) / w.strides[d] + 1);
    blocks *= grid.back();
    // What a transposed convolution leaves out at the end, where the last block stops short.
    w.output_padding.push_back(padded - ((grid.back() - 1) * w.strides[d] + extent));
  }
  if (blocks != x.shape[2])
    c.error("the image and block shapes give " + std::to_string(blocks) + " blocks, the input has " +
            std::to_string(x.shape[2]));
  std::vector<int64_t> weight_shape{x.shape[1], channels};
  weight_shape.insert(weight_shape.end(), block.begin(), block.end());
  runtime::NDArray weights = runtime::NDArray::empty(weight_shape, x.dtype);
  std::memset(weights.data(), 0, weights.nbytes());
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t k = 0; k < block_size; ++k)  // column entry ch * block_size + k is block offset k of channel ch
      runtime::store_element(weights, ((ch * block_size + k) * channels + ch) * block_size + k, 1.0);
  Expr columns = c.call("reshape", {c.input(0)}, {{"shape", grid}});
  return c.call("conv_transpose", {columns, relay_ir::constant(weights)}, conv_attrs(w));
}

// CausalConvWithState (opset 27): a depthwise 1-D convolution over the past state (zeros without
// one) followed by the input, each output reading its position and the k - 1 before; the new
// state is the last k - 1 positions of that sequence.
std::vector<Expr> causal_conv_with_state(ConvertContext& c) {
  c.check_attrs({"activation"});
  const std::string activation = c.attr_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    c.error("activation must be \"none\", \"silu\" or \"swish\", got \"" + activation + "\"");
  const auto& x = c.input_type(0);
  const auto& w = c.input_type(1);
  if (x.ndim() != 3 || w.ndim() != 3 || w.shape[0] != x.shape[1] || w.shape[1] != 1)
    c.error("input " + runtime::shape_str(x.shape) + " must be (batch, channels, length) and weight " +
            runtime::shape_str(w.shape) + " (channels, 1, k)");
  const int64_t batch = x.shape[0], channels = x.shape[1], length = x.shape[2], k = w.shape[2];
  Expr past = c.has_input(3) ? c.input(3) : relay_ir::constant(filled({batch, channels, k - 1}, x.dtype, 0));
  Expr sequence = c.call("concat", {past, c.input(0)}, {{"axis", int64_t{2}}});
  std::vector<Expr> args{sequence, c.input(1)};
  if (c.has_input(2)) args.push_back(c.input(2));
  Attrs conv{{"strides", std::vector<int64_t>{1}},
             {"dilations", std::vector<int64_t>{1}},
             {"pads", std::vector<int64_t>{0, 0}},
             {"groups", channels}};
  Expr y = c.call("conv", args, conv);
  if (activation != "none") y = c.call("mul", {y, c.call("sigmoid", {y})});
  using Ints = std::vector<int64_t>;
  Expr present =
      c.call("slice", {sequence}, {{"starts", Ints{length}}, {"ends", Ints{length + k - 1}}, {"axes", Ints{2}}});
  return {y, present};
}

}  // namespace

void register_nn_conv_converters(ConverterTable& t) {
  t.add("CausalConvWithState", causal_conv_with_state);
  t.add("Col2Im", nn::one(col2im), {1, 2});
  t.add("Conv", nn::one([](ConvertContext& c) {
          c.check_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
          Expr x;
          const Window w = conv_window(c, 1, &x);
          std::vector<Expr> args{x, c.input(1)};
          if (c.has_input(2)) args.push_back(c.input(2));
          return c.call("conv", args, conv_attrs(w));
        }));
  t.add("ConvTranspose", nn::one([](ConvertContext& c) {
          c.check_attrs(
              {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
          std::vector<Expr> args{c.input(0), c.input(1)};
          if (c.has_input(2)) args.push_back(c.input(2));
          return c.call("conv_transpose", args, conv_attrs(conv_transpose_window(c)));
        }));
  t.add("ConvInteger", nn::one([](ConvertContext& c) {
          c.check_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
          Expr x;
          Attrs a = conv_attrs(integer_conv_window(c, 1, 2, &x));
          return c.call("conv_integer",
                        {x, c.input(1), nn::input_or_zero(c, 2, c.input_type(0).dtype),
                         nn::input_or_zero(c, 3, c.input_type(1).dtype)},
                        a);
        }));
  // Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
  t.add("QLinearConv", nn::one([](ConvertContext& c) {
          c.check_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
          Expr x;
          Attrs a = conv_attrs(integer_conv_window(c, 3, 2, &x));
          std::vector<Expr> args{x};
          for (size_t i = 1; i < 8; ++i) args.push_back(c.input(i));
          if (c.has_input(8)) args.push_back(c.input(8));
          return c.call("qlinear_conv", args, a);
        }));
}

}  // namespace tessera::frontend::onnx

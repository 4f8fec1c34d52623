// Converters of ONNX matrix, convolution, pooling, normalization, softmax and loss operators;
// each group registers from its own file (ops_nn_*.cc). The helpers here resolve the sliding
// window attributes (auto_pad, pads, strides) that Conv, ConvTranspose and the pools share.
#include "frontend/onnx/ops_nn.h"

#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"

namespace tessera::frontend::onnx {

namespace nn {

relay_ir::Expr input_or_zero(const ConvertContext& c, size_t i, runtime::DataType dtype) {
  return c.has_input(i) ? c.input(i) : relay_ir::scalar(0, dtype);
}

std::vector<int64_t> spatial_attr(const ConvertContext& c, const char* name, size_t rank, int64_t fill) {
  std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(rank, fill));
  if (v.size() != rank)
    c.error(std::string(name) + " has " + std::to_string(v.size()) + " entries for " + std::to_string(rank) +
            " spatial dimensions");
  for (int64_t x : v)
    if (x < 1) c.error(std::string(name) + " must be positive, got " + std::to_string(x));
  return v;
}

namespace {

// [begins..., ends...] of a window over x as expressions: SAME pads with a stride depend on the
// spatial size (the output is ceil(in / stride); the odd pad goes at the end (UPPER) or the
// beginning (LOWER)), constants everywhere else.
std::vector<tensor_ir::Expr> pad_exprs(const ConvertContext& c, const relay_ir::Shape& x,
                                       const std::vector<int64_t>& window, const std::vector<int64_t>& strides) {
  using tensor_ir::Expr;
  size_t rank = window.size();
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
    if (pads.size() != 2 * rank)
      c.error("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * rank) +
              " (begins, then ends)");
    for (int64_t p : pads)
      if (p < 0) c.error("pads must not be negative, got " + std::to_string(p));
    return std::vector<Expr>(pads.begin(), pads.end());
  }
  if (c.has_attr("pads")) c.error("pads cannot be given with auto_pad " + auto_pad);
  std::vector<Expr> pads(2 * rank, Expr(0));
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.error("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  for (size_t d = 0; d < rank; ++d) {
    Expr total(window[d] - 1);  // at stride 1, whatever the size
    if (strides[d] > 1) {       // (ceil(in / stride) - 1) * stride + window - in, at least 0
      const Expr in = x.dim(2 + d);
      total = tensor_ir::max(Expr(window[d] - 1) - tensor_ir::floormod(in - Expr(1), Expr(strides[d])), Expr(0));
    }
    const Expr small = tensor_ir::arith::simplify(tensor_ir::floordiv(total, Expr(2)));
    const Expr big = tensor_ir::arith::simplify(tensor_ir::floordiv(total + Expr(1), Expr(2)));
    pads[d] = auto_pad == "SAME_UPPER" ? small : big;
    pads[d + rank] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

}  // namespace

std::vector<int64_t> window_pads(const ConvertContext& c, const relay_ir::Shape& x, const std::vector<int64_t>& window,
                                 const std::vector<int64_t>& strides) {
  std::vector<int64_t> pads;
  for (const tensor_ir::Expr& p : pad_exprs(c, x, window, strides)) {
    const int64_t* v = tensor_ir::as_const_int(p);
    if (!v)
      c.error("auto_pad " + c.attr_string("auto_pad", "NOTSET") + " with strides " + runtime::shape_str(strides) +
              " pads by amounts that depend on the input size " + x.str() + ", which this operator needs constant");
    pads.push_back(*v);
  }
  return pads;
}

WindowInput window_input(const ConvertContext& c, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides, double fill) {
  const relay_ir::Shape& x = c.input_type(0).shape;
  const std::vector<tensor_ir::Expr> pads = pad_exprs(c, x, window, strides);
  if (std::all_of(pads.begin(), pads.end(), [](const auto& p) { return tensor_ir::as_const_int(p); })) {
    std::vector<int64_t> constant;
    for (const tensor_ir::Expr& p : pads) constant.push_back(*tensor_ir::as_const_int(p));
    return {c.input(0), constant};
  }
  const size_t rank = window.size();
  std::vector<tensor_ir::Expr> full(2 * (rank + 2), tensor_ir::Expr(0));  // batch and channels unpadded
  for (size_t d = 0; d < rank; ++d) {
    full[2 + d] = pads[d];
    full[rank + 4 + d] = pads[rank + d];
  }
  relay_ir::Expr padded = c.call("pad", {c.input(0)},
                                 {{"pads", relay_ir::Shape(full)}, {"mode", std::string("constant")}, {"value", fill}});
  return {padded, std::vector<int64_t>(2 * rank, 0)};
}

}  // namespace nn

void register_nn_converters(ConverterTable& t) {
  register_nn_matmul_converters(t);
  register_nn_conv_converters(t);
  register_nn_pool_converters(t);
  register_nn_norm_converters(t);
  register_nn_softmax_converters(t);
  register_nn_attention_converters(t);
  register_nn_linear_attention_converters(t);
}

}  // namespace tessera::frontend::onnx

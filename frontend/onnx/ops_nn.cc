// Converters of ONNX matrix, convolution, pooling, normalization, softmax and loss operators;
// each group registers from its own file (ops_nn_*.cc). The helpers here resolve the sliding
// window attributes (auto_pad, pads, strides) that Conv, ConvTranspose and the pools share.
#include "frontend/onnx/ops_nn.h"

#include "runtime/error.h"

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

std::vector<int64_t> window_pads(const ConvertContext& c, const relay_ir::Shape& x, const std::vector<int64_t>& window,
                                 const std::vector<int64_t>& strides) {
  size_t rank = window.size();
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
    if (pads.size() != 2 * rank)
      c.error("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * rank) +
              " (begins, then ends)");
    for (int64_t p : pads)
      if (p < 0) c.error("pads must not be negative, got " + std::to_string(p));
    return pads;
  }
  if (c.has_attr("pads")) c.error("pads cannot be given with auto_pad " + auto_pad);
  std::vector<int64_t> pads(2 * rank, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.error("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  // SAME: output = ceil(in / stride); the odd pad goes at the end (UPPER) or the beginning (LOWER).
  for (size_t d = 0; d < rank; ++d) {
    int64_t total = window[d] - 1;  // at stride 1, whatever the size
    if (strides[d] > 1) {
      int64_t in = x[2 + d], out = (in + strides[d] - 1) / strides[d];
      total = std::max<int64_t>(0, (out - 1) * strides[d] + window[d] - in);
    }
    int64_t small = total / 2, big = total - small;
    pads[d] = auto_pad == "SAME_UPPER" ? small : big;
    pads[d + rank] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
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

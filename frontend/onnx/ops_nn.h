// The parts of the nn family's ONNX converters (frontend/onnx/ops_nn*.cc), which
// register_nn_converters (ops_nn.cc) calls in turn, and helpers they share.
#pragma once
#include <string>
#include <vector>

#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_nn_matmul_converters(ConverterTable& t);   // ops_nn_matmul.cc: MatMul, Gemm, Einsum, integer forms
void register_nn_conv_converters(ConverterTable& t);     // ops_nn_conv.cc: Conv, ConvTranspose, integer forms
void register_nn_pool_converters(ConverterTable& t);     // ops_nn_pool.cc: pooling
void register_nn_norm_converters(ConverterTable& t);     // ops_nn_norm.cc: normalizations
void register_nn_softmax_converters(ConverterTable& t);  // ops_nn_softmax.cc: softmax family and losses
void register_nn_attention_converters(ConverterTable& t);  // ops_nn_attention.cc: Attention, RotaryEmbedding
void register_nn_linear_attention_converters(ConverterTable& t);  // ops_nn_linear_attention.cc

namespace nn {

// A converter with one output.
template <typename F>
Converter one(F f) {
  return [f](ConvertContext& c) { return std::vector<relay_ir::Expr>{f(c)}; };
}

// Input `i` when given, else a 0-D zero of `dtype` (an omitted zero point).
relay_ir::Expr input_or_zero(const ConvertContext& c, size_t i, runtime::DataType dtype);

// Explicit begin/end pads ([begins..., ends...]) for a sliding window over `x` ([N, C,
// spatial...]) given the node's auto_pad / pads attributes; `window` is the dilated kernel
// extent. Only SAME pads with a stride depend on a spatial size, which must then be a constant.
std::vector<int64_t> window_pads(const ConvertContext& c, const relay_ir::Shape& x, const std::vector<int64_t>& window,
                                 const std::vector<int64_t>& strides);

// The input of a window (the node's input 0) and the pads the window adds to it. Where SAME pads
// with a stride depend on a symbolic spatial size, the input comes padded by them already (a pad
// op of expressions of the size, with `fill`: the value no window can choose over the data), and
// the window pads nothing.
struct WindowInput {
  relay_ir::Expr x;
  std::vector<int64_t> pads;
};
WindowInput window_input(const ConvertContext& c, const std::vector<int64_t>& window,
                         const std::vector<int64_t>& strides, double fill);

// An ints attribute of one entry per spatial dimension (default `fill`), checked for length
// and positivity.
std::vector<int64_t> spatial_attr(const ConvertContext& c, const char* name, size_t rank, int64_t fill);

}  // namespace nn
}  // namespace tessera::frontend::onnx

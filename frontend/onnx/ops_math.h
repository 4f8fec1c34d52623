// The parts of the math family's ONNX converters (frontend/onnx/ops_math*.cc), which
// register_math_converters (ops_math.cc) calls in turn, and helpers they share.
#pragma once
#include <optional>
#include <vector>

#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_math_unary_converters(ConverterTable& t);     // ops_math_unary.cc: unary math, activations, casts
void register_math_binary_converters(ConverterTable& t);    // ops_math_binary.cc: broadcasting and variadic ops
void register_math_reduce_converters(ConverterTable& t);    // ops_math_reduce.cc
void register_math_quantize_converters(ConverterTable& t);  // ops_math_quantize.cc

// The value every element of a constant holds, if they all hold one that a double represents
// exactly (float16 and 64-bit integers beyond 2^53 do not qualify); none for an empty array.
std::optional<double> uniform_value(const runtime::NDArray& a);

// A 0-D constant of any numeric dtype (float16 included), or one of `shape` filled with it.
relay_ir::Expr scalar_constant(double value, runtime::DataType dtype);
// `x` (of dtype `from`) in the dtype named `dtype`, or `x` itself when it has that dtype already.
relay_ir::Expr cast_to(ConvertContext& c, const relay_ir::Expr& x, runtime::DataType from, const std::string& dtype);
runtime::NDArray filled(const std::vector<int64_t>& shape, runtime::DataType dtype, double value);

// A converter with one output.
template <typename F>
Converter one(F f) {
  return [f](ConvertContext& c) { return std::vector<relay_ir::Expr>{f(c)}; };
}

}  // namespace tessera::frontend::onnx

// Converters of ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

namespace {

// The zero point input, or zeros of `dtype` shaped like the scale when it is omitted.
Expr zero_point(ConvertContext& c, runtime::DataType dtype) {
  if (c.has_input(2)) return c.input(2);
  return relay_ir::constant(filled(c.input_type(1).shape, dtype, 0));
}

// axis and block_size (opset 21), as the quantizers' attributes.
relay_ir::Attrs quantizer_attrs(ConvertContext& c) {
  if (c.attr_int("saturate", 1) != 1) c.error("saturate=0 is not supported");
  return {{"axis", c.attr_int("axis", 1)}, {"block_size", c.attr_int("block_size", 0)}};
}

// The quantized type: the zero point's, else output_dtype's (opset 21), else uint8.
runtime::DataType quantized_type(ConvertContext& c) {
  if (c.has_attr("output_dtype") && c.attr_int("output_dtype") != 0) {
    runtime::DataType t = dtype_from_onnx(static_cast<int>(c.attr_int("output_dtype")), c.where() + " output_dtype");
    if (c.has_input(2) && c.input_type(2).dtype != t)
      c.error("output_dtype " + t.str() + " differs from the zero point's type " + c.input_type(2).dtype.str());
    return t;
  }
  return c.has_input(2) ? c.input_type(2).dtype : runtime::DataType::UInt(8);
}

Expr quantize(ConvertContext& c) {
  c.check_attrs({"axis", "block_size", "saturate", "output_dtype"});
  return c.call("quantize_linear", {c.input(0), c.input(1), zero_point(c, quantized_type(c))}, quantizer_attrs(c));
}

Expr dequantize(ConvertContext& c) {
  c.check_attrs({"axis", "block_size"});
  return c.call("dequantize_linear", {c.input(0), c.input(1), zero_point(c, c.input_type(0).dtype)},
                quantizer_attrs(c));
}

// uint8 quantization with the scale and zero point that map [min(x, 0), max(x, 0)] onto [0, 255].
std::vector<Expr> dynamic_quantize(ConvertContext& c) {
  c.check_attrs({});
  if (c.input_type(0).dtype != runtime::kFloat32)
    c.error("the input must be float32, got " + c.input_type(0).dtype.str());
  auto f32 = [](double v) { return scalar_constant(v, runtime::kFloat32); };
  relay_ir::Attrs all{{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}};
  Expr lo = c.call("minimum", {c.call("reduce_min", {c.input(0)}, all), f32(0)});
  Expr hi = c.call("maximum", {c.call("reduce_max", {c.input(0)}, all), f32(0)});
  Expr scale = c.call("div", {c.call("sub", {hi, lo}), f32(255)});
  Expr zp = c.call("round", {c.call("div", {c.call("neg", {lo}), scale})});
  zp = c.call("cast", {c.call("clip", {zp}, {{"a_min", 0.0}, {"a_max", 255.0}})}, {{"dtype", std::string("uint8")}});
  return {c.call("quantize_linear", {c.input(0), scale, zp}, {{"axis", int64_t{1}}}), scale, zp};
}

}  // namespace

void register_math_quantize_converters(ConverterTable& t) {
  t.add("QuantizeLinear", one(quantize));
  t.add("DequantizeLinear", one(dequantize));
  t.add("DynamicQuantizeLinear", dynamic_quantize);
}

}  // namespace tessera::frontend::onnx

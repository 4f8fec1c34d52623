// Converters of ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
#include "frontend/onnx/ops_math.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

namespace {

// The zero point input, or zeros of `dtype` shaped like the scale when it is omitted.
Expr zero_point(ConvertContext& c, runtime::DataType dtype) {
  if (c.has_input(2)) return c.input(2);
  return relay_ir::constant(filled(c.input_type(1).shape, dtype, 0));
}

int64_t axis(ConvertContext& c) {
  c.check_attrs({"axis", "saturate"});
  if (c.attr_int("saturate", 1) != 1) c.error("saturate=0 is not supported");
  return c.attr_int("axis", 1);
}

Expr quantize(ConvertContext& c) {
  int64_t a = axis(c);
  return c.call("quantize_linear", {c.input(0), c.input(1), zero_point(c, runtime::DataType::UInt(8))}, {{"axis", a}});
}

Expr dequantize(ConvertContext& c) {
  int64_t a = axis(c);
  return c.call("dequantize_linear", {c.input(0), c.input(1), zero_point(c, c.input_type(0).dtype)}, {{"axis", a}});
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

// Converters of unary math, activation, cast and pass-through ONNX operators.
#include <cmath>
#include <limits>
#include <optional>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/tensor_proto.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

// ONNX op -> graph op, no attributes.
void simple(ConverterTable& t, const std::string& onnx_op, const std::string& op) {
  t.add(onnx_op, one([op](ConvertContext& c) {
          c.check_attrs({});
          return c.call(op, {c.input(0)});
        }));
}

// ONNX op -> graph op with float attributes of the same names and ONNX's defaults.
void with_floats(ConverterTable& t, const std::string& onnx_op, const std::string& op,
                 std::vector<std::pair<const char*, float>> attrs) {
  t.add(onnx_op, one([op, attrs](ConvertContext& c) {
          Attrs a;
          for (const auto& [name, fallback] : attrs) a.set(name, static_cast<double>(c.attr_float(name, fallback)));
          for (const auto& attr : c.node().attribute()) {
            bool known = false;
            for (const auto& [name, fallback] : attrs) known |= attr.name() == name;
            if (!known) c.error("unsupported attribute(s): " + attr.name());
          }
          return c.call(op, {c.input(0)}, a);
        }));
}

Expr clip(ConvertContext& c) {
  if (c.opset() < 11) {
    c.check_attrs({"min", "max"});
    return c.call("clip", {c.input(0)},
                  {{"a_min", static_cast<double>(c.attr_float("min", -INFINITY))},
                   {"a_max", static_cast<double>(c.attr_float("max", INFINITY))}});
  }
  c.check_attrs({});
  const auto& x = c.input_type(0);
  // Bounds known at compile time become attributes (one kernel, both together when possible);
  // computed ones maximum / minimum. The lower bound applies first, as min(max(x, lo), hi).
  std::optional<double> bound[3];
  for (size_t i : {1, 2}) {
    if (!c.has_input(i)) continue;
    const auto& b = c.input_type(i);
    std::string which = i == 1 ? "min" : "max";
    if (b.dtype != x.dtype) c.error(which + " is " + b.dtype.str() + ", the input " + x.dtype.str());
    if (b.numel() != 1) c.error(which + " must be a scalar, got shape " + runtime::shape_str(b.shape));
    if (auto v = c.try_constant_input(i)) bound[i] = uniform_value(*v);
  }
  const double inf = std::numeric_limits<double>::infinity();
  Expr out = c.input(0);
  if (bound[1] && bound[2]) return c.call("clip", {out}, {{"a_min", *bound[1]}, {"a_max", *bound[2]}});
  if (bound[1]) out = c.call("clip", {out}, {{"a_min", *bound[1]}, {"a_max", inf}});
  else if (c.has_input(1)) out = c.call("maximum", {out, c.input(1)});
  if (bound[2]) out = c.call("clip", {out}, {{"a_min", -inf}, {"a_max", *bound[2]}});
  else if (c.has_input(2)) out = c.call("minimum", {out, c.input(2)});
  return out;
}

std::vector<Expr> dropout(ConvertContext& c) {
  c.check_attrs({"ratio", "seed", "is_test"});
  if (c.opset() >= 12 && c.has_input(2)) {
    runtime::NDArray mode = c.constant_input(2, "training_mode");
    if (mode.numel() != 1 || !mode.dtype().is_bool()) c.error("training_mode must be a bool scalar");
    // Training with ratio 0 drops nothing, which is deterministic like inference.
    if (*mode.data_as<uint8_t>()) {
      std::optional<double> ratio = c.has_input(1) ? uniform_value(c.constant_input(1, "ratio")) : std::nullopt;
      if (!ratio || *ratio != 0)
        c.error("training mode with a nonzero ratio (random dropout) is not supported; Tessera compiles inference");
    }
  }
  // Inference: the input passes through and the mask (if asked for) keeps everything.
  std::vector<Expr> out{c.input(0)};
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) {
    const auto& x = c.input_type(0);
    out.push_back(relay_ir::constant(filled(x.shape, c.opset() >= 10 ? runtime::kBool : x.dtype, 1)));
  }
  return out;
}

// x sigmoid(alpha x), ONNX Swish.
Expr swish(ConvertContext& c, const Expr& x, float alpha) {
  const runtime::DataType dtype = c.input_type(0).dtype;
  return c.call("mul", {x, c.call("sigmoid", {c.call("mul", {x, scalar_constant(alpha, dtype)})})});
}

bool is_float8(runtime::DataType t) {
  using runtime::TypeCode;
  return t.code == TypeCode::Float8E4M3FN || t.code == TypeCode::Float8E4M3FNUZ || t.code == TypeCode::Float8E5M2 ||
         t.code == TypeCode::Float8E5M2FNUZ;
}

// Cast to float8e8m0 as ONNX defines it (numpy_helper.to_float8e8m0), which is not the type's
// own rounding: the biased exponent of |x| as a float32, rounded up by `mode` ("up": any
// fraction; "nearest": half or more, exactly half only above float32's subnormals; "down"); an
// infinity or NaN becomes the NaN 0xFF, and with `saturate` rounding stops at the largest, 0xFE.
Expr cast_to_e8m0(ConvertContext& c, Expr x, runtime::DataType from, bool saturate, const std::string& mode) {
  auto u32 = [](double v) { return scalar_constant(v, runtime::DataType::UInt(32)); };
  auto masked = [&](const Expr& bits, double mask) { return c.call("bitwise_and", {bits, u32(mask)}); };
  auto nonzero = [&](const Expr& v) { return c.call("greater", {v, u32(0)}); };
  const Expr bits = c.call("bitcast", {cast_to(c, x, from, "float32")}, {{"dtype", std::string("uint32")}});
  const Expr exponent = masked(c.call("right_shift", {bits, u32(23)}), 0xFF);
  Expr up;
  if (mode == "up") {
    up = nonzero(masked(bits, 0x7FFFFF));
  } else if (mode == "nearest") {
    const Expr above_half = c.call("logical_or", {nonzero(masked(bits, 0x3FFFFF)), nonzero(exponent)});
    up = c.call("logical_and", {nonzero(masked(bits, 0x400000)), above_half});
  } else if (mode != "down") {
    c.error("round_mode must be \"up\", \"down\" or \"nearest\", got \"" + mode + "\"");
  }
  Expr code = exponent;
  if (up.defined()) {
    if (saturate) up = c.call("logical_and", {up, c.call("logical_not", {c.call("equal", {exponent, u32(0xFE)})})});
    code = c.call("add", {exponent, c.call("cast", {up}, {{"dtype", std::string("uint32")}})});
  }
  code = c.call("where", {c.call("equal", {exponent, u32(0xFF)}), u32(0xFF), code});
  return c.call("bitcast", {c.call("cast", {code}, {{"dtype", std::string("uint8")}})},
                {{"dtype", std::string("float8_e8m0fnu")}});
}

// Cast and CastLike to `to`: saturate (opset 19) clips to a float8 type's range (NaN stays NaN);
// round_mode (opset 25) rounds to float8e8m0.
Expr cast_with_options(ConvertContext& c, runtime::DataType to) {
  const bool saturate = c.attr_int("saturate", 1) != 0;
  const std::string mode = c.attr_string("round_mode", "up");
  const runtime::DataType from = c.input_type(0).dtype;
  if (to.code == runtime::TypeCode::Float8E8M0FNU) return cast_to_e8m0(c, c.input(0), from, saturate, mode);
  if (c.has_attr("round_mode")) c.error("round_mode applies to float8e8m0 only, the target is " + to.str());
  Expr x = c.input(0);
  if (saturate && is_float8(to) && (from.is_float() || from.is_narrow_float())) {
    x = cast_to(c, x, from, "float32");
    const Expr clipped = c.call("clip", {x}, {{"a_min", to.min_value()}, {"a_max", to.max_value()}});
    x = c.call("where", {c.call("isnan", {x}), x, clipped});
  }
  return c.call("cast", {x}, {{"dtype", to.str()}});
}

Expr cast(ConvertContext& c) {
  c.check_attrs({"to", "saturate", "round_mode"});
  return cast_with_options(c, dtype_from_onnx(static_cast<int>(c.attr_int("to")), c.where() + " attribute 'to'"));
}

Expr prelu(ConvertContext& c) {
  c.check_attrs({});
  const auto& x = c.input_type(0);
  const auto& s = c.input_type(1);
  int64_t channel_axis = -1;
  // A 1-D slope with one value per channel (axis 1) that numpy broadcasting would align with
  // the last axis instead: the per-channel form older exporters write.
  if (s.ndim() == 1 && x.ndim() > 2 && s.shape[0] == x.shape[1] && s.shape[0] != x.shape.back() && s.shape[0] != 1)
    channel_axis = 1;
  return c.call("prelu", {c.input(0), c.input(1)}, {{"channel_axis", channel_axis}});
}

// Gelu (opset 20): x Phi(x) exactly, 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh",
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Expr gelu(ConvertContext& c) {
  c.check_attrs({"approximate"});
  const std::string approximate = c.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    c.error("approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  const runtime::DataType dtype = c.input_type(0).dtype;
  if (!dtype.is_float()) c.error("the input must be a float tensor, got " + dtype.str());
  auto k = [&](double v) { return scalar_constant(v, dtype); };
  Expr x = c.input(0), inner;
  if (approximate == "none") {
    inner = c.call("erf", {c.call("mul", {x, k(M_SQRT1_2)})});
  } else {
    Expr cubic = c.call("mul", {k(0.044715), c.call("mul", {x, c.call("mul", {x, x})})});
    inner = c.call("tanh", {c.call("mul", {k(std::sqrt(2 / M_PI)), c.call("add", {x, cubic})})});
  }
  return c.call("mul", {c.call("mul", {k(0.5), x}), c.call("add", {k(1), inner})});
}

}  // namespace

void register_math_unary_converters(ConverterTable& t) {
  for (const auto& [onnx_op, op] : std::vector<std::pair<const char*, const char*>>{{"Abs", "abs"},
                                                                                    {"Neg", "neg"},
                                                                                    {"Reciprocal", "reciprocal"},
                                                                                    {"Sqrt", "sqrt"},
                                                                                    {"Exp", "exp"},
                                                                                    {"Log", "log"},
                                                                                    {"Floor", "floor"},
                                                                                    {"Ceil", "ceil"},
                                                                                    {"Round", "round"},
                                                                                    {"Sign", "sign"},
                                                                                    {"Erf", "erf"},
                                                                                    {"Sin", "sin"},
                                                                                    {"Cos", "cos"},
                                                                                    {"Tan", "tan"},
                                                                                    {"Asin", "asin"},
                                                                                    {"Acos", "acos"},
                                                                                    {"Atan", "atan"},
                                                                                    {"Sinh", "sinh"},
                                                                                    {"Cosh", "cosh"},
                                                                                    {"Asinh", "asinh"},
                                                                                    {"Acosh", "acosh"},
                                                                                    {"Atanh", "atanh"},
                                                                                    {"IsNaN", "isnan"},
                                                                                    {"Not", "logical_not"},
                                                                                    {"BitwiseNot", "bitwise_not"},
                                                                                    {"Relu", "relu"},
                                                                                    {"Sigmoid", "sigmoid"},
                                                                                    {"Tanh", "tanh"},
                                                                                    {"Softplus", "softplus"},
                                                                                    {"Softsign", "softsign"},
                                                                                    {"Mish", "mish"},
                                                                                    {"HardSwish", "hard_swish"}})
    simple(t, onnx_op, op);
  with_floats(t, "LeakyRelu", "leaky_relu", {{"alpha", 0.01f}});
  with_floats(t, "Elu", "elu", {{"alpha", 1.0f}});
  with_floats(t, "Selu", "selu", {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}});
  with_floats(t, "Celu", "celu", {{"alpha", 1.0f}});
  with_floats(t, "HardSigmoid", "hard_sigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}});
  with_floats(t, "ThresholdedRelu", "thresholded_relu", {{"alpha", 1.0f}});
  with_floats(t, "Shrink", "shrink", {{"bias", 0.0f}, {"lambd", 0.5f}});
  t.add("IsInf", one([](ConvertContext& c) {
          c.check_attrs({"detect_positive", "detect_negative"});
          return c.call("isinf", {c.input(0)},
                        {{"detect_positive", c.attr_int("detect_positive", 1)},
                         {"detect_negative", c.attr_int("detect_negative", 1)}});
        }));
  t.add("PRelu", one(prelu));
  t.add("Gelu", one(gelu));
  t.add("Swish", one([](ConvertContext& c) {  // opset 24: x sigmoid(alpha x)
          c.check_attrs({"alpha"});
          return swish(c, c.input(0), c.attr_float("alpha", 1.0f));
        }));
  t.add("SwiGLU", one([](ConvertContext& c) {  // opset 28: swish(A) B, without broadcasting
          c.check_attrs({"alpha"});
          if (c.input_type(0).shape != c.input_type(1).shape)
            c.error("A " + runtime::shape_str(c.input_type(0).shape) + " and B " +
                    runtime::shape_str(c.input_type(1).shape) + " must have one shape");
          return c.call("mul", {swish(c, c.input(0), c.attr_float("alpha", 1.0f)), c.input(1)});
        }));
  t.add("Clip", one(clip));
  t.add("Identity", one([](ConvertContext& c) {
          c.check_attrs({});
          return c.input(0);
        }));
  t.add("Dropout", dropout, {1, 2});
  t.add("Cast", one(cast));
  t.add("CastLike", one([](ConvertContext& c) {
          c.check_attrs({"saturate", "round_mode"});
          return cast_with_options(c, c.input_type(1).dtype);
        }));
  t.add("BitCast", one([](ConvertContext& c) {  // opset 26
          c.check_attrs({"to"});
          const runtime::DataType to =
              dtype_from_onnx(static_cast<int>(c.attr_int("to")), c.where() + " attribute 'to'");
          return c.call("bitcast", {c.input(0)}, {{"dtype", to.str()}});
        }));
}

}  // namespace tessera::frontend::onnx

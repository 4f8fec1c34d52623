// The converter of ONNX LinearAttention (opset 27): the recurrence over the sequence, one step a
// token, with the state S [batch, kv heads, key size, value size] carried from step to step (as
// the recurrent networks of ops_extra_rnn.cc are, the sequence's length being known):
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + beta k (v - S^T k)^T
//   gated_delta: S = exp(g) S, then as delta
// and each token's output scale q^T S, query heads grouped onto their kv head (GQA). float16
// inputs are computed in float32, the state never rounded between tokens.
#include <cmath>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;
using Ints = std::vector<int64_t>;

namespace {

struct Sizes {
  int64_t batch, tokens, kv_heads, group, key, value;
};

// Input i in float32 (where it is float16), or nothing when it is absent.
Expr widened(ConvertContext& c, size_t i) {
  return c.has_input(i) ? cast_to(c, c.input(i), c.input_type(i).dtype, "float32") : Expr();
}

// Token t of `x` ([batch, tokens, ...]), reshaped to `shape`.
Expr token(ConvertContext& c, const Expr& x, int64_t t, const Ints& shape) {
  Expr one = c.call("slice", {x}, {{"starts", Ints{t}}, {"ends", Ints{t + 1}}, {"axes", Ints{1}}});
  return c.call("reshape", {one}, {{"shape", shape}});
}

// A gate input ([batch, tokens, kv heads * per_head] or [batch, tokens, 1]) as the shape one
// token's gate broadcasts against the state with: [batch, kv heads or 1, per_head or 1, 1].
Ints gate_shape(ConvertContext& c, size_t i, const Sizes& s, const char* name, bool per_key_allowed) {
  const auto& t = c.input_type(i);
  const int64_t last = t.ndim() == 3 ? t.shape[2] : -1;
  if (t.ndim() != 3 || t.shape[0] != s.batch || t.shape[1] != s.tokens)
    c.error(std::string(name) + " must be [batch, tokens, ...], got " + runtime::shape_str(t.shape));
  if (last == s.kv_heads) return {s.batch, s.kv_heads, 1, 1};
  if (per_key_allowed && last == s.kv_heads * s.key) return {s.batch, s.kv_heads, s.key, 1};
  if (!per_key_allowed && last == 1) return {s.batch, 1, 1, 1};
  c.error(std::string(name) + "'s last dimension must be " + std::to_string(s.kv_heads) +
          (per_key_allowed ? " or " + std::to_string(s.kv_heads * s.key) : std::string(" or 1")) + ", got " +
          std::to_string(last));
}

std::vector<Expr> convert_linear_attention(ConvertContext& c) {
  c.check_attrs({"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"});
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.error("update_rule must be linear, gated, delta or gated_delta, got \"" + rule + "\"");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  const auto &q = c.input_type(0), &k = c.input_type(1), &v = c.input_type(2);
  const int64_t q_heads = c.attr_int("q_num_heads"), kv_heads = c.attr_int("kv_num_heads");
  if (q.ndim() != 3 || k.ndim() != 3 || v.ndim() != 3)
    c.error("query, key and value must be 3-D [batch, tokens, heads * size]");
  if (kv_heads < 1 || q_heads < kv_heads || q_heads % kv_heads != 0 || k.shape[2] % kv_heads != 0 ||
      v.shape[2] % kv_heads != 0 || q.shape[2] % q_heads != 0)
    c.error("q_num_heads (" + std::to_string(q_heads) + ") must be a multiple of kv_num_heads (" +
            std::to_string(kv_heads) + "), and each must divide its inputs' last dimension");
  const Sizes s{q.shape[0], q.shape[1], kv_heads, q_heads / kv_heads, k.shape[2] / kv_heads, v.shape[2] / kv_heads};
  if (q.shape[2] / q_heads != s.key || k.shape[0] != s.batch || v.shape[0] != s.batch || k.shape[1] != s.tokens ||
      v.shape[1] != s.tokens)
    c.error("query " + runtime::shape_str(q.shape) + ", key " + runtime::shape_str(k.shape) + " and value " +
            runtime::shape_str(v.shape) + " disagree on batch, tokens or key size");
  if (gated && !c.has_input(4)) c.error("update_rule " + rule + " needs the decay input");
  if (delta && !c.has_input(5)) c.error("update_rule " + rule + " needs the beta input");
  const runtime::DataType dtype = q.dtype;
  if (!dtype.is_float()) c.error("query must be a float tensor, got " + dtype.str());
  double scale = c.attr_float("scale", 0.0f);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(s.key));

  std::vector<Expr> in;
  for (size_t i = 0; i < 6; ++i) in.push_back(widened(c, i));
  const Ints state_shape{s.batch, s.kv_heads, s.key, s.value};
  Expr state = in[3].defined() ? in[3] : relay_ir::constant(filled(state_shape, runtime::kFloat32, 0));
  const Ints decay_shape = gated ? gate_shape(c, 4, s, "decay", true) : Ints{};
  const Ints beta_shape = delta ? gate_shape(c, 5, s, "beta", false) : Ints{};
  std::vector<Expr> outputs;
  for (int64_t t = 0; t < s.tokens; ++t) {
    const Expr key = token(c, in[1], t, {s.batch, s.kv_heads, s.key, 1});
    const Expr value = token(c, in[2], t, {s.batch, s.kv_heads, 1, s.value});
    if (gated) state = c.call("mul", {c.call("exp", {token(c, in[4], t, decay_shape)}), state});
    Expr update = value;
    if (delta) {
      // v - S^T k, scaled by beta
      const Expr recalled =
          c.call("reduce_sum", {c.call("mul", {state, key})}, {{"axes", Ints{2}}, {"keepdims", int64_t{1}}});
      update = c.call("mul", {token(c, in[5], t, beta_shape), c.call("sub", {value, recalled})});
    }
    state = c.call("add", {state, c.call("mul", {key, update})});
    const Expr query = token(c, in[0], t, {s.batch, s.kv_heads, s.group, s.key});
    const Expr out = c.call("mul", {c.call("matmul", {query, state}), scalar_constant(scale, runtime::kFloat32)});
    outputs.push_back(c.call("reshape", {out}, {{"shape", Ints{s.batch, 1, s.kv_heads * s.group * s.value}}}));
  }
  const std::string type = dtype.str();
  if (outputs.empty())
    return {relay_ir::constant(filled({s.batch, 0, s.kv_heads * s.group * s.value}, dtype, 0)),
            cast_to(c, state, runtime::kFloat32, type)};
  Expr output = outputs.size() == 1 ? outputs[0] : c.call("concat", outputs, {{"axis", int64_t{1}}});
  return {cast_to(c, output, runtime::kFloat32, type), cast_to(c, state, runtime::kFloat32, type)};
}

}  // namespace

void register_nn_linear_attention_converters(ConverterTable& t) { t.add("LinearAttention", convert_linear_attention); }

}  // namespace tessera::frontend::onnx

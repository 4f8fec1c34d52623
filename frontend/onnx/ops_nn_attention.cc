// The converters of ONNX Attention (opsets 23 to 25) and RotaryEmbedding (23). Attention is
// scaled dot-product attention composed of matrix products, a softmax and the masks as
// elementwise ops, which the graph passes fuse:
//   * 3-D Q, K, V ([batch, sequence, heads * head size], with q_num_heads and kv_num_heads) are
//     split into heads; 4-D ones are [batch, heads, sequence, head size];
//   * past_key and past_value are concatenated before K and V (present_key, present_value);
//   * grouped-query attention repeats each key and value head for its group of query heads;
//   * the keys a query may attend: a boolean attn_mask, is_causal (bottom-right aligned, offset by
//     the past's length, or per batch by nonpad_kv_seqlen - the query's length), the window
//     bounds of opset 25, and nonpad_kv_seqlen's valid keys; a float attn_mask is added instead;
//   * a query row with no key allowed gives zeros, not NaN.
#include <cmath>
#include <limits>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;
using runtime::DataType;
using runtime::NDArray;

namespace {

struct Heads {
  Expr x;  // [batch, heads, sequence, head size]
  int64_t heads = 0, sequence = 0, size = 0;
};

// Input `i` as [batch, heads, sequence, head size].
Heads split_heads(ConvertContext& c, size_t i, const char* heads_attr, const char* name) {
  const auto& t = c.input_type(i);
  Heads h;
  if (t.ndim() == 4) {
    h.x = c.input(i);
    h.heads = t.shape[1], h.sequence = t.shape[2], h.size = t.shape[3];
    return h;
  }
  if (t.ndim() != 3) c.error(std::string(name) + " must be 3-D or 4-D, got shape " + runtime::shape_str(t.shape));
  h.heads = c.attr_int(heads_attr, 0);
  if (h.heads < 1 || t.shape[2] % h.heads != 0)
    c.error(std::string("a 3-D ") + name + " needs " + heads_attr + " dividing its last dimension " +
            std::to_string(t.shape[2]) + ", got " + std::to_string(h.heads));
  h.sequence = t.shape[1], h.size = t.shape[2] / h.heads;
  Expr split = c.call("reshape", {c.input(i)}, {{"shape", std::vector<int64_t>{t.shape[0], h.sequence, h.heads, h.size}}});
  h.x = c.call("transpose", {split}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  return h;
}

// Each of `kv` heads repeated for `group` query heads: [b, kv, s, d] -> [b, kv * group, s, d].
Expr repeat_heads(ConvertContext& c, const Expr& x, const std::vector<int64_t>& shape, int64_t group) {
  if (group == 1) return x;
  Expr wide = c.call("reshape", {x}, {{"shape", std::vector<int64_t>{shape[0], shape[1], 1, shape[2], shape[3]}}});
  Expr tiled = c.call("tile", {wide}, {{"repeats", std::vector<int64_t>{1, 1, group, 1, 1}}});
  return c.call("reshape", {tiled}, {{"shape", std::vector<int64_t>{shape[0], shape[1] * group, shape[2], shape[3]}}});
}

// A constant [queries, keys] bool matrix: allowed(i, j).
template <typename F>
Expr position_mask(int64_t queries, int64_t keys, F allowed) {
  NDArray m = NDArray::empty({queries, keys}, runtime::kBool);
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) m.data_as<bool>()[i * keys + j] = allowed(i, j);
  return relay_ir::constant(m);
}

Expr both(ConvertContext& c, const Expr& a, const Expr& b) {
  return a.defined() ? c.call("logical_and", {a, b}) : b;
}

std::vector<Expr> convert_attention(ConvertContext& c) {
  c.check_attrs({"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap",
                 "softmax_precision", "left_window_size", "right_window_size"});
  const DataType dtype = c.input_type(0).dtype;
  if (!dtype.is_float()) c.error("Q must be a float tensor, got " + dtype.str());
  const bool three_d = c.input_type(0).ndim() == 3;
  Heads q = split_heads(c, 0, "q_num_heads", "Q"), k = split_heads(c, 1, "kv_num_heads", "K"),
        v = split_heads(c, 2, "kv_num_heads", "V");
  const int64_t batch = c.input_type(0).shape[0];
  if (k.size != q.size) c.error("K's head size " + std::to_string(k.size) + " differs from Q's " + std::to_string(q.size));
  if (k.heads != v.heads || k.sequence != v.sequence) c.error("K and V differ in heads or sequence length");
  if (q.heads % k.heads != 0)
    c.error("the query heads (" + std::to_string(q.heads) + ") must be a multiple of the key heads (" +
            std::to_string(k.heads) + ")");

  // The cache: past keys and values before the new ones.
  int64_t past = 0;
  Expr keys = k.x, values = v.x;
  if (c.has_input(4) != c.has_input(5)) c.error("past_key and past_value come together");
  if (c.has_input(4)) {
    past = c.input_type(4).shape.at(2);
    keys = c.call("concat", {c.input(4), k.x}, {{"axis", int64_t{2}}});
    values = c.call("concat", {c.input(5), v.x}, {{"axis", int64_t{2}}});
  }
  const int64_t total = past + k.sequence;
  const std::vector<int64_t> kv_shape{batch, k.heads, total, k.size}, v_shape{batch, k.heads, total, v.size};

  // Which keys each query may attend (undefined: all), as a bool [.., queries, keys].
  Expr allowed;
  Expr float_mask;
  if (c.has_input(3)) {
    const auto& m = c.input_type(3);
    Expr mask = c.input(3);
    if (m.ndim() < 1 || m.shape.back() > total)
      c.error("attn_mask must be [..., " + std::to_string(q.sequence) + ", up to " + std::to_string(total) +
              "], got " + runtime::shape_str(m.shape));
    // A mask of fewer keys than there are leaves the rest out (disallowed, or -inf added).
    if (m.shape.back() < total) {
      std::vector<int64_t> pads(2 * m.ndim(), 0);
      pads[2 * m.ndim() - 1] = total - m.shape.back();
      const double fill = m.dtype.is_bool() ? 0.0 : -std::numeric_limits<double>::infinity();
      mask = c.call("pad", {mask}, {{"pads", pads}, {"mode", std::string("constant")}, {"value", fill}});
    }
    if (m.dtype.is_bool()) allowed = mask;
    else if (m.dtype == dtype) float_mask = mask;
    else c.error("attn_mask must be bool or of Q's dtype " + dtype.str() + ", got " + m.dtype.str());
  }
  const bool causal = c.attr_int("is_causal", 0) != 0;
  const int64_t left = c.attr_int("left_window_size", -1), right = c.attr_int("right_window_size", -1);
  if (c.has_input(6)) {
    // An external cache: per batch, the first nonpad_kv_seqlen keys are valid, and the queries
    // follow them (offset nonpad - queries).
    const auto& n = c.input_type(6);
    if (n.shape != std::vector<int64_t>{batch} || !n.dtype.is_integer())
      c.error("nonpad_kv_seqlen must be integers [" + std::to_string(batch) + "], got " + n.dtype.str() +
              runtime::shape_str(n.shape));
    Expr valid = c.call("reshape", {c.call("cast", {c.input(6)}, {{"dtype", std::string("int64")}})},
                        {{"shape", std::vector<int64_t>{batch, 1, 1, 1}}});
    auto index_matrix = [&](auto f) {
      NDArray m = NDArray::empty({q.sequence, total}, runtime::kInt64);
      for (int64_t i = 0; i < q.sequence; ++i)
        for (int64_t j = 0; j < total; ++j) m.data_as<int64_t>()[i * total + j] = f(i, j);
      return relay_ir::constant(m);
    };
    // Key j is valid when j < nonpad; with offset o = nonpad - queries, query i may attend key j
    // when j <= i + o (causal), j >= i + o - left and j <= i + o + right.
    allowed = both(c, allowed, c.call("less", {index_matrix([](int64_t, int64_t j) { return j; }), valid}));
    auto relative = [&](int64_t shift) {  // j - i + queries + shift, compared with nonpad
      return index_matrix([&](int64_t i, int64_t j) { return j - i + q.sequence + shift; });
    };
    if (causal) allowed = both(c, allowed, c.call("less_equal", {relative(0), valid}));
    if (right >= 0) allowed = both(c, allowed, c.call("less_equal", {relative(-right), valid}));
    if (left >= 0) allowed = both(c, allowed, c.call("greater_equal", {relative(left), valid}));
  } else if (causal || left >= 0 || right >= 0) {
    allowed = both(c, allowed, position_mask(q.sequence, total, [&](int64_t i, int64_t j) {
                     const int64_t p = i + past;
                     return (!causal || j <= p) && (right < 0 || j <= p + right) && (left < 0 || j >= p - left);
                   }));
  }

  // Q K^T, each scaled by the square root of the scale (as ONNX's reference does).
  const double scale = c.has_attr("scale") ? c.attr_float("scale", 0) : 1.0 / std::sqrt(static_cast<double>(q.size));
  Expr root = scalar_constant(std::sqrt(scale), dtype);
  Expr keys_t = c.call("transpose", {repeat_heads(c, keys, kv_shape, q.heads / k.heads)},
                       {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  Expr scores = c.call("matmul", {c.call("mul", {q.x, root}), c.call("mul", {keys_t, root})});
  std::vector<Expr> stages{scores};  // qk_matmul_output by mode: raw, softcapped, biased, softmax
  const double softcap = c.attr_float("softcap", 0);
  if (softcap > 0) {
    Expr cap = scalar_constant(softcap, dtype);
    scores = c.call("mul", {cap, c.call("tanh", {c.call("div", {scores, cap})})});
  }
  stages.push_back(scores);
  const Expr minus_inf = scalar_constant(-std::numeric_limits<double>::infinity(), dtype);
  if (float_mask.defined()) scores = c.call("add", {scores, float_mask});
  if (allowed.defined()) scores = c.call("where", {allowed, scores, minus_inf});
  stages.push_back(scores);

  std::string precision = dtype.str();
  if (c.has_attr("softmax_precision")) {
    const int64_t p = c.attr_int("softmax_precision", 1);
    if (p != 1 && p != 10 && p != 11) c.error("softmax_precision must be 1, 10 or 11, got " + std::to_string(p));
    precision = p == 1 ? "float32" : p == 10 ? "float16" : "float64";
  }
  Expr probs = c.call("softmax", {cast_to(c, scores, dtype, precision)}, {{"axis", int64_t{-1}}});
  probs = cast_to(c, probs, DataType::parse(precision), dtype.str());
  if (allowed.defined()) {
    // A row with no key allowed: zeros instead of 0 / 0.
    Expr any = c.call("cast", {c.call("reduce_max", {c.call("cast", {allowed}, {{"dtype", std::string("uint8")}})},
                                      {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}})},
                      {{"dtype", std::string("bool")}});
    probs = c.call("where", {any, probs, scalar_constant(0, dtype)});
  }
  stages.push_back(probs);

  Expr y = c.call("matmul", {probs, repeat_heads(c, values, v_shape, q.heads / k.heads)});
  if (three_d) {
    y = c.call("transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    y = c.call("reshape", {y}, {{"shape", std::vector<int64_t>{batch, q.sequence, q.heads * v.size}}});
  }
  const int64_t mode = c.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) c.error("qk_matmul_output_mode must be 0 to 3, got " + std::to_string(mode));
  std::vector<Expr> outs{y, keys, values, stages[mode]};
  outs.resize(std::min<size_t>(outs.size(), c.node().output_size()));
  return outs;
}

// RotaryEmbedding: the first rotary_embedding_dim values of each head (all, by default) rotated
// pairwise by the angles of the caches, at position_ids when given: a pair (x1, x2) becomes
// (cos x1 - sin x2, sin x1 + cos x2), the pairs being the two halves of the rotated values, or
// neighbours when interleaved.
Expr convert_rotary_embedding(ConvertContext& c) {
  c.check_attrs({"interleaved", "num_heads", "rotary_embedding_dim"});
  const auto& t = c.input_type(0);
  if (!t.dtype.is_float()) c.error("X must be a float tensor, got " + t.dtype.str());
  const bool four_d = t.ndim() == 4;
  if (!four_d && t.ndim() != 3) c.error("X must be 3-D or 4-D, got shape " + runtime::shape_str(t.shape));
  const int64_t batch = t.shape[0], sequence = four_d ? t.shape[2] : t.shape[1];
  const int64_t heads = four_d ? t.shape[1] : c.attr_int("num_heads", 0);
  if (heads < 1 || (!four_d && t.shape[2] % heads != 0))
    c.error("a 3-D X needs num_heads dividing its last dimension, got " + std::to_string(heads));
  const int64_t size = four_d ? t.shape[3] : t.shape[2] / heads;
  const int64_t rotated = c.attr_int("rotary_embedding_dim", 0) > 0 ? c.attr_int("rotary_embedding_dim", 0) : size;
  if (rotated > size || rotated % 2 != 0)
    c.error("rotary_embedding_dim must be even and at most the head size " + std::to_string(size) + ", got " +
            std::to_string(rotated));
  const int64_t half = rotated / 2;
  // [batch, sequence, heads, size]
  Expr x = four_d ? c.call("transpose", {c.input(0)}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})
                  : c.call("reshape", {c.input(0)}, {{"shape", std::vector<int64_t>{batch, sequence, heads, size}}});
  auto cache = [&](size_t i) {
    Expr at = c.has_input(3) ? c.call("take", {c.input(i), c.input(3)}, {{"axis", int64_t{0}}}) : c.input(i);
    const auto& ct = c.input_type(i);
    if (ct.shape.back() != half)
      c.error(std::string(i == 1 ? "cos_cache" : "sin_cache") + " must end in rotary_embedding_dim / 2 = " +
              std::to_string(half) + ", got " + runtime::shape_str(ct.shape));
    return c.call("reshape", {at}, {{"shape", std::vector<int64_t>{batch, sequence, 1, half}}});
  };
  Expr cos = cache(1), sin = cache(2);
  auto slice = [&](int64_t begin, int64_t end, int64_t step) {
    return c.call("slice", {x}, {{"starts", std::vector<int64_t>{begin}}, {"ends", std::vector<int64_t>{end}},
                                 {"axes", std::vector<int64_t>{3}}, {"steps", std::vector<int64_t>{step}}});
  };
  const bool interleaved = c.attr_int("interleaved", 0) != 0;
  Expr x1 = interleaved ? slice(0, rotated, 2) : slice(0, half, 1);
  Expr x2 = interleaved ? slice(1, rotated, 2) : slice(half, rotated, 1);
  Expr real = c.call("sub", {c.call("mul", {cos, x1}), c.call("mul", {sin, x2})});
  Expr imag = c.call("add", {c.call("mul", {sin, x1}), c.call("mul", {cos, x2})});
  Expr out;
  if (interleaved) {
    const std::vector<int64_t> pair{batch, sequence, heads, half, 1};
    Expr pairs = c.call("concat", {c.call("reshape", {real}, {{"shape", pair}}), c.call("reshape", {imag}, {{"shape", pair}})},
                        {{"axis", int64_t{4}}});
    out = c.call("reshape", {pairs}, {{"shape", std::vector<int64_t>{batch, sequence, heads, rotated}}});
  } else {
    out = c.call("concat", {real, imag}, {{"axis", int64_t{3}}});
  }
  if (rotated < size) out = c.call("concat", {out, slice(rotated, size, 1)}, {{"axis", int64_t{3}}});
  return four_d ? c.call("transpose", {out}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})
                : c.call("reshape", {out}, {{"shape", t.shape}});
}

}  // namespace

void register_nn_attention_converters(ConverterTable& t) {
  t.add("Attention", convert_attention);
  t.add("RotaryEmbedding", nn::one(convert_rotary_embedding));
}

}  // namespace tessera::frontend::onnx

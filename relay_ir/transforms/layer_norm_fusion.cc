// LayerNormFusion (as ONNX Runtime's): exporters before opset 17 write a layer normalization as
// its arithmetic,
//   m = reduce_mean(x, axes); d = x - m; v = reduce_mean(d * d, axes)    (Pow(d, 2) imports as d * d)
//   y = d / sqrt(v + epsilon), then * scale, then + bias
// over trailing axes: four kernels (two reductions, the subtraction they both read, the rest).
// It becomes one layer_norm, built in steps as the graph is rewritten bottom-up: the division
// becomes layer_norm(x, 1)[0], a product with it gives the scale that is still 1, a sum the bias
// it does not have yet. Each step only when nothing outside the pattern reads a value it removes.
// Then every layer_norm whose statistics nothing reads (inference) returns y alone (statistics=0):
// its kernel keeps the mean and deviation of a row inside the row's loop instead of writing them
// out, which would make them separate passes over the rows.
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {

// The first axis of a reduction over the trailing axes of a rank-`rank` value (keeping them as
// size 1); none for any other reduction.
std::optional<int64_t> trailing_axes_from(const CallNode* mean, size_t rank) {
  if (!mean || !mean->attrs.get_int("keepdims") || rank == 0) return std::nullopt;
  std::vector<bool> reduced(rank, false);
  std::vector<int64_t> axes = mean->attrs.get_ints("axes");
  if (axes.empty()) return 0;  // every axis
  for (int64_t a : axes) {
    if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank)) return std::nullopt;
    reduced[a < 0 ? a + rank : a] = true;
  }
  size_t first = rank;
  while (first > 0 && reduced[first - 1]) --first;
  for (size_t d = 0; d < first; ++d)
    if (reduced[d]) return std::nullopt;
  return static_cast<int64_t>(first);
}

class LayerNormFuser : public ExprMutator {
 public:
  explicit LayerNormFuser(const Expr& root) {
    for (const Expr& e : post_order(root))
      for (const Expr& child : children(e)) consumers_[child.get()].insert(e.get());
  }

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    if (call_of(node, "div")) return from_division(original, node);
    if (call_of(node, "mul") || call_of(node, "add")) return with_affine(original, node);
    return node;
  }

 private:
  // Whether every reader of each of `inner` is among `inner` or is `root`.
  bool read_only_inside(const std::vector<const ExprNode*>& inner, const ExprNode* root) {
    std::unordered_set<const ExprNode*> inside(inner.begin(), inner.end());
    inside.insert(root);
    for (const ExprNode* n : inner)
      for (const ExprNode* reader : consumers_[n])
        if (!inside.count(reader)) return false;
    return true;
  }

  // div(x - m, sqrt(v + epsilon)) -> layer_norm(x, 1)[0], matched in the original graph.
  Expr from_division(const Expr& original, const Expr& node) {
    const auto* div = original.as<CallNode>();
    const CallNode* d = call_of(div->args[0], "sub");
    const CallNode* s = call_of(div->args[1], "sqrt");
    const CallNode* e = s ? call_of(s->args[0], "add") : nullptr;
    if (!d || !e) return node;
    const Expr& x = d->args[0];
    const CallNode* m = call_of(d->args[1], "reduce_mean");
    if (!m || !m->args[0].same_as(x)) return node;
    std::optional<double> epsilon = float_scalar_value(e->args[1]);
    Expr v_expr = e->args[0];
    if (!epsilon) epsilon = float_scalar_value(e->args[0]), v_expr = e->args[1];
    const CallNode* v = call_of(v_expr, "reduce_mean");
    const CallNode* sq = v ? call_of(v->args[0], "mul") : nullptr;
    if (!epsilon || !sq || !sq->args[0].same_as(div->args[0]) || !sq->args[1].same_as(div->args[0])) return node;
    const auto* xt = checked_tensor(x);
    const auto* yt = checked_tensor(original);
    if (!xt || !yt || !xt->dtype.is_float() || !xt->dtype.is_scalar() || !(yt->shape == xt->shape)) return node;
    std::optional<int64_t> axis = trailing_axes_from(m, xt->ndim());
    if (!axis || axis != trailing_axes_from(v, xt->ndim())) return node;
    for (size_t a = *axis; a < xt->ndim(); ++a)
      if (!xt->shape.is_static(a)) return node;  // the kernel divides by a constant count
    if (!read_only_inside({m, d, sq, v, e, s}, div)) return node;
    Attrs attrs{{"axis", *axis},
                {"epsilon", *epsilon},
                {"stat_dtype", std::string(xt->dtype.bits == 64 ? "float64" : "float32")}};
    Expr out = tuple_get(call("layer_norm", {rewritten(x), scalar(1.0, xt->dtype)}, attrs, div->origin), 0);
    infer_type(out);
    return out;
  }

  // layer_norm(x, 1)[0] * scale -> layer_norm(x, scale)[0]; layer_norm(x, s)[0] + bias ->
  // layer_norm(x, s, bias)[0]; either operand order, and only where the result keeps x's type.
  Expr with_affine(const Expr& original, const Expr& node) {
    const auto* c = node.as<CallNode>();
    const bool scale = c->op_def()->name == "mul";
    infer_type(node);
    const auto* yt = checked_tensor(node);
    for (size_t i = 0; i < 2; ++i) {
      const auto* item = c->args[i].as<TupleGetItemNode>();
      const CallNode* ln = item && item->index == 0 ? call_of(item->tuple, "layer_norm") : nullptr;
      if (!ln || ln->args.size() != 2 || (scale && float_scalar_value(ln->args[1]) != 1.0)) continue;
      const Expr& other = c->args[1 - i];
      if (other.same_as(c->args[i])) continue;
      const auto* xt = checked_tensor(ln->args[0]);
      const auto* ot = checked_tensor(other);
      if (!xt || !ot || !yt || ot->dtype != xt->dtype || !(yt->shape == xt->shape) || yt->dtype != xt->dtype) continue;
      const ExprNode* normalized = original.as<CallNode>()->args[i].get();
      if (consumers_[normalized].size() != 1) continue;
      std::vector<Expr> args = ln->args;
      if (scale) args[1] = other;
      else args.push_back(other);
      Expr out = tuple_get(call("layer_norm", args, ln->attrs, ln->origin), 0);
      infer_type(out);
      return out;
    }
    return node;
  }

  std::unordered_map<const ExprNode*, std::unordered_set<const ExprNode*>> consumers_;
};

// layer_norm(...)[0] -> layer_norm(..., statistics=0) where nothing else reads the call.
class StatisticsDropper : public ExprMutator {
 public:
  explicit StatisticsDropper(const Expr& root) : readers_(reader_counts(root)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    const auto* item = node.as<TupleGetItemNode>();
    const CallNode* ln = item && item->index == 0 ? call_of(item->tuple, "layer_norm") : nullptr;
    if (!ln || !ln->attrs.get_int("statistics") || readers_[original.as<TupleGetItemNode>()->tuple.get()] != 1)
      return node;
    Attrs attrs = ln->attrs;
    attrs.set("statistics", int64_t(0));
    Expr y = call("layer_norm", ln->args, attrs, ln->origin);
    infer_type(y);
    return y;
  }

 private:
  std::unordered_map<const ExprNode*, int> readers_;
};

}  // namespace

Pass layer_norm_fusion_pass() {
  return function_pass("LayerNormFusion", 1, [](const Function& f, PassContext&) {
    Expr fused = LayerNormFuser(f).mutate(f);
    return StatisticsDropper(fused).mutate(fused);
  });
}

}  // namespace tessera::relay_ir

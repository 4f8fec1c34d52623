// AttentionFusion (CPU): exporters write scaled dot-product attention as its steps,
//   s = matmul(q, k) (k [.., D, S], or k [.., S, D] with trans_b), optionally times or divided by a
//   scalar constant, optionally plus a bias (an attention mask) that broadcasts to it, or with a
//   scalar where a bool mask says (where(mask, s, fill), masked_fill's where(mask, fill, s));
//   p = softmax(s) along the last axis; y = matmul(p, v),
// three kernels that write and read the scores [.., L, S] twice. It becomes one attention call,
// whose kernel computes a block of query rows' scores, softmax and product while they are in
// cache. Only where nothing else reads s or p (or the steps between), the batch dimensions are equal (no broadcasting),
// everything is float32, and both products pack their right operand (static sizes: at least 4
// query rows and a vector of keys and of value columns, 16 floats on every CPU target).
#include <optional>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace {

constexpr int64_t kMinRows = 4, kMinColumns = 16;

// Whether a dimension is symbolic or a constant of at least `least`.
bool at_least(const Shape& shape, size_t d, int64_t least) { return !shape.is_static(d) || shape[d] >= least; }

class AttentionFuser : public ExprMutator {
 public:
  explicit AttentionFuser(const Expr& root) : readers_(reader_counts(root)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    const CallNode* y = call_of(original, "matmul");
    if (!y || y->attrs.get_int("packed_columns") || y->attrs.get_int("trans_b")) return node;
    const CallNode* p = call_of(y->args[0], "softmax");
    if (!p || p->attrs.get_int("trailing") || !read_once(y->args[0])) return node;
    double scale = 1.0, fill = 0.0;
    bool keep = true;
    Expr bias;
    const CallNode* s = scaled_product(p->args[0], scale);
    if (const CallNode* add = call_of(p->args[0], "add"); !s && add && read_once(p->args[0])) {
      for (size_t i = 0; i < 2 && !s; ++i)
        if ((s = scaled_product(add->args[i], scale))) bias = add->args[1 - i];
    }
    if (const CallNode* w = call_of(p->args[0], "where"); !s && w && read_once(p->args[0])) {
      for (size_t i = 1; i < 3 && !s; ++i) {
        std::optional<double> value = float_scalar_value(w->args[3 - i]);
        if (value && (s = scaled_product(w->args[i], scale))) bias = w->args[0], fill = *value, keep = i == 1;
      }
    }
    if (!s || s->attrs.get_int("packed_columns")) return node;
    const Expr &q = s->args[0], &k = s->args[1], &v = y->args[1];
    if (!large_enough(q, v, p->attrs.get_int("axis"))) return node;
    std::vector<Expr> args{rewritten(q), rewritten(k), rewritten(v)};
    if (bias.defined()) args.push_back(rewritten(bias));
    Attrs attrs{{"scale", scale}, {"trans_k", s->attrs.get_int("trans_b")}, {"fill", fill}, {"keep", int64_t(keep)}};
    Expr out = call("attention", args, attrs, y->origin);
    try {
      infer_type(out);
    } catch (const Error&) {
      return node;  // what the op does not take: other types, batch dimensions that broadcast, ...
    }
    return out;
  }

 private:
  bool read_once(const Expr& e) { return readers_[e.get()] == 1; }

  // The product behind `e` (read only there): e itself, or e times or divided by a scalar
  // constant, which sets `scale`; null otherwise.
  const CallNode* scaled_product(const Expr& e, double& scale) {
    if (!read_once(e)) return nullptr;
    if (const CallNode* m = call_of(e, "matmul")) return m;
    const CallNode* c = call_of(e, "mul");
    const CallNode* d = call_of(e, "div");
    for (size_t i = 0; c && i < 2; ++i)
      if (std::optional<double> v = float_scalar_value(c->args[1 - i]);
          v && call_of(c->args[i], "matmul") && read_once(c->args[i]))
        return scale = *v, call_of(c->args[i], "matmul");
    if (d && call_of(d->args[0], "matmul") && read_once(d->args[0]))
      if (std::optional<double> v = float_scalar_value(d->args[1]); v && *v != 0)
        return scale = 1.0 / *v, call_of(d->args[0], "matmul");
    return nullptr;
  }

  // Whether the softmax runs along the last axis and both products pack (static sizes: enough
  // query rows, keys and value columns).
  static bool large_enough(const Expr& q, const Expr& v, int64_t axis) {
    const auto *qt = checked_tensor(q), *vt = checked_tensor(v);
    if (!qt || !vt || qt->ndim() < 2 || vt->ndim() != qt->ndim()) return false;
    const size_t rank = qt->ndim();
    if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return false;
    return at_least(qt->shape, rank - 2, kMinRows) && at_least(vt->shape, rank - 2, kMinColumns) &&
           at_least(vt->shape, rank - 1, kMinColumns);
  }

  std::unordered_map<const ExprNode*, int> readers_;
};

}  // namespace

Pass attention_fusion_pass() {
  return function_pass("AttentionFusion", 3,
                       [](const Function& f, PassContext&) { return AttentionFuser(f).mutate(f); });
}

}  // namespace tessera::relay_ir

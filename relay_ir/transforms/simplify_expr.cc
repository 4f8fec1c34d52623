// Algebraic simplification of the graph:
//  - squeeze and expand_dims are reshapes; a reshape to the input's shape is nothing, and a
//    reshape of a reshape is one reshape;
//  - a transpose of a transpose is one transpose (nothing if the permutations cancel);
//  - a product whose right operand is a transpose of its last two axes reads the operand
//    transposed instead (matmul's trans_b, as ONNX Runtime's FusedMatMul): attention's keys are
//    not copied each call, and a product of few rows takes dot products along the contiguous keys;
//  - a cast to the dtype a value already has is nothing;
//  - x + 0, x - 0, x * 1 and x / 1 (constants of zeros or ones that do not broadcast x) are x;
//  - erf(x / k) is erf(x * (1 / k)) for a one-element float constant k (GELU's x / sqrt(2)): a
//    product instead of a division, at most an ulp apart in erf's argument, where the targets'
//    erf itself is within 4e-7;
//  - a product whose left operand is scaled by a power of two, matmul(x / 8, y), scales the
//    product instead, matmul(x, y) / 8: exact (a power of two scales every rounding alike), and
//    the left operand is then only moved, which the product reads in place (attention's queries
//    divided by sqrt(64): the scale joins the product's epilogue and the copy of the queries goes).
#include <cmath>
#include <cstring>
#include <numeric>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {

const std::string& op_name(const CallNode* c) {
  static const std::string none;
  return c && c->op_def() ? c->op_def()->name : none;
}

// True if `e` is a constant whose every element equals `value`.
bool is_constant_filled(const Expr& e, double value) {
  const auto* c = e.as<ConstantNode>();
  if (!c) return false;
  const auto& a = c->data;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v;
    switch (a.dtype().code) {
      case runtime::TypeCode::Float:
        if (a.dtype().bits == 32) v = a.data_as<float>()[i];
        else if (a.dtype().bits == 64) v = a.data_as<double>()[i];
        else return false;
        break;
      case runtime::TypeCode::Int:
        if (a.dtype().bits == 64) v = static_cast<double>(a.data_as<int64_t>()[i]);
        else if (a.dtype().bits == 32) v = a.data_as<int32_t>()[i];
        else return false;
        break;
      default:
        return false;
    }
    if (v != value) return false;
  }
  return true;
}

std::vector<int64_t> full_perm(const std::vector<int64_t>& perm, size_t ndim) {
  if (!perm.empty()) return perm;
  std::vector<int64_t> p(ndim);
  std::iota(p.rbegin(), p.rend(), 0);  // an empty permutation reverses the axes
  return p;
}

// The power of two 2^e (e != 0) that `e`, a one-element float constant, holds.
std::optional<double> power_of_two(const Expr& e) {
  std::optional<double> k = float_scalar_value(e);
  if (!k || *k <= 0 || *k == 1 || !std::isfinite(*k)) return std::nullopt;
  int exponent;
  return std::frexp(*k, &exponent) == 0.5 ? k : std::nullopt;
}

class Simplifier : public ExprMutator {
 public:
  explicit Simplifier(const Expr& root) : readers_(reader_counts(root)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    const auto* c = node.as<CallNode>();
    if (!c || !c->op_def() || c->args.empty()) return node;
    infer_type(node);
    const std::string& name = op_name(c);
    const auto* out = checked_tensor(node);
    if (!out) return node;
    const Expr& x = c->args[0];
    const auto* in = checked_tensor(x);
    if (name == "squeeze" || name == "expand_dims")
      return simplify_reshape(call("reshape", {x}, {{"shape", out->shape}}));
    if (name == "reshape") return simplify_reshape(node);
    if (name == "transpose") {
      auto perm = full_perm(c->attrs.get_ints("perm"), in->ndim());
      if (const auto* inner = x.as<CallNode>(); op_name(inner) == "transpose") {
        auto first = full_perm(inner->attrs.get_ints("perm"), checked_tensor(inner->args[0])->ndim());
        std::vector<int64_t> combined(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) combined[i] = first[perm[i]];
        return identity_or(inner->args[0], call("transpose", {inner->args[0]}, {{"perm", combined}}), combined);
      }
      return identity_or(x, node, perm);
    }
    if (name == "matmul") return scale_after_product(original, read_right_operand_transposed(node));
    if (name == "cast" && in && in->dtype == out->dtype) return x;
    if (name == "erf") return erf_of_product(node);
    if (c->args.size() == 2 && in) {
      const Expr& y = c->args[1];
      const auto* yt = checked_tensor(y);
      // Only when the constant does not broadcast x to a larger shape.
      bool x_keeps = in->shape == out->shape && in->dtype == out->dtype;
      bool y_keeps = yt && yt->shape == out->shape && yt->dtype == out->dtype;
      if ((name == "add" || name == "sub") && x_keeps && is_constant_filled(y, 0)) return x;
      if (name == "add" && y_keeps && is_constant_filled(x, 0)) return y;
      if ((name == "mul" || name == "div") && x_keeps && is_constant_filled(y, 1)) return x;
      if (name == "mul" && y_keeps && is_constant_filled(x, 1)) return y;
    }
    return node;
  }

 private:
  static Expr identity_or(const Expr& x, const Expr& transposed, const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return transposed;
    return x;
  }

  // matmul(a, transpose(b)) -> matmul(a, b, trans_b=1) where the transpose swaps b's last two axes.
  static Expr read_right_operand_transposed(const Expr& node) {
    const auto* c = node.as<CallNode>();
    const auto* t = c->args[1].as<CallNode>();
    if (op_name(t) != "transpose" || c->attrs.get_int("packed_columns") || c->attrs.get_int("trans_b")) return node;
    size_t rank = checked_tensor(t->args[0])->ndim();
    std::vector<int64_t> swap_last_two(rank);
    std::iota(swap_last_two.begin(), swap_last_two.end(), 0);
    if (rank < 2) return node;
    std::swap(swap_last_two[rank - 1], swap_last_two[rank - 2]);
    if (full_perm(t->attrs.get_ints("perm"), rank) != swap_last_two) return node;
    Attrs attrs = c->attrs;
    attrs.set("trans_b", int64_t(1));
    return call("matmul", {c->args[0], t->args[0]}, attrs, c->origin);
  }

  // matmul(x * k, y) -> matmul(x, y) * k and matmul(x / k, y) -> matmul(x, y) / k, k a power of
  // two, where the scaled x has no other reader and k broadcasts nothing.
  Expr scale_after_product(const Expr& original, const Expr& node) {
    const auto* c = node.as<CallNode>();
    const auto* scaled = c->args[0].as<CallNode>();
    const std::string& op = op_name(scaled);
    const ExprNode* original_left = original.as<CallNode>()->args[0].get();
    if ((op != "mul" && op != "div") || readers_[original_left] != 1 || !power_of_two(scaled->args[1])) return node;
    const Expr& x = scaled->args[0];
    const auto *xt = checked_tensor(x), *st = checked_tensor(c->args[0]);
    if (!xt || !st || !(xt->shape == st->shape) || xt->dtype != st->dtype) return node;
    Expr product = call("matmul", {x, c->args[1]}, c->attrs, c->origin);
    return call(op, {product, scaled->args[1]}, {}, scaled->origin);
  }

  static Expr erf_of_product(const Expr& node) {
    const auto* c = node.as<CallNode>();
    const auto* d = c->args[0].as<CallNode>();
    if (op_name(d) != "div") return node;
    const Expr& x = d->args[0];
    const auto* xt = checked_tensor(x);
    std::optional<double> k = float_scalar_value(d->args[1]);
    // A one-element k broadcasts nothing when x already has the quotient's shape.
    if (!k || !xt || !(xt->shape == checked_tensor(c->args[0])->shape)) return node;
    const DataType kt = checked_tensor(d->args[1])->dtype;
    double inverse = 1.0 / *k;
    if (kt.bits == 32) inverse = static_cast<float>(inverse);
    if (!std::isfinite(inverse) || inverse == 0) return node;
    Expr product = call("mul", {x, scalar(inverse, kt)}, {}, d->origin);
    return call("erf", {product}, c->attrs, c->origin);
  }

  // reshape(reshape(x)) -> reshape(x); a reshape that keeps the shape -> x.
  static Expr simplify_reshape(Expr r) {
    infer_type(r);
    const auto* c = r.as<CallNode>();
    Expr x = c->args[0];
    if (const auto* inner = x.as<CallNode>(); op_name(inner) == "reshape") {
      x = inner->args[0];
      r = call("reshape", {x}, c->attrs);
      infer_type(r);
    }
    return checked_tensor(x)->shape == checked_tensor(r)->shape ? x : r;
  }

  std::unordered_map<const ExprNode*, int> readers_;
};

}  // namespace

Pass simplify_expr_pass() {
  return function_pass("SimplifyExpr", 1, [](const Function& f, PassContext&) { return Simplifier(f).mutate(f); });
}

}  // namespace tessera::relay_ir

// RowsBeforeProducts: a product by a 2-D weight treats each row of its left operand alone, so
// moving the product's rows (a Transpose that keeps the last axis last, after an optional Reshape
// that keeps the last dimension) is the same as moving the left operand's rows first:
//   transpose(reshape(A @ W, [L, N, E]), [1, 0, 2])  ==  transpose(reshape(A, [L, N, K]), [1, 0, 2]) @ W
// An exported nn.MultiheadAttention with batch_first=True ends each attention in
//   gemm(merge_heads(attention)) -> Reshape [L, N, E] -> Transpose [1, 0, 2] -> + residual;
// after the rewrite the transpose joins the copy that merges the heads (one data movement, in
// the left operand's kernel), and the residual sum joins the product as its epilogue: one pass
// over [N, L, E] less per layer. Only where nothing else reads the product or the reshape.
#include <optional>
#include <unordered_map>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"
#include "tensor_ir/op.h"

namespace tessera::relay_ir {

namespace {

tensor_ir::Expr last_dim(const Expr& e) {
  const Shape& s = checked_tensor(e)->shape;
  return s.dim(s.size() - 1);
}

class RowMover : public ExprMutator {
 public:
  explicit RowMover(const Expr& root) : readers_(reader_counts(root)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override {
    const auto* t = call_of(node, "transpose");
    if (!t) return node;
    infer_type(node);  // a node rebuilt over rewritten inputs is not typed yet
    const auto* out = checked_tensor(node);
    if (!out || out->ndim() < 2) return node;
    std::vector<int64_t> perm = t->attrs.get_ints("perm");
    if (perm.size() != out->ndim() || perm.back() != static_cast<int64_t>(out->ndim()) - 1) return node;
    // The product, under an optional reshape; `inner` walks the original graph alongside.
    const Expr reshaped = t->args[0];
    const ExprNode* inner = original.as<CallNode>()->args[0].get();
    const CallNode* reshape = call_of(reshaped, "reshape");
    Expr moved = reshaped;
    if (reshape) {
      if (readers_[inner] != 1 || !dims_equal(last_dim(reshaped), last_dim(reshape->args[0]))) return node;
      inner = static_cast<const CallNode*>(inner)->args[0].get();
      moved = reshape->args[0];
    }
    if (readers_[inner] != 1) return node;
    std::optional<Product> p = product_of(moved);
    if (!p) return node;
    // The same movement of the left operand's rows, whose last dimension is K, not E.
    Expr a = p->left;
    if (reshape) {
      std::vector<tensor_ir::Expr> dims = checked_tensor(reshaped)->shape.dims();
      dims.back() = last_dim(a);
      a = call("reshape", {a}, {{"shape", Shape(dims)}}, reshape->origin);
    }
    a = call("transpose", {a}, t->attrs, t->origin);
    Expr result = call("matmul", {a, p->weight}, {{"trans_b", p->trans_b}}, p->origin);
    if (p->bias.defined()) result = call("add", {result, p->bias}, {}, p->origin);
    infer_type(result);
    return result;
  }

 private:
  struct Product {
    Expr left, weight, bias;
    int64_t trans_b;
    std::string origin;
  };

  // A product of rows by an unpacked 2-D weight: matmul, or gemm whose alpha and beta are 1 and
  // whose C broadcasts along the rows.
  static std::optional<Product> product_of(const Expr& e) {
    if (const auto* m = call_of(e, "matmul")) {
      const auto* w = checked_tensor(m->args[1]);
      if (!w || w->ndim() != 2 || m->attrs.get_int("packed_columns") || checked_tensor(m->args[0])->ndim() < 2)
        return std::nullopt;
      return Product{m->args[0], m->args[1], Expr(), m->attrs.get_int("trans_b"), m->origin};
    }
    const auto* g = call_of(e, "gemm");
    if (!g || g->attrs.get_int("trans_a") || g->attrs.get_int("packed_columns") || g->attrs.get_float("alpha") != 1)
      return std::nullopt;
    Expr bias;
    if (g->args.size() > 2) {
      const auto* c = checked_tensor(g->args[2]);
      if (g->attrs.get_float("beta") != 1 || !c || (c->ndim() == 2 && !tensor_ir::is_const_int(c->shape.dim(0), 1)))
        return std::nullopt;
      bias = g->args[2];
    }
    return Product{g->args[0], g->args[1], bias, g->attrs.get_int("trans_b"), g->origin};
  }

  std::unordered_map<const ExprNode*, int> readers_;
};

}  // namespace

Pass rows_before_products_pass() {
  return function_pass("RowsBeforeProducts", 1, [](const Function& f, PassContext&) { return RowMover(f).mutate(f); });
}

}  // namespace tessera::relay_ir

// FoldBatchNorm: an inference batch_norm of a convolution's or matrix product's result, with
// every parameter known at compile time, becomes part of the product. Per output channel
// (axis 1) s = scale / sqrt(var + epsilon), and
//   batch_norm(conv(x, W, b))        -> conv(x, W * s, (b - mean) * s + bias)
//   batch_norm(gemm(A, B, C))        -> gemm(A, B * s, (beta * C - mean) * s + bias, beta=1)
//   batch_norm(matmul(A, B)) (2-D)   -> add(matmul(A, B * s), bias - mean * s)
// with s scaling W's first axis or B's columns. The new weights and biases are graph ops over
// the constants, which FoldConstant then evaluates. Only when nothing else reads the product
// (it would need the unnormalized value too), and when the parameters have the product's dtype.
#include <unordered_map>

#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/transforms/constant_values.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/match.h"
#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

namespace {

const TensorTypeNode& tensor(const Expr& e) { return as_tensor(e->checked_type, "operand"); }

Expr reshape(const Expr& x, std::vector<int64_t> shape) { return call("reshape", {x}, {{"shape", std::move(shape)}}); }

class BatchNormFolder : public ExprMutator {
 public:
  explicit BatchNormFolder(const Expr& root) : uses_(reader_counts(root)) {}

 protected:
  Expr rewrite(const Expr& original, const Expr& node) override { return constants_.record(fold(original, node)); }

 private:
  Expr fold(const Expr& original, const Expr& node) {
    const auto* bn = node.as<CallNode>();
    if (!bn || !bn->op_def() || bn->op_def()->name != "batch_norm") return node;
    if (uses_[original.as<CallNode>()->args[0].get()] != 1) return node;
    const auto* p = bn->args[0].as<CallNode>();
    if (!p || !p->op_def() || !constants_.contains(p->args[1])) return node;
    for (size_t i = 1; i < bn->args.size(); ++i)
      if (!constants_.contains(bn->args[i])) return node;
    if (p->args.size() > 2 && !constants_.contains(p->args[2])) return node;
    infer_type(node);
    const auto& y = tensor(bn->args[0]);
    for (size_t i = 1; i < bn->args.size(); ++i)
      if (tensor(bn->args[i]).dtype != y.dtype) return node;
    const Expr &scale = bn->args[1], &bias = bn->args[2], &mean = bn->args[3], &var = bn->args[4];
    Expr s = call("div", {scale, call("sqrt", {call("add", {var, scalar(bn->attrs.get_float("epsilon"), y.dtype)})})});
    // bias + (c - mean) * s, for the product's own bias c (undefined: none).
    auto shift = [&](const Expr& c) {
      return call("add", {call("mul", {c.defined() ? call("sub", {c, mean}) : call("neg", {mean}), s}), bias});
    };
    const std::string& name = p->op_def()->name;
    std::vector<Expr> args = p->args;
    Attrs attrs = p->attrs;
    if (name == "conv" && !attrs.get_int("packed_channels")) {
      std::vector<int64_t> per_channel(tensor(args[1]).ndim(), 1);
      per_channel[0] = y.shape[1];
      args[1] = call("mul", {args[1], reshape(s, per_channel)});
      Expr b = shift(args.size() > 2 ? args[2] : Expr());
      args.resize(2);
      args.push_back(b);
      return call(name, args, attrs, p->origin);
    }
    if (name == "gemm" && !attrs.get_int("packed_columns")) {
      bool trans = attrs.get_int("trans_b");
      args[1] = call("mul", {args[1], trans ? reshape(s, {y.shape[1], 1}) : s});
      Expr c;
      if (args.size() > 2) {
        double beta = attrs.get_float("beta");
        c = beta == 1 ? args[2] : call("mul", {args[2], scalar(beta, y.dtype)});
      }
      args.resize(2);
      args.push_back(shift(c));
      attrs.set("beta", 1.0);
      return call(name, args, attrs, p->origin);
    }
    if (name == "matmul" && !attrs.get_int("packed_columns") && !attrs.get_int("trans_b") && y.ndim() == 2 &&
        tensor(args[1]).ndim() == 2) {
      args[1] = call("mul", {args[1], s});
      return call("add", {call(name, args, attrs, p->origin), shift(Expr())}, {}, bn->origin);
    }
    return node;
  }

  std::unordered_map<const ExprNode*, int> uses_;
  ConstantValues constants_;
};

}  // namespace

Pass fold_batch_norm_pass() {
  return function_pass("FoldBatchNorm", 1,
                       [](const Function& f, PassContext&) { return BatchNormFolder(f).mutate(f); });
}

}  // namespace tessera::relay_ir

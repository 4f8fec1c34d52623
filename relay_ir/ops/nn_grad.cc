// Gradients of the nn family's ops.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/grad_util.h"
#include "relay_ir/transforms/infer_type.h"

namespace tessera::relay_ir {

namespace {

const TensorTypeNode& tensor(const Expr& e) { return as_tensor(infer_type(e), "value"); }

// x with its last two axes swapped.
Expr swap_last_two(const Expr& x) {
  size_t n = tensor(x).ndim();
  std::vector<int64_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[n - 1], perm[n - 2]);
  return call("transpose", {x}, {{"perm", perm}});
}

Expr reshape(const Expr& x, std::vector<int64_t> shape) { return call("reshape", {x}, {{"shape", shape}}); }

}  // namespace

void register_nn_gradients(OpRegistry& r) {
  // C = A @ B: dA = dC @ B^T and dB = A^T @ dC, batch axes summed back where they broadcast.
  r.set_gradient("matmul", [](const Expr& c, const Expr& g) {
    const auto* node = c.as<CallNode>();
    const Expr &a = node->args[0], &b = node->args[1];
    // A 1-D A is a row and a 1-D B a column: work with their matrix forms.
    Expr a2 = tensor(a).ndim() == 1 ? reshape(a, {1, tensor(a).shape[0]}) : a;
    Expr b2 = tensor(b).ndim() == 1 ? reshape(b, {tensor(b).shape[0], 1}) : b;
    Expr g2 = reshape(g, tensor(call("matmul", {a2, b2})).shape);
    Expr da = collapse_sum_to(call("matmul", {g2, swap_last_two(b2)}), a2->checked_type);
    Expr db = collapse_sum_to(call("matmul", {swap_last_two(a2), g2}), b2->checked_type);
    return std::vector<Expr>{reshape(da, tensor(a).shape), reshape(db, tensor(b).shape)};
  });
}

}  // namespace tessera::relay_ir

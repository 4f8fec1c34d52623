// Gradients of the transform family's ops: data movement runs backwards.
#include <numeric>

#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/grad_util.h"

namespace tessera::relay_ir {

void register_transform_gradients(OpRegistry& r) {
  // A reshape of the cotangent back to the input's shape.
  auto reshape_back = [](const Expr& c, const Expr& g) {
    const Expr& x = c.as<CallNode>()->args[0];
    return std::vector<Expr>{call("reshape", {g}, {{"shape", as_tensor(x->checked_type, "input").shape}})};
  };
  for (const char* op : {"reshape", "squeeze", "expand_dims"}) r.set_gradient(op, reshape_back);
  r.set_gradient("transpose", [](const Expr& c, const Expr& g) {
    const auto* call_node = c.as<CallNode>();
    std::vector<int64_t> perm = call_node->attrs.get_ints("perm");
    size_t n = as_tensor(call_node->args[0]->checked_type, "input").ndim();
    if (perm.empty()) {
      perm.resize(n);
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    std::vector<int64_t> inverse(n);
    for (size_t i = 0; i < n; ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    return std::vector<Expr>{call("transpose", {g}, {{"perm", inverse}})};
  });
  r.set_gradient("broadcast_to", [](const Expr& c, const Expr& g) {
    return std::vector<Expr>{collapse_sum_to(g, c.as<CallNode>()->args[0]->checked_type)};
  });
}

}  // namespace tessera::relay_ir

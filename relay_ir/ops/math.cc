// Elementwise, broadcasting and reduction operators.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/type_relations.h"
#include "tensor_ir/ops/math.h"

namespace tessera::relay_ir {

void register_math_ops(OpRegistry& r) {
  r.add({"relu", "max(x, 0)", 1, 1, {}, same_as_input, OpPattern::Elemwise,
         [](const auto& in, const Attrs&, const Type&) { return std::vector<tensor_ir::Tensor>{tensor_ir::ops::relu(in[0])}; }});
  r.add({"add", "x + y with numpy broadcasting", 2, 2, {}, broadcast_binary, OpPattern::Broadcast,
         [](const auto& in, const Attrs&, const Type&) { return std::vector<tensor_ir::Tensor>{tensor_ir::ops::add(in[0], in[1])}; }});
}

}  // namespace tessera::relay_ir

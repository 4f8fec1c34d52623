// The op families; each file in relay_ir/ops/ registers one. Adding a family is one line here
// and one in register_all_op_families (op_families.cc).
#pragma once

namespace tessera::relay_ir {

class OpRegistry;

void register_elementwise_ops(OpRegistry& r);
void register_all_op_families(OpRegistry& r);

}  // namespace tessera::relay_ir

// The parts of the math family's op registration (relay_ir/ops/math*.cc), which
// register_math_ops (math.cc) calls in turn.
#pragma once
#include <vector>

#include "relay_ir/op.h"

namespace tessera::relay_ir {

void register_math_activation_ops(OpRegistry& r);  // math_activation.cc
void register_math_reduce_ops(OpRegistry& r);      // math_reduce.cc
void register_math_quantize_ops(OpRegistry& r);    // math_quantize.cc

}  // namespace tessera::relay_ir

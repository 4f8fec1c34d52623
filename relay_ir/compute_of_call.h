// The tensor-level compute definition of one call of the graph: an op's compute, or for a fused
// primitive function the composition of its ops' computes. The driver schedules and compiles
// it; the tuner keys workloads by it and searches its schedules.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/expr.h"
#include "tensor_ir/tensor.h"

namespace tessera::relay_ir {

struct CallCompute {
  std::vector<tensor_ir::Tensor> inputs;   // placeholders p0, p1, ... shaped like the arguments
  std::vector<tensor_ir::Tensor> outputs;  // one per tensor of the call's type
  tensor_ir::Tensor anchor;                // a fused group's main op (highest pattern); else undefined
};

// `call` must be typed. Errors name the op (or fused group) and where it came from.
CallCompute compute_of_call(const CallNode* call);
// What the call computes: "conv" or "fused_conv_add_relu".
std::string call_description(const CallNode* call);
// The description plus the model node it came from, for messages.
std::string call_origin(const CallNode* call);

}  // namespace tessera::relay_ir

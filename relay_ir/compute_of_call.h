// The tensor-level compute definition of one call of the graph: an op's compute, or for a fused
// primitive function the composition of its ops' computes. The driver schedules and compiles
// it; the tuner keys workloads by it and searches its schedules.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/expr.h"
#include "schedule/hardware_params.h"
#include "tensor_ir/tensor.h"

namespace tessera::relay_ir {

struct CallCompute {
  std::vector<tensor_ir::Tensor> inputs;   // placeholders p0, p1, ... shaped like the arguments
  std::vector<tensor_ir::Tensor> outputs;  // one per tensor of the call's type
  tensor_ir::Tensor anchor;                // a fused group's main op (highest pattern); else undefined
  schedule::HardwareParams hardware;       // what it was defined for; its schedules are made for it too
};

// `call` must be typed. Its ops' computes see the registers of `hardware` (the target's) as the
// attributes "vector_bytes" and "vector_registers" (read by with_registers), which size packed
// layouts and tiles. Errors name the op (or fused group) and where it came from.
CallCompute compute_of_call(const CallNode* call, const schedule::HardwareParams& hardware);
// The attributes an op's compute sees: the call's, with the registers of `hardware` unless the
// call names those its operands were packed for.
Attrs with_registers(const Attrs& attrs, const schedule::HardwareParams& hardware);
// `attrs` naming `regs` as the registers, whatever they named before.
Attrs set_registers(Attrs attrs, const tensor_ir::ops::Registers& regs);
// The registers in attributes from with_registers; throws naming the op when they are missing.
tensor_ir::ops::Registers registers_of(const Attrs& attrs, const std::string& op);
// The calls of ops inside a primitive function, producers first.
std::vector<const CallNode*> member_calls(const FunctionNode* f);
// What the call computes: "conv" or "fused_conv_add_relu".
std::string call_description(const CallNode* call);
// The description plus the model node it came from, for messages.
std::string call_origin(const CallNode* call);

}  // namespace tessera::relay_ir

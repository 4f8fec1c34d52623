// One call of the graph as one kernel: placeholders shaped like its arguments, the compute
// definitions of its op (or, for a fused primitive function, of every op in it, composed), the
// default schedule of the anchor op's tag, lowered to a LoweredFunc.
#pragma once
#include <string>

#include "relay_ir/expr.h"
#include "tensor_ir/stmt.h"

namespace tessera::driver {

struct LoweredCall {
  tensor_ir::LoweredFunc func;   // arguments: the call's inputs, then its outputs
  size_t num_outputs = 0;
};

// `call` must be typed (InferType). Errors name the op and the call's origin.
LoweredCall lower_call(const relay_ir::CallNode* call, const std::string& kernel_name);

// A key that is equal for calls that compile to the same kernel (op, attributes, types).
std::string kernel_key(const relay_ir::CallNode* call);
// What the kernel computes, for names and messages: "conv" or "fused_conv_add_relu".
std::string kernel_description(const relay_ir::CallNode* call);

}  // namespace tessera::driver

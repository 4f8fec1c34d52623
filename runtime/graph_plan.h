// What a compiled graph runs, as plain data the runtime needs no compiler to follow: its
// tensors (inputs, outputs, constants, intermediates in slots of one memory arena), and the
// steps that call kernels on them. The driver makes it; the deployment format will store it.
#pragma once
#include <string>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::runtime {

struct GraphPlan {
  struct TensorInfo {
    enum Kind { Input, Output, Constant, Intermediate } kind;
    std::string name;
    std::vector<int64_t> shape;
    DataType dtype;
    int index = -1;  // Input/Output: position; Constant: into constants; Intermediate: arena slot
  };
  struct Step {
    std::string kernel;    // empty: copy args[0] into args[1]
    std::vector<int> args;  // tensor ids, in the kernel's argument order
  };
  std::vector<TensorInfo> tensors;
  std::vector<Step> steps;
  std::vector<int> inputs, outputs;     // tensor ids, in the graph's order
  std::vector<NDArray> constants;
  std::vector<int64_t> slot_offsets;    // byte offset of each arena slot (64-byte aligned)
  int64_t arena_bytes = 0;
};

}  // namespace tessera::runtime

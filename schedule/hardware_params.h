// What the default schedules, the graph's layout choices and the tuner's sketch rules need to
// know of the machine a kernel is built for: its vector registers (width and count). The target
// fills it (targets::Target::hardware(), from the CPU's features); nothing below the targets
// assumes a width, and a schedule made without it cannot use the default templates.
#pragma once
#include "runtime/data_type.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::schedule {

struct HardwareParams {
  tensor_ir::ops::Registers registers;  // unset (0): not known, which templates refuse

  bool defined() const { return registers.vector_bytes > 0 && registers.count > 0; }
  // Lanes of one register for elements of `dtype` (float16 computes in float32 registers, bool
  // is stored as bytes); throws when the hardware is not known.
  int lanes(runtime::DataType dtype) const;
};

}  // namespace tessera::schedule

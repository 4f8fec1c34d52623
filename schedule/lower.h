// Lowering: a schedule and the tensors a kernel takes become one LoweredFunc, through a
// straight-line sequence of steps (each printed to TESSERA_DUMP_IR when it names a folder, or
// to stderr when it is "1"):
//   bound inference -> loop nest -> storage flattening -> simplify -> loop partitioning ->
//   simplify -> vectorization -> legalization -> simplify.
#pragma once
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "tensor_ir/stmt.h"

namespace tessera::schedule {

// `args` are the kernel's buffers in calling order: inputs and outputs (every output of the
// schedule must be among them).
tensor_ir::LoweredFunc lower(Schedule& schedule, const std::vector<Tensor>& args, const std::string& name = "main");

}  // namespace tessera::schedule

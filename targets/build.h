// The one entry from lowered kernels to runnable code: picks the code generator for a target.
// Callers that do not care which backend runs (driver, Python, tuner) use this, never a
// backend's own header.
#pragma once
#include <memory>
#include <vector>

#include "runtime/module.h"
#include "targets/target.h"
#include "tensor_ir/stmt.h"

namespace tessera::targets {

// Compiles `funcs` for `target` into a module whose kernels can be called in this process.
// Throws tessera::Error if the target has no code generator yet or cannot run here.
std::shared_ptr<runtime::Module> build(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

}  // namespace tessera::targets

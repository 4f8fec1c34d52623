// The host/device split: a lowered function whose loops are bound to thread axes becomes a
// DeviceProgram, the kernels the host launches in order with their grids, and the global buffers
// (workspace) the host allocates to pass data between them. Code generators for devices print
// each kernel; the runtime launches them (runtime/device_program.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

// One kernel launch. `func.args` are the buffers the kernel reads or writes, in the order of the
// program's arguments, then its workspace. Each ThreadExtent of the body has the launch's extent
// for its tag: where a tag was bound with a smaller extent, that body is guarded by var < extent.
// Block extents are constants; grid extents may be expressions of the function's symbolic
// dimensions, whose values the kernel then takes after its buffers (func.shape_vars).
struct DeviceKernel {
  LoweredFunc func;
  std::array<Expr, 3> grid{Expr(1), Expr(1), Expr(1)};  // blockIdx.x, .y, .z extents
  std::array<int64_t, 3> block{1, 1, 1};  // threadIdx.x, .y, .z extents
  int64_t shared_bytes = 0;               // the kernel's shared buffers together
  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

struct DeviceProgram {
  std::string name;
  std::vector<Buffer> args;       // the function's arguments, in calling order
  std::vector<Var> shape_vars;    // the function's symbolic dimensions
  std::vector<Buffer> workspace;  // global buffers the host allocates for the kernels
  std::vector<DeviceKernel> kernels;
};

// Each top-level statement of `func` (under its outermost allocations, which become workspace)
// is one kernel, named `func.name`_kernelN, but for a launch of zero blocks or threads (an empty
// tensor's stage), which does nothing and is dropped. Throws, naming the kernel, for a threadIdx extent that
// is not a constant, a thread axis bound inside itself, a shared buffer allocated outside every
// kernel and a buffer that is neither an argument nor allocated. Statements outside every thread
// extent are kept: verify_device_program refuses them.
DeviceProgram split_host_device(const LoweredFunc& func);

// The buffers `s` loads or stores that it does not allocate itself, each once, in first-use order.
std::vector<Buffer> free_buffers(const Stmt& s);

}  // namespace tessera::tensor_ir

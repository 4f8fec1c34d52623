// Kernels as C-family source: portable C99 for CPUs without an LLVM backend, OpenCL C and CUDA C
// for devices, all printed by one printer (source_printer.h) with a dialect each. The device
// dialects print a verified DeviceProgram's kernels; the c dialect prints CPU kernels with the
// runtime's kernel ABI (runtime/kernel.h).
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/transforms/split_host_device.h"

namespace tessera::targets::source {

// Each kernel as `int32_t name(void* const* args, int32_t num_args)` (extern, default visibility):
// -1 for a wrong argument count, -2 when a large local buffer cannot be allocated. Parallel loops
// run on the runtime's thread pool through the hooks of runtime::kRuntimeHooks. Throws, naming
// the kernel, for what C99 cannot express here (vectors, float16, thread extents).
std::string print_c(const std::vector<tensor_ir::LoweredFunc>& funcs);

// __kernel functions with __global buffer parameters and their launch's reqd_work_group_size.
// float16 buffers are read and written with vload_half/vstore_half (core OpenCL, no cl_khr_fp16).
std::string print_opencl(const tensor_ir::DeviceProgram& program);

// extern "C" __global__ functions with __launch_bounds__ of their block; float16 through
// cuda_fp16.h's __half.
std::string print_cuda(const tensor_ir::DeviceProgram& program);

}  // namespace tessera::targets::source

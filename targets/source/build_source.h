// The targets whose code is C-family source (source_dialects.h) finished by another compiler:
// c (the system's C compiler, loaded in process), opencl (the OpenCL driver, when a program first
// runs on a device) and cuda (NVRTC to PTX, checked by ptxas; the CUDA driver loads it). Internal
// to targets; build.h dispatches to them.
#pragma once
#include <memory>
#include <vector>

#include "runtime/module.h"
#include "targets/build.h"
#include "targets/target.h"
#include "tensor_ir/stmt.h"
#include "tensor_ir/transforms/verify_device.h"

namespace tessera::targets {

// The c target: C99 compiled by cc into a shared library with the kernel ABI, loaded in this
// process. source("c") is the C.
std::shared_ptr<runtime::Module> build_c(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// The same library for an exported module: for the host's architecture, using no extension beyond
// its baseline (the C compiler's default).
SharedLibrary build_c_shared_library(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// The opencl and cuda targets: each function split into kernels, verified against
// device_limits(target) and printed; a module of device programs, one per function.
// source("cl") / source("cuda"), and for cuda source("ptx") and source("ptxas") (registers and
// shared memory per kernel).
std::shared_ptr<runtime::Module> build_device(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// What one block may use on `target`'s devices: its device's attributes (find_device) where the
// machine has it, else the target's defaults (cuda: 1024 threads, 48 KiB static shared memory for every sm_XX;
// opencl: 256 work-items and 32 KiB of local memory, what most OpenCL GPUs give).
tensor_ir::DeviceLimits device_limits(const Target& target);

// What GPU schedules size themselves by (Target::hardware): device_limits(target), the target's
// warp, and whether its blocks have shared memory on the chip: its device's answer where the
// machine has it (PoCL's CPU device has none), else true (every CUDA GPU, most OpenCL GPUs).
schedule::GpuParams gpu_params(const Target& target);

// The sm_XX a cuda target compiles for: its -arch, else the first CUDA device's.
std::string cuda_arch(const Target& target);

}  // namespace tessera::targets

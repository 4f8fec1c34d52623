// The one entry from lowered kernels to runnable code: picks the code generator for a target.
// Callers that do not care which backend runs (driver, Python, tuner) use this, never a
// backend's own header.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "targets/target.h"
#include "tensor_ir/stmt.h"

namespace tessera::targets {

// Compiles `funcs` for `target` into a module whose kernels can be called in this process.
// Throws tessera::Error if the target has no code generator yet or cannot run here.
std::shared_ptr<runtime::Module> build(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// `funcs` compiled for `target` (any CPU or triple the backend knows) and linked by the system's
// linker into a shared library, with what the runtime checks before loading it.
struct SharedLibrary {
  std::string bytes;                      // the ELF shared object
  std::string target;                     // `target` with triple and CPU resolved
  std::string arch;                       // "x86_64", "aarch64"
  std::vector<std::string> cpu_features;  // the extensions the code may use (runtime/cpu_features.h)
};
SharedLibrary build_shared_library(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// Writes each of `funcs` compiled for `target` as files a person can read into `dir` (made if
// missing): NAME.ll for llvm, NAME.c for c, NAME.cl for opencl, NAME.cu, NAME.ptx and
// NAME.ptxas.txt (registers and shared memory per kernel) for cuda. Returns the paths written.
// Throws what building throws (for a device target, the verifier's refusal naming the kernel).
std::vector<std::string> write_sources(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target,
                                       const std::string& dir);

// `target` with what it leaves to the machine's device spelled out: a cuda target without -arch
// gets the first CUDA device's (what build() compiles for). Other targets are returned as given.
Target with_device_defaults(const Target& target);

// The target string tuning records of `target` are keyed by: the CPU (with_host_defaults) or the
// device (with_device_defaults; an opencl target without -device, the first OpenCL device's name
// where there is one) spelled out, so that times measured on one are not taken for another's.
std::string tuning_key(const Target& target);

// The device of this machine that `target` describes: for opencl the first device of its
// -device name (or the first device, without one), for cuda the first CUDA device, for CPU
// targets the CPU. None when the driver or that device is missing.
std::optional<runtime::Device> find_device(const Target& target);
// The same, or an Error naming the target and the devices there are.
runtime::Device device_of(const Target& target);

// The calling signature of a lowered kernel (argument names, constant shapes, dtypes).
runtime::KernelSignature kernel_signature(const tensor_ir::LoweredFunc& func);

}  // namespace tessera::targets

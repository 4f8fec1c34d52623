// The LLVM CPU code generator: lowered kernels become LLVM IR (explicit vector types, fast-math
// that keeps NaN and infinity semantics, the target's CPU features), go through LLVM's O3
// pipeline, and are JIT-compiled in process or written as an object file for export.
//
// Every kernel is exported as `int32_t name(void* const* args, int32_t num_args)`
// (runtime/kernel.h). Nonzero statuses it returns are the kStatus values below.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "targets/target.h"
#include "tensor_ir/stmt.h"

namespace tessera::targets {

// A kernel was called with a number of arguments other than its signature's.
constexpr int32_t kStatusBadArgumentCount = -1;
// A local buffer too large for the stack could not be allocated.
constexpr int32_t kStatusOutOfMemory = -2;

// Compiles and JIT-links `funcs`. The module's kernels carry their signatures (argument names,
// constant shapes, dtypes); source("ll") is the optimized LLVM IR, source("asm") the assembly.
// Throws tessera::Error if `target` is not an llvm target this host can run.
std::shared_ptr<runtime::Module> build_llvm(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target);

// Writes `funcs` compiled for `target` (which may be another CPU or triple) as a relocatable,
// position-independent ELF object to `path`; its undefined symbols are libm/libc functions and
// the runtime's tessera_parallel_launch / tessera_num_threads.
// The runtime's functions are reached through hooks the loader sets (runtime::kRuntimeHooks).
void emit_object_file(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target, const std::string& path);

// What an object emitted for `target` runs on: the normalized triple, LLVM's architecture name
// ("x86_64", "aarch64"), the target with triple and CPU resolved, and the instruction-set
// extensions the code may use among those the runtime can detect (runtime/cpu_features.h).
struct ObjectTarget {
  std::string triple, arch, target;
  std::vector<std::string> cpu_features;
};
ObjectTarget describe_object_target(const Target& target);

}  // namespace tessera::targets

// Loading an exported module (module_file.h) with the runtime alone: validate the file, check that
// its code is for this architecture and that this CPU has every feature the code was compiled
// for, and only then hand the code to the dynamic loader. The result is a ready GraphExecutor
// whose constants are the file's mapped weights. A module for a device (opencl, cuda) has no host
// code: its device programs run on a device of their kind, where its constants are uploaded. The
// plans a module holds for hot sizes serve the calls of those sizes (GraphExecutor::specialize). A
// module of a program (format 6) gives a ProgramModule instead, its stages' executors sharing the
// code.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/program_module.h"

namespace tessera::runtime {

struct LoadedModule {
  std::shared_ptr<GraphExecutor> executor;  // runs on executor->device(); null for a program
  std::shared_ptr<ProgramModule> program;   // a model with control flow or data-dependent shapes
  std::string target;  // what the code was compiled for
  std::string arch;  // empty for a device module
  std::vector<std::string> cpu_features;  // the features it needs (all present on this CPU)
  uint32_t format_version = 0;
  uint64_t file_size = 0;
};

// On `device`, which must be of the module's kind: the CPU for CPU code, else an OpenCL or CUDA
// device; by default the CPU or the first device of the module's kind. Throws tessera::Error
// naming `path` and why it cannot run here (the device, or its driver, missing among them).
LoadedModule load_module(const std::string& path, std::optional<Device> device = std::nullopt);

// The kernels `signatures` of the shared library at `path` (compiled for this host by a target),
// with its runtime hooks set (kernel.h); the library stays loaded while any of them lives.
std::shared_ptr<Module> open_kernel_library(const std::string& path, const std::vector<KernelSignature>& signatures);

}  // namespace tessera::runtime

// Loading an exported module (module_file.h) with the runtime alone: validate the file, check that
// its code is for this architecture and that this CPU has every feature the code was compiled
// for, and only then hand the code to the dynamic loader. The result is a ready GraphExecutor
// whose constants are the file's mapped weights.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"

namespace tessera::runtime {

struct LoadedModule {
  std::shared_ptr<GraphExecutor> executor;
  std::string target;  // what the code was compiled for
  std::string arch;
  std::vector<std::string> cpu_features;  // the features it needs (all present on this CPU)
  uint32_t format_version = 0;
  uint64_t file_size = 0;
};

// Throws tessera::Error naming `path` and why it cannot run here.
LoadedModule load_module(const std::string& path);

// The kernels `signatures` of the shared library at `path` (compiled for this host by a target),
// with its runtime hooks set (kernel.h); the library stays loaded while any of them lives.
std::shared_ptr<Module> open_kernel_library(const std::string& path, const std::vector<KernelSignature>& signatures);

}  // namespace tessera::runtime

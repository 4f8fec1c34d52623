#include "driver/export.h"

#include "runtime/module_file.h"
#include "targets/build.h"

namespace tessera::driver {

void export_module(const BuildResult& result, const std::string& path) {
  targets::SharedLibrary library = targets::build_shared_library(result.lowered, result.target);
  runtime::ModuleMetadata metadata;
  metadata.target = library.target;
  metadata.arch = library.arch;
  metadata.cpu_features = library.cpu_features;
  for (const auto& f : result.lowered) metadata.kernels.push_back(targets::kernel_signature(f));
  metadata.plan = result.plan;
  runtime::write_module_file(path, library.bytes, metadata);
}

}  // namespace tessera::driver

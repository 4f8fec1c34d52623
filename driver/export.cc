#include "driver/export.h"

#include "runtime/error.h"

#include "runtime/device_program.h"
#include "runtime/module_file.h"
#include "targets/build.h"

namespace tessera::driver {

namespace {

// A device target's module holds its device programs (code and launch plans) and no host code:
// the ones built in this process, else compiled now (OpenCL C needs no device, PTX only NVRTC).
runtime::ModuleMetadata device_metadata(const BuildResult& result) {
  std::shared_ptr<const runtime::Module> module =
      result.executor ? nullptr : targets::build(result.lowered, result.target);
  const runtime::Module& code = result.executor ? result.executor->kernels() : *module;
  runtime::ModuleMetadata metadata;
  metadata.target = targets::with_device_defaults(result.target).str();
  for (const auto& f : result.lowered) metadata.device_programs.push_back(code.device_program(f.name)->spec());
  return metadata;
}

}  // namespace

void export_module(const BuildResult& result, const std::string& path) {
  if (result.target.device_type() != runtime::DeviceType::CPU) {
    runtime::ModuleMetadata metadata = device_metadata(result);
    metadata.plan = result.plan;
    runtime::write_module_file(path, "", metadata);
    return;
  }
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

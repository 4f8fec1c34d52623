#include "driver/export.h"

#include "runtime/device_program.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "targets/build.h"

namespace tessera::driver {

namespace {

// A kernel's name in a module that holds several builds: the first build's keep theirs, hot
// build b's are "hot<b>_<name>".
std::string renamed(const std::string& kernel, size_t build) {
  return build == 0 ? kernel : "hot" + std::to_string(build) + "_" + kernel;
}

runtime::GraphPlan renamed(runtime::GraphPlan plan, size_t build) {
  for (auto& step : plan.steps)
    if (!step.kernel.empty()) step.kernel = renamed(step.kernel, build);
  return plan;
}

// A device target's module holds its device programs (code and launch plans) and no host code:
// the ones built in this process, else compiled now (OpenCL C needs no device, PTX only NVRTC).
void add_device_programs(const BuildResult& result, size_t build, runtime::ModuleMetadata& metadata) {
  std::shared_ptr<const runtime::Module> module =
      result.executor ? nullptr : targets::build(result.lowered, result.target);
  const runtime::Module& code = result.executor ? result.executor->kernels() : *module;
  for (const auto& f : result.lowered) {
    runtime::DeviceProgramSpec spec = code.device_program(f.name)->spec();
    spec.name = renamed(spec.name, build);
    metadata.device_programs.push_back(std::move(spec));
  }
}

}  // namespace

void export_module(const BuildResult& result, const std::string& path,
                   const std::vector<std::shared_ptr<const BuildResult>>& hot) {
  std::vector<const BuildResult*> builds{&result};
  runtime::ModuleMetadata metadata;
  metadata.plan = result.plan;
  for (const auto& h : hot) {
    if (h->target.str() != result.target.str())
      fail("export: a build of hot sizes is for '", h->target.str(), "', the model's for '", result.target.str(), "'");
    metadata.specialized.push_back(renamed(h->plan, builds.size()));
    runtime::hot_sizes_of(result.plan, metadata.specialized.back());  // what loading checks, checked now
    builds.push_back(h.get());
  }
  if (result.target.device_type() != runtime::DeviceType::CPU) {
    metadata.target = targets::with_device_defaults(result.target).str();
    for (size_t b = 0; b < builds.size(); ++b) add_device_programs(*builds[b], b, metadata);
    runtime::write_module_file(path, "", metadata);
    return;
  }
  std::vector<tensor_ir::LoweredFunc> lowered;
  for (size_t b = 0; b < builds.size(); ++b)
    for (tensor_ir::LoweredFunc f : builds[b]->lowered) {
      f.name = renamed(f.name, b);
      lowered.push_back(std::move(f));
    }
  targets::SharedLibrary library = targets::build_shared_library(lowered, result.target);
  metadata.target = library.target;
  metadata.arch = library.arch;
  metadata.cpu_features = library.cpu_features;
  for (const auto& f : lowered) metadata.kernels.push_back(targets::kernel_signature(f));
  runtime::write_module_file(path, library.bytes, metadata);
}

void export_module(ShapeSpecializedBuild& model, const std::string& path) {
  std::shared_ptr<const BuildResult> every_size = model.symbolic_now();
  if (!every_size)
    fail("export: the model is built per size (", model.symbolic_reason(),
         "), and a module holds a build for every size; export the build of one size");
  std::vector<std::shared_ptr<const BuildResult>> hot;
  for (const auto& size : model.hot_sizes()) hot.push_back(model.specialized(model.shapes_at(size)));
  export_module(*every_size, path, hot);
}

}  // namespace tessera::driver

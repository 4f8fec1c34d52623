#include "driver/export.h"

#include "runtime/device_program.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "targets/build.h"

namespace tessera::driver {

namespace {

// A build whose kernels (or device programs) a module holds, renamed with `prefix` when it holds
// several builds: the first build's keep their names, hot build b's are "hot<b>_<name>", a
// program's stage s's "stage<s>_<name>".
struct Part {
  const BuildResult* build;
  std::string prefix;
};

runtime::GraphPlan renamed(runtime::GraphPlan plan, const std::string& prefix) {
  for (auto& step : plan.steps)
    if (!step.kernel.empty()) step.kernel = prefix + step.kernel;
  return plan;
}

// A device target's module holds its device programs (code and launch plans) and no host code:
// the ones built in this process, else compiled now (OpenCL C needs no device, PTX only NVRTC).
void add_device_programs(const Part& part, runtime::ModuleMetadata& metadata) {
  const BuildResult& result = *part.build;
  std::shared_ptr<const runtime::Module> module =
      result.executor ? nullptr : targets::build(result.lowered, result.target);
  const runtime::Module& code = result.executor ? result.executor->kernels() : *module;
  for (const auto& f : result.lowered) {
    runtime::DeviceProgramSpec spec = code.device_program(f.name)->spec();
    spec.name = part.prefix + spec.name;
    metadata.device_programs.push_back(std::move(spec));
  }
}

// Compiles the parts' kernels for `target` into `metadata`'s code and writes the module.
void write_parts(const std::vector<Part>& parts, const targets::Target& target, runtime::ModuleMetadata& metadata,
                 const std::string& path) {
  for (const Part& p : parts)
    if (p.build->target.str() != target.str())
      fail("export: a build in the module is for '", p.build->target.str(), "', the model's for '", target.str(), "'");
  if (target.device_type() != runtime::DeviceType::CPU) {
    metadata.target = targets::with_device_defaults(target).str();
    for (const Part& p : parts) add_device_programs(p, metadata);
    runtime::write_module_file(path, "", metadata);
    return;
  }
  std::vector<tensor_ir::LoweredFunc> lowered;
  for (const Part& p : parts)
    for (tensor_ir::LoweredFunc f : p.build->lowered) {
      f.name = p.prefix + f.name;
      lowered.push_back(std::move(f));
    }
  targets::SharedLibrary library = targets::build_shared_library(lowered, target);
  metadata.target = library.target;
  metadata.arch = library.arch;
  metadata.cpu_features = library.cpu_features;
  for (const auto& f : lowered) metadata.kernels.push_back(targets::kernel_signature(f));
  runtime::write_module_file(path, library.bytes, metadata);
}

}  // namespace

void export_module(const BuildResult& result, const std::string& path,
                   const std::vector<std::shared_ptr<const BuildResult>>& hot) {
  std::vector<Part> parts{{&result, ""}};
  runtime::ModuleMetadata metadata;
  metadata.plan = result.plan;
  for (const auto& h : hot) {
    const std::string prefix = "hot" + std::to_string(parts.size()) + "_";
    metadata.specialized.push_back(renamed(h->plan, prefix));
    runtime::hot_sizes_of(result.plan, metadata.specialized.back());  // what loading checks, checked now
    parts.push_back({h.get(), prefix});
  }
  write_parts(parts, result.target, metadata, path);
}

void export_module(const ProgramBuild& program, const std::string& path) {
  std::vector<Part> parts;
  runtime::ModuleMetadata metadata;
  metadata.program = program.plan;
  for (size_t s = 0; s < program.stages.size(); ++s) {
    const std::string prefix = "stage" + std::to_string(s) + "_";
    metadata.stages.push_back(renamed(program.stages[s]->plan, prefix));
    parts.push_back({program.stages[s].get(), prefix});
  }
  write_parts(parts, program.target, metadata, path);
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

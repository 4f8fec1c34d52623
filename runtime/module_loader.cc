#include "runtime/module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "runtime/cpu_features.h"
#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "runtime/thread_pool.h"

namespace tessera::runtime {

namespace {

std::string arch_of_elf_machine(uint16_t machine) {
  switch (machine) {
    case 62:
      return "x86_64";
    case 183:
      return "aarch64";
    default:
      return "ELF machine " + std::to_string(machine);
  }
}

void* runtime_function(const std::string& name) {
  if (name == "tessera_parallel_launch") return reinterpret_cast<void*>(&tessera_parallel_launch);
  if (name == "tessera_num_threads") return reinterpret_cast<void*>(&tessera_num_threads);
  fail("internal error: no runtime function '", name, "' for its hook");
}

// Kernels looked up in a library opened by dlopen; the handle closes with the last of them.
// The library's descriptor stays open until then: the loader knows it by the name
// /proc/self/fd/N, so a module opened later through a reused N would be handed its code.
class SharedLibraryModule final : public Module {
 public:
  SharedLibraryModule(const std::string& path, void* handle, std::shared_ptr<int> fd,
                      const std::vector<KernelSignature>& signatures)
      : path_(path), handle_(handle, [fd](void* h) { dlclose(h); }) {
    for (const auto& hook : kRuntimeHooks)
      if (void* slot = dlsym(handle, hook.hook)) *static_cast<void**>(slot) = runtime_function(hook.function);
    for (const KernelSignature& s : signatures) {
      void* fn = dlsym(handle, s.name.c_str());
      if (!fn) fail("cannot load module '", path, "': its code has no kernel '", s.name, "'");
      kernels_.emplace_back(s, reinterpret_cast<TesseraKernelFn>(fn), handle_);
    }
  }

  Kernel get_kernel(const std::string& name) const override {
    for (const auto& k : kernels_)
      if (k.name() == name) return k;
    fail("module '", path_, "' has no kernel '", name, "'");
  }
  std::vector<std::string> kernel_names() const override {
    std::vector<std::string> names;
    for (const auto& k : kernels_) names.push_back(k.name());
    return names;
  }
  std::string source(const std::string& format) const override {
    fail("module '", path_, "' was loaded from a file: it has machine code only, no '", format, "' source");
  }

 private:
  std::string path_;
  std::shared_ptr<void> handle_;
  std::vector<Kernel> kernels_;
};

}  // namespace

std::shared_ptr<Module> open_kernel_library(const std::string& path, const std::vector<KernelSignature>& signatures) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail("cannot load the kernel library '", path, "': ", dlerror());
  return std::make_shared<SharedLibraryModule>(path, handle, nullptr, signatures);
}

namespace {

// PTX for sm_XY runs on devices of compute capability X.Y and later only.
void check_cuda_arch(const ModuleFile& file, Device device) {
  const std::string& target = file.metadata.target;
  const size_t at = target.find("-arch=sm_");
  if (at == std::string::npos) fail("corrupt: its target names no -arch");
  const int needed = std::atoi(target.c_str() + at + 9);
  const DeviceAttributes& a = DeviceAPI::get(device).attributes();
  const int has = a.compute_capability_major * 10 + a.compute_capability_minor;
  if (has < needed)
    fail("the device (", a.name, ", sm_", has, ") is older than the code's sm_", needed, "; build it for -arch=sm_", has);
}

// A module's code and the device it runs on.
struct Code {
  std::shared_ptr<const Module> kernels;
  Device device = Device::cpu();
};

// The device programs of `file` on `device` (by default the first of their kind).
Code device_code(const ModuleFile& file, std::optional<Device> device) {
  const ModuleMetadata& m = file.metadata;
  const DeviceType kind = device_type_of(m.device_programs.front().format);
  const Device on = device.value_or(Device{kind, 0});
  if (on.type != kind)
    fail("cannot load module '", file.path, "' on ", on.str(), ": it was built for ", device_type_name(kind),
         " devices (target '", m.target, "')");
  std::vector<std::shared_ptr<const DeviceProgram>> programs;
  for (const DeviceProgramSpec& spec : m.device_programs) programs.push_back(std::make_shared<DeviceProgram>(spec));
  try {
    if (kind == DeviceType::CUDA) check_cuda_arch(file, on);
  } catch (const Error& e) {
    fail("cannot load module '", file.path, "' (target '", m.target, "') on ", on.str(), ": ", e.what());
  }
  return {std::make_shared<DeviceProgramModule>(std::move(programs)), on};
}

Code cpu_code(const ModuleFile& file, std::optional<Device> device) {
  const std::string& path = file.path;
  const ModuleMetadata& m = file.metadata;
  if (device && device->type != DeviceType::CPU)
    fail("cannot load module '", path, "' on ", device->str(), ": it holds CPU code (target '", m.target,
         "'); build the model for ", device_type_name(device->type), " to run it there");
  const std::string code_arch = arch_of_elf_machine(file.elf_machine);
  if (code_arch != m.arch)
    fail("cannot load module '", path, "': corrupt: its code is for ", code_arch, ", its metadata says ", m.arch);
  if (code_arch != host_arch())
    fail("cannot load module '", path, "': it was compiled for ", code_arch, " (target '", m.target,
         "'), this host is ", host_arch());
  std::vector<std::string> missing = missing_cpu_features(m.cpu_features);
  if (!missing.empty()) {
    std::string list;
    for (const auto& f : missing) list += (list.empty() ? "" : ", ") + f;
    fail("cannot load module '", path, "': its code (target '", m.target,
         "') needs CPU features this host lacks: ", list);
  }
  // Through the descriptor that was validated, so the loader maps the bytes that were checked.
  const std::string fd_path = "/proc/self/fd/" + std::to_string(*file.fd);
  void* handle = dlopen(access(fd_path.c_str(), R_OK) == 0 ? fd_path.c_str() : path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail("cannot load module '", path, "': the dynamic loader refused its code: ", dlerror());
  return {std::make_shared<SharedLibraryModule>(path, handle, file.fd, m.kernels)};
}

// An executor of `plan` with `code`; a device's uploads the constants now, so a missing driver or
// device fails here, naming it.
std::shared_ptr<GraphExecutor> executor_of(const ModuleFile& file, const Code& code, const GraphPlan& plan) {
  try {
    return std::make_shared<GraphExecutor>(code.kernels, plan, code.device);
  } catch (const Error& e) {
    fail("cannot load module '", file.path, "' (target '", file.metadata.target, "') on ", code.device.str(), ": ",
         e.what());
  }
}

}  // namespace

LoadedModule load_module(const std::string& path, std::optional<Device> device) {
  ModuleFile file = read_module_file(path);
  const ModuleMetadata& m = file.metadata;
  LoadedModule loaded;
  const Code code = m.device_programs.empty() ? cpu_code(file, device) : device_code(file, device);
  if (m.program) {
    std::vector<std::shared_ptr<GraphExecutor>> stages;
    for (const GraphPlan& stage : m.stages) stages.push_back(executor_of(file, code, stage));
    loaded.program = std::make_shared<ProgramModule>(m.program, std::move(stages));
  } else {
    loaded.executor = executor_of(file, code, m.plan);
  }
  for (const GraphPlan& hot : m.specialized) {
    try {
      loaded.executor->specialize(hot);
    } catch (const Error& e) {
      fail("cannot load module '", path, "': ", e.what());
    }
  }
  loaded.target = m.target;
  loaded.arch = m.arch;
  loaded.cpu_features = m.cpu_features;
  loaded.format_version = file.format_version;
  loaded.file_size = file.file_size;
  return loaded;
}

}  // namespace tessera::runtime

#include "targets/source/build_source.h"

#include <fstream>
#include <map>
#include <sstream>

#include "runtime/cpu_features.h"
#include "runtime/device_program.h"
#include "runtime/error.h"
#include "runtime/module_loader.h"
#include "targets/build.h"
#include "targets/cuda/nvrtc.h"
#include "targets/link_shared.h"
#include "targets/run_program.h"
#include "targets/source/source_dialects.h"
#include "targets/temp_dir.h"
#include "tensor_ir/shape_expr.h"

namespace tessera::targets {

namespace {

// A module of source-built code (the CPU kernels of a c build, or device programs) with the
// generated text in each format.
class SourceModule final : public runtime::Module {
 public:
  SourceModule(std::shared_ptr<const runtime::Module> code, std::map<std::string, std::string> sources)
      : code_(std::move(code)), sources_(std::move(sources)) {}

  runtime::Kernel get_kernel(const std::string& name) const override { return code_->get_kernel(name); }
  std::vector<std::string> kernel_names() const override { return code_->kernel_names(); }
  std::string source(const std::string& format) const override {
    auto it = sources_.find(format);
    if (it != sources_.end()) return it->second;
    std::string formats;
    for (const auto& [f, text] : sources_) formats += (formats.empty() ? "" : ", ") + f;
    fail("no source in format '", format, "' (available: ", formats, ")");
  }
  std::shared_ptr<const runtime::DeviceProgram> device_program(const std::string& name) const override {
    return code_->device_program(name);
  }

 private:
  std::shared_ptr<const runtime::Module> code_;
  std::map<std::string, std::string> sources_;
};

runtime::BufferSpec buffer_spec(const tensor_ir::Buffer& b) {
  return {b.name(), tensor_ir::to_symbolic_shape(b->shape), b.dtype()};
}

runtime::DeviceProgramSpec launch_plan(const tensor_ir::DeviceProgram& p) {
  runtime::DeviceProgramSpec spec;
  spec.name = p.name;
  for (const auto& b : p.args) spec.args.push_back(buffer_spec(b));
  for (const auto& b : p.workspace) spec.workspace.push_back(buffer_spec(b));
  for (const auto& v : p.shape_vars) spec.shape_vars.push_back(v.name());
  auto index_of = [&](const tensor_ir::Buffer& b) {
    for (size_t i = 0; i < p.args.size(); ++i)
      if (p.args[i].same_as(b)) return static_cast<int>(i);
    for (size_t i = 0; i < p.workspace.size(); ++i)
      if (p.workspace[i].same_as(b)) return static_cast<int>(p.args.size() + i);
    fail("internal error: kernel buffer '", b.name(), "' is not one of program '", p.name, "'");
  };
  auto var_index = [&](const tensor_ir::Var& v) {
    for (size_t i = 0; i < p.shape_vars.size(); ++i)
      if (p.shape_vars[i].same_as(v)) return static_cast<int>(i);
    fail("internal error: kernel variable '", v.name(), "' is not a dimension of program '", p.name, "'");
  };
  for (const tensor_ir::DeviceKernel& k : p.kernels) {
    runtime::DeviceKernelLaunch launch;
    launch.name = k.func.name;
    for (int d = 0; d < 3; ++d) {
      launch.grid[d] = tensor_ir::to_shape_expr(k.grid[d]);
      launch.config.block[d] = static_cast<size_t>(k.block[d]);
    }
    for (const auto& b : k.func.args) launch.buffers.push_back(index_of(b));
    for (const auto& v : k.func.shape_vars) launch.shape_vars.push_back(var_index(v));
    spec.kernels.push_back(std::move(launch));
  }
  return spec;
}

std::string resources_report(const std::vector<cuda::KernelResources>& kernels, const std::string& arch) {
  std::ostringstream os;
  for (const auto& k : kernels)
    os << k.name << " (" << arch << "): " << k.registers << " registers, " << k.shared_bytes << " bytes shared, "
       << k.spill_bytes << " bytes spilled\n";
  return os.str();
}

}  // namespace

std::string cuda_arch(const Target& target) {
  if (!target.arch.empty()) return target.arch;
  const runtime::Device gpu{runtime::DeviceType::CUDA, 0};
  if (!runtime::DeviceAPI::exists(gpu))
    fail("target '", target.str(), "': no CUDA device found to take the architecture from; give -arch=sm_XX");
  const auto& a = runtime::DeviceAPI::get(gpu).attributes();
  return "sm_" + std::to_string(a.compute_capability_major) + std::to_string(a.compute_capability_minor);
}

namespace {

// device_limits() given the target's device (find_device), looked up once by its callers.
tensor_ir::DeviceLimits limits_on(const Target& target, const std::optional<runtime::Device>& device) {
  const bool cuda = target.kind == "cuda";
  // A cuda target for a given architecture is checked against that architecture, not whatever
  // device this machine has.
  if ((!cuda || target.arch.empty()) && device) {
    const auto& a = runtime::DeviceAPI::get(*device).attributes();
    return {a.max_threads_per_block, a.max_shared_memory_per_block};
  }
  return cuda ? tensor_ir::DeviceLimits{1024, 48 * 1024} : tensor_ir::DeviceLimits{256, 32 * 1024};
}

}  // namespace

tensor_ir::DeviceLimits device_limits(const Target& target) { return limits_on(target, find_device(target)); }

schedule::GpuParams gpu_params(const Target& target) {
  const std::optional<runtime::Device> device = find_device(target);
  const tensor_ir::DeviceLimits limits = limits_on(target, device);
  const bool dedicated =
      target.kind == "cuda" || !device || runtime::DeviceAPI::get(*device).attributes().dedicated_shared_memory;
  return {limits.max_threads_per_block, limits.max_shared_memory_bytes, target.warp_size(), dedicated};
}

std::shared_ptr<runtime::Module> build_device(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  const bool cuda = target.kind == "cuda";
  const std::string arch = cuda ? cuda_arch(target) : "";
  const tensor_ir::DeviceLimits limits = device_limits(target);
  std::vector<std::shared_ptr<const runtime::DeviceProgram>> programs;
  std::map<std::string, std::string> sources;
  for (const tensor_ir::LoweredFunc& f : funcs) {
    const tensor_ir::DeviceProgram program = tensor_ir::split_host_device(f);
    tensor_ir::verify_device_program(program, limits);
    runtime::DeviceProgramSpec spec = launch_plan(program);
    if (cuda) {
      const std::string source = source::print_cuda(program);
      spec.code = cuda::compile_to_ptx(source, f.name, arch);
      spec.format = runtime::DeviceCodeFormat::PTX;
      sources["cuda"] += source;
      sources["ptx"] += spec.code;
      sources["ptxas"] += resources_report(cuda::check_ptx(spec.code, arch), arch);
    } else {
      spec.code = source::print_opencl(program);
      spec.format = runtime::DeviceCodeFormat::OpenCLSource;
      sources["cl"] += spec.code;
    }
    programs.push_back(std::make_shared<const runtime::DeviceProgram>(std::move(spec)));
  }
  return std::make_shared<SourceModule>(std::make_shared<runtime::DeviceProgramModule>(std::move(programs)),
                                        std::move(sources));
}

namespace {

// The system's C compiler builds `funcs` printed as C into the shared library `library`; returns the C.
std::string compile_c(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target, const TempDir& dir,
                      const std::string& library) {
  const std::string source = source::print_c(funcs);
  const std::string c_file = (dir.path / "kernels.c").string();
  std::ofstream(c_file) << source;
  std::string compiler;
  for (const char* name : {"cc", "gcc", "clang"})
    if (compiler.empty()) compiler = find_program(name);
  if (compiler.empty())
    fail("target '", target.str(),
         "': no C compiler found on PATH (looked for cc, gcc, clang); install build-essential");
  std::string messages;
  // -fno-fast-math semantics (the default): results match the LLVM backend's, which keeps NaN and
  // infinity; -ffp-contract=off so no multiply-add is fused where LLVM's code does not fuse it.
  // No -march: the code runs on every CPU of the host's architecture.
  const std::vector<std::string> argv = {compiler, "-std=c99", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-o",
                                         library,  c_file,     "-lm"};
  if (const int status = run_program(argv, &messages); status != 0)
    fail("target '", target.str(), "': the C compiler failed (", compiler, ", exit status ", status, "):\n", messages);
  return source;
}

}  // namespace

std::shared_ptr<runtime::Module> build_c(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  TempDir dir("tessera-c");
  const std::string library = (dir.path / "kernels.so").string();
  const std::string source = compile_c(funcs, target, dir, library);
  std::vector<runtime::KernelSignature> signatures;
  for (const auto& f : funcs) signatures.push_back(kernel_signature(f));
  auto cpu = runtime::open_kernel_library(library, signatures);
  return std::make_shared<SourceModule>(std::move(cpu), std::map<std::string, std::string>{{"c", source}});
}

SharedLibrary build_c_shared_library(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  TempDir dir("tessera-c-export");
  const std::string library = (dir.path / "kernels.so").string();
  compile_c(funcs, target, dir, library);
  return {read_shared_library(library), target.str(), runtime::host_arch(), {}};
}

}  // namespace tessera::targets

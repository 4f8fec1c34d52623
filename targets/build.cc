#include "targets/build.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "targets/link_shared.h"
#include "targets/llvm/build_llvm.h"
#include "targets/source/build_source.h"
#include "targets/temp_dir.h"
#include "tensor_ir/shape_expr.h"

namespace tessera::targets {

std::shared_ptr<runtime::Module> build(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  if (target.kind == "llvm") return build_llvm(funcs, target);
  if (target.kind == "c") return build_c(funcs, target);
  if (target.kind == "opencl" || target.kind == "cuda") return build_device(funcs, target);
  fail("code generation for target '", target.str(), "' is not implemented");
}

SharedLibrary build_shared_library(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target) {
  if (target.kind == "c") return build_c_shared_library(funcs, target);
  if (target.kind != "llvm")
    fail("exporting for target '", target.str(), "' is not implemented yet (llvm and c are)");
  const ObjectTarget o = describe_object_target(target);
  TempDir dir("tessera-export");
  const std::string object = (dir.path / "kernels.o").string(), library = (dir.path / "kernels.so").string();
  emit_object_file(funcs, target, object);
  link_shared_library(object, o.triple, target.mtriple, library);
  return {read_shared_library(library), o.target, o.arch, o.cpu_features};
}

std::vector<std::string> write_sources(const std::vector<tensor_ir::LoweredFunc>& funcs, const Target& target,
                                       const std::string& dir) {
  // (format, file extension) per target kind.
  std::vector<std::pair<std::string, std::string>> formats;
  if (target.kind == "llvm") formats = {{"ll", ".ll"}};
  if (target.kind == "c") formats = {{"c", ".c"}};
  if (target.kind == "opencl") formats = {{"cl", ".cl"}};
  if (target.kind == "cuda") formats = {{"cuda", ".cu"}, {"ptx", ".ptx"}, {"ptxas", ".ptxas.txt"}};
  if (formats.empty()) fail("target '", target.str(), "' has no readable source");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create the folder ", dir, ": ", ec.message());
  std::vector<std::string> written;
  for (const tensor_ir::LoweredFunc& f : funcs) {
    const std::shared_ptr<runtime::Module> module = build({f}, target);
    for (const auto& [format, extension] : formats) {
      const std::string path = (std::filesystem::path(dir) / (f.name + extension)).string();
      std::ofstream out(path);
      out << module->source(format);
      if (!out) fail("cannot write ", path);
      written.push_back(path);
    }
  }
  return written;
}

Target with_device_defaults(const Target& target) {
  Target t = target;
  if (t.kind == "cuda" && t.arch.empty()) t.arch = cuda_arch(target);
  return t;
}

namespace {

// A device's name as an opencl target's -device spells it.
std::string slug_of(runtime::Device d) { return device_slug(runtime::DeviceAPI::get(d).attributes().name); }

}  // namespace

std::string tuning_key(const Target& target) {
  Target t = with_device_defaults(target.with_host_defaults());
  if (t.kind == "opencl" && t.device.empty())
    if (const std::optional<runtime::Device> first = find_device(t)) t.device = slug_of(*first);
  return t.str();
}

std::optional<runtime::Device> find_device(const Target& target) {
  const runtime::DeviceType type = target.device_type();
  if (type == runtime::DeviceType::CPU) return runtime::Device::cpu();
  for (int id = 0, n = runtime::DeviceAPI::count(type); id < n; ++id)
    if (target.device.empty() || slug_of({type, id}) == target.device) return runtime::Device{type, id};
  return std::nullopt;
}

runtime::Device device_of(const Target& target) {
  if (auto d = find_device(target)) return *d;
  const runtime::DeviceType type = target.device_type();
  std::string found;
  for (int id = 0, n = runtime::DeviceAPI::count(type); id < n; ++id)
    found += (found.empty() ? "" : ", ") + slug_of({type, id});
  fail("target '", target.str(), "': no such ", runtime::device_type_name(type), " device here (",
       found.empty() ? "none found" : "found: " + found, ")");
}

runtime::KernelSignature kernel_signature(const tensor_ir::LoweredFunc& f) {
  runtime::KernelSignature signature{f.name, {}, {}};
  for (const tensor_ir::Buffer& b : f.args)
    signature.args.push_back({b.name(), tensor_ir::to_symbolic_shape(b->shape), b.dtype()});
  for (const tensor_ir::Var& v : f.shape_vars) signature.shape_vars.push_back(v.name());
  return signature;
}

}  // namespace tessera::targets

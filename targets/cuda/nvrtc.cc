#include "targets/cuda/nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "runtime/error.h"
#include "runtime/load_once.h"
#include "targets/run_program.h"
#include "targets/temp_dir.h"

namespace tessera::targets::cuda {

namespace {

// The few NVRTC declarations used (nvrtc.h's, C linkage; nvrtcResult 0 is NVRTC_SUCCESS).
using nvrtcProgram = struct _nvrtcProgram*;
struct Nvrtc {
  const char* (*GetErrorString)(int);
  int (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  int (*DestroyProgram)(nvrtcProgram*);
  int (*CompileProgram)(nvrtcProgram, int, const char* const*);
  int (*GetPTXSize)(nvrtcProgram, size_t*);
  int (*GetPTX)(nvrtcProgram, char*);
  int (*GetProgramLogSize)(nvrtcProgram, size_t*);
  int (*GetProgramLog)(nvrtcProgram, char*);
};

template <typename Fn>
void load_symbol(void* handle, const std::string& path, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!fn) fail(path, " lacks ", name, ": NVRTC is too old for Tessera");
}

Nvrtc load_nvrtc() {
  const std::string path = toolkit_root() + "/lib64/libnvrtc.so";
  // Never closed: compiled programs are copied out, but NVRTC keeps process-wide state.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    fail("no NVRTC found for the cuda target (", path, " could not be loaded: ", dlerror(), "); set CUDA_HOME");
  Nvrtc n{};
  load_symbol(handle, path, n.GetErrorString, "nvrtcGetErrorString");
  load_symbol(handle, path, n.CreateProgram, "nvrtcCreateProgram");
  load_symbol(handle, path, n.DestroyProgram, "nvrtcDestroyProgram");
  load_symbol(handle, path, n.CompileProgram, "nvrtcCompileProgram");
  load_symbol(handle, path, n.GetPTXSize, "nvrtcGetPTXSize");
  load_symbol(handle, path, n.GetPTX, "nvrtcGetPTX");
  load_symbol(handle, path, n.GetProgramLogSize, "nvrtcGetProgramLogSize");
  load_symbol(handle, path, n.GetProgramLog, "nvrtcGetProgramLog");
  return n;
}

const Nvrtc& nvrtc() {
  static runtime::LoadOnce<Nvrtc> library;
  return library.get(load_nvrtc);
}

void check_arch(const std::string& arch) {
  if (!std::regex_match(arch, std::regex("sm_[0-9]+a?")))
    fail("cuda target: -arch must read sm_XX (sm_80, sm_90), not '", arch, "'");
}

}  // namespace

std::string toolkit_root() {
  const char* home = std::getenv("CUDA_HOME");
  return home && *home ? home : "/usr/local/cuda";
}

std::string compile_to_ptx(const std::string& source, const std::string& name, const std::string& arch) {
  check_arch(arch);
  const Nvrtc& n = nvrtc();
  nvrtcProgram program = nullptr;
  if (int err = n.CreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr))
    fail("NVRTC cannot create a program for '", name, "': ", n.GetErrorString(err));
  const std::string gpu = "--gpu-architecture=compute_" + arch.substr(3), include = "-I" + toolkit_root() + "/include";
  const char* options[] = {gpu.c_str(), include.c_str(), "-std=c++17"};
  const int err = n.CompileProgram(program, 3, options);
  size_t size = 0;
  std::string log;
  if (n.GetProgramLogSize(program, &size) == 0 && size > 1) {
    log.resize(size);
    n.GetProgramLog(program, log.data());
    log.resize(size - 1);
  }
  std::string ptx;
  if (err == 0 && n.GetPTXSize(program, &size) == 0) {
    ptx.resize(size);
    n.GetPTX(program, ptx.data());
    if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  }
  n.DestroyProgram(&program);
  if (err != 0) fail("NVRTC failed to compile '", name, "' for ", arch, " (", n.GetErrorString(err), "):\n", log);
  return ptx;
}

std::vector<KernelResources> check_ptx(const std::string& ptx, const std::string& arch) {
  check_arch(arch);
  const std::string ptxas = toolkit_root() + "/bin/ptxas";
  TempDir dir("tessera-ptxas");
  const std::string file = (dir.path / "kernels.ptx").string();
  std::ofstream(file) << ptx;
  std::string output;
  const int status = run_program({ptxas, "-arch=" + arch, "-v", file, "-o", "/dev/null"}, &output);
  if (status != 0) fail("ptxas refused the PTX for ", arch, " (exit status ", status, "):\n", output);
  // "Compiling entry function 'k' for 'sm_80'", then "Used 10 registers, 256 bytes smem, ...".
  std::vector<KernelResources> kernels;
  static const std::regex entry("Compiling entry function '([A-Za-z0-9_]+)'"), used("Used ([0-9]+) registers"),
      smem("([0-9]+) bytes smem"), spill("([0-9]+) bytes spill stores");
  std::istringstream lines(output);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, entry)) kernels.push_back({m[1], 0, 0, 0});
    if (kernels.empty()) continue;
    if (std::regex_search(line, m, used)) kernels.back().registers = std::stoi(m[1]);
    if (std::regex_search(line, m, smem)) kernels.back().shared_bytes = std::stoll(m[1]);
    if (std::regex_search(line, m, spill)) kernels.back().spill_bytes = std::stoll(m[1]);
  }
  return kernels;
}

}  // namespace tessera::targets::cuda

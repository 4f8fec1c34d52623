#include "targets/llvm/target_machine.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>

#include <memory>
#include <mutex>

#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "targets/llvm/build_llvm.h"
#include "targets/source/build_source.h"

namespace tessera::targets::llvm_backend {

namespace {

const llvm::Target& lookup(const std::string& triple) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t) fail("target triple '", triple, "' is not supported by this build of LLVM: ", error);
  return *t;
}

// The subtarget `t` describes: the features its CPU and feature list enable.
std::unique_ptr<llvm::MCSubtargetInfo> subtarget(const ResolvedTarget& t) {
  return std::unique_ptr<llvm::MCSubtargetInfo>(lookup(t.triple).createMCSubtargetInfo(t.triple, t.cpu, t.features));
}

std::string host_features() {
  llvm::StringMap<bool> features;
  std::string s;
  if (!llvm::sys::getHostCPUFeatures(features)) return s;
  for (const auto& f : features) s += (s.empty() ? "" : ",") + std::string(f.getValue() ? "+" : "-") + f.getKey().str();
  return s;
}

// Extensions a code generator uses on its own once they are enabled (vector ISAs, bit
// manipulation); a target enabling one the host lacks would fault with SIGILL. Features that
// only intrinsics reach (pku, sgx, ...) are not compared, so e.g. skylake-avx512 code runs on
// an AVX-512 AMD host.
bool emitted_without_asking(const std::string& feature) {
  static const char* const kPrefixes[] = {"sse",   "ssse3", "avx",  "fma", "f16c", "bmi", "lzcnt",   "popcnt",
                                          "movbe", "xop",   "cmov", "amx", "neon", "sve", "fullfp16"};
  for (const char* p : kPrefixes)
    if (feature.compare(0, std::char_traits<char>::length(p), p) == 0) return true;
  return false;
}

}  // namespace

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Cross-compilation: AArch64 objects from any host (registering the native one twice is a no-op).
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
    // The x86 machine combiner reassociates sums by instruction latencies, which depend on how
    // constants are loaded: the JIT's code and a module's (PIC) rounded differently on AVX-512
    // hosts (a Winograd convolution). Without it an exported module computes bit for bit what the
    // built one does.
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("x86-machine-combiner"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(false);
  });
}

std::vector<std::string> host_features_beyond_cpu_name() {
  initialize_llvm();
  const Target host = Target::host();
  std::unique_ptr<llvm::MCSubtargetInfo> named(lookup(host.mtriple).createMCSubtargetInfo(host.mtriple, host.mcpu, ""));
  std::vector<std::string> out;
  for (const std::string& f : host.mattr)
    if (named->checkFeatures("+" + f.substr(1)) != (f[0] == '+')) out.push_back(f);
  return out;
}

ResolvedTarget resolve(const Target& target) {
  if (target.kind != "llvm") fail("target '", target.str(), "' is not an llvm target");
  initialize_llvm();
  ResolvedTarget r;
  const std::string host_triple = llvm::sys::getProcessTriple();
  r.triple = target.mtriple.empty() ? host_triple : llvm::Triple::normalize(target.mtriple);
  const bool host_arch = llvm::Triple(r.triple).getArch() == llvm::Triple(host_triple).getArch();
  const llvm::Target& llvm_target = lookup(r.triple);
  // A subtarget with no CPU and no features only serves to ask which names LLVM knows.
  std::unique_ptr<llvm::MCSubtargetInfo> names(llvm_target.createMCSubtargetInfo(r.triple, "", ""));
  if (target.mcpu.empty()) {
    r.cpu = host_arch ? llvm::sys::getHostCPUName().str() : "generic";
    if (host_arch) r.features = host_features();
  } else {
    if (!names->isCPUStringValid(target.mcpu))
      fail("target '", target.str(), "': LLVM does not know the CPU '", target.mcpu, "' for ", r.triple);
    r.cpu = target.mcpu;
  }
  for (const std::string& f : target.mattr) {
    // A feature LLVM does not know is neither on nor off in any subtarget.
    std::string name = f.substr(1);
    if (names->checkFeatures("+" + name) && names->checkFeatures("-" + name))
      fail("target '", target.str(), "': LLVM does not know the feature '", name, "' for ", r.triple);
    r.features += (r.features.empty() ? "" : ",") + f;
  }
  return r;
}

llvm::orc::JITTargetMachineBuilder machine_builder(const ResolvedTarget& t, bool pic) {
  llvm::orc::JITTargetMachineBuilder builder{llvm::Triple(t.triple)};
  builder.setCPU(t.cpu);
  builder.setFeatures(t.features);
  builder.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  // The JIT keeps LLVM's default for it (static, large code model: JIT memory may lie anywhere);
  // objects for shared libraries want PIC. On x86-64 they keep the large code model too, so that
  // an exported module computes bit for bit what the built one does (with the machine combiner
  // off: initialize_llvm). AArch64 has no large PIC model.
  if (pic) {
    builder.setRelocationModel(llvm::Reloc::PIC_);
    const bool x86_64 = llvm::Triple(t.triple).getArch() == llvm::Triple::x86_64;
    builder.setCodeModel(x86_64 ? llvm::CodeModel::Large : llvm::CodeModel::Small);
  }
  return builder;
}

bool has_feature(const ResolvedTarget& t, const std::string& name) { return subtarget(t)->checkFeatures("+" + name); }

void check_runs_on_host(const ResolvedTarget& t) {
  const llvm::Triple host(llvm::sys::getProcessTriple()), triple(t.triple);
  if (triple.getArch() != host.getArch() || triple.getOS() != host.getOS())
    fail("cannot run code for ", t.triple, " in this process (the host is ", host.str(),
         "); emit an object file instead");
  llvm::StringMap<bool> host_features;
  if (!llvm::sys::getHostCPUFeatures(host_features)) return;
  std::unique_ptr<llvm::MCSubtargetInfo> sti = subtarget(t);
  for (const auto& f : host_features) {
    const std::string name = f.getKey().str();
    if (!f.getValue() && emitted_without_asking(name) && sti->checkFeatures("+" + name))
      fail("cannot run code for CPU ", t.cpu, " in this process: it uses ", name, ", which this host (",
           llvm::sys::getHostCPUName().str(), ") lacks");
  }
}

}  // namespace tessera::targets::llvm_backend

namespace tessera::targets {

schedule::HardwareParams Target::hardware() const {
  // C is compiled for this machine by its C compiler, which vectorizes for its registers.
  if (kind == "c") return host().hardware();
  if (kind == "opencl" || kind == "cuda") {
    schedule::HardwareParams hw;
    hw.registers = tensor_ir::ops::Registers::scalar_device();
    hw.gpu = gpu_params(*this);
    return hw;
  }
  if (kind != "llvm") fail("target '", str(), "': only llvm targets describe their hardware for now");
  const llvm_backend::ResolvedTarget r = llvm_backend::resolve(*this);
  std::unique_ptr<llvm::MCSubtargetInfo> sti = llvm_backend::subtarget(r);
  schedule::HardwareParams hw;
  const llvm::Triple triple(r.triple);
  if (triple.isX86()) {
    if (sti->checkFeatures("+avx512f")) hw.registers = {64, 32};
    else if (sti->checkFeatures("+avx")) hw.registers = {32, 16};
    else hw.registers = {16, 16};
  } else if (triple.isAArch64()) {
    hw.registers = {16, 32};
  } else {
    fail("target '", str(), "': no vector register description for ", r.triple);
  }
  return hw;
}

ObjectTarget describe_object_target(const Target& target) {
  const llvm_backend::ResolvedTarget r = llvm_backend::resolve(target);
  ObjectTarget o;
  o.triple = r.triple;
  o.arch = llvm::Triple::getArchTypeName(llvm::Triple(r.triple).getArch()).str();
  Target resolved = target;
  resolved.mtriple = r.triple;
  resolved.mcpu = r.cpu;
  o.target = resolved.str();
  std::unique_ptr<llvm::MCSubtargetInfo> sti = llvm_backend::subtarget(r);
  for (const std::string& name : runtime::detectable_cpu_features(o.arch)) {
    const bool unknown = sti->checkFeatures("+" + name) && sti->checkFeatures("-" + name);
    if (!unknown && sti->checkFeatures("+" + name)) o.cpu_features.push_back(name);
  }
  return o;
}

}  // namespace tessera::targets

// Turning a Target into LLVM's view of it (triple, CPU, feature string, TargetMachine), with the
// host filled in where the Target leaves fields empty. Internal to targets/llvm.
#pragma once
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>

#include <string>
#include <vector>

#include "targets/target.h"

namespace tessera::targets::llvm_backend {

// A Target with nothing left to the host: what goes into function attributes and TargetMachines.
struct ResolvedTarget {
  std::string triple;
  std::string cpu;
  std::string features;  // "+avx2,-avx512f", LLVM's syntax; later entries win
};

// Registers LLVM's native target once per process.
void initialize_llvm();

// The host's CPU features that differ from what LLVM's model of the host CPU name enables ("+f"
// or "-f", sorted by name). Empty when the name says it all; not when LLVM predates the CPU
// (LLVM 14 calls a Zen 4 "znver3", which has no AVX-512).
std::vector<std::string> host_features_beyond_cpu_name();

// Fills in the host's triple, CPU and features where `target` leaves them empty and checks that
// LLVM knows the triple, the CPU and every feature (throws tessera::Error naming the bad one).
ResolvedTarget resolve(const Target& target);

// Builds TargetMachines for `t` at -O3: as the JIT wants them, or position-independent with the
// small code model when `pic` (for objects that end up in shared libraries).
llvm::orc::JITTargetMachineBuilder machine_builder(const ResolvedTarget& t, bool pic);

// Whether code for `t` may use the CPU feature `name` (LLVM's name: "avx512f"), by its CPU and
// features.
bool has_feature(const ResolvedTarget& t, const std::string& name);

// Throws unless code generated for `t` can run in this process: same architecture and OS, and no
// instruction-set extension the host lacks.
void check_runs_on_host(const ResolvedTarget& t);

}  // namespace tessera::targets::llvm_backend

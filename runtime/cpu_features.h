// Which instruction-set extensions this CPU has, asked of the hardware (cpuid on x86-64, the
// kernel's hwcaps on AArch64) without LLVM: a module records the features its code was compiled
// for, and the loader refuses it before running any of it on a CPU that lacks one (SIGILL).
// Feature names are LLVM's ("avx2", "avx512f", "neon"), since the compiler writes them.
#pragma once
#include <string>
#include <vector>

namespace tessera::runtime {

// The architecture this runtime was built for, as LLVM names it ("x86_64", "aarch64").
std::string host_arch();

// The features of `arch` this runtime can detect: the ones a code generator uses on its own once
// enabled (vector ISAs, bit manipulation). A compiler records only these.
const std::vector<std::string>& detectable_cpu_features(const std::string& arch);

// The features of `required` this CPU lacks, each with a reason ("avx512fp16 (not supported by
// this CPU)", "foo (unknown to this runtime)"); empty when the code can run here.
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required);

}  // namespace tessera::runtime

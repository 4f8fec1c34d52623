// The float32 peak of the machine a tuning session measures on, for the report to set the
// tasks' GFLOP/s against: fused multiply-adds in independent chains on every thread the
// runtime's pool uses, timed, in the widest vector registers the CPU has.
#pragma once
#include <optional>
#include <string>

namespace tessera::autotune {

struct MachinePeak {
  double gflops = 0;
  std::string how;  // "AVX-512 FMA x 2 threads, measured"
};

// Measured (tens of milliseconds) for a CPU target on an x86-64 or AArch64 host; nullopt where
// the peak is not known (other target kinds, other hosts).
std::optional<MachinePeak> measure_machine_peak(const std::string& target_kind);

}  // namespace tessera::autotune

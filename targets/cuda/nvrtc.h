// CUDA C to PTX with NVRTC, and PTX checked by ptxas, both from the CUDA toolkit (under
// $CUDA_HOME, else /usr/local/cuda). libnvrtc is opened at run time, never linked, so Tessera
// builds and starts on machines without the toolkit; compiling for cuda there names what is missing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::targets::cuda {

// The toolkit's root folder.
std::string toolkit_root();

// `source` compiled by NVRTC for the virtual architecture of `arch` ("sm_80" -> compute_80).
// Throws, with NVRTC's log, naming `name` (the program, for messages) when it does not compile.
std::string compile_to_ptx(const std::string& source, const std::string& name, const std::string& arch);

// What ptxas -v reports for one kernel.
struct KernelResources {
  std::string name;
  int registers = 0;
  int64_t shared_bytes = 0;  // static shared memory
  int64_t spill_bytes = 0;   // spill stores
};

// Assembles `ptx` for `arch` with ptxas (the output discarded): throws with ptxas's messages if
// it refuses the code; returns each kernel's resources.
std::vector<KernelResources> check_ptx(const std::string& ptx, const std::string& arch);

}  // namespace tessera::targets::cuda

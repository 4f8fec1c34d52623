// A set of compiled kernels that can be called by name: JIT-compiled in this process by a
// target, or loaded from an exported module file (module_loader.h).
#pragma once
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace tessera::runtime {

class Module {
 public:
  virtual ~Module() = default;
  // Throws tessera::Error naming `name` and the kernels there are, if it is not one of them.
  virtual Kernel get_kernel(const std::string& name) const = 0;
  virtual std::vector<std::string> kernel_names() const = 0;
  // Generated code in a readable form, e.g. "ll" (LLVM IR) or "asm"; throws if unavailable.
  virtual std::string source(const std::string& format) const = 0;
};

}  // namespace tessera::runtime

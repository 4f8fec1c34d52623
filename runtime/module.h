// A set of compiled kernels that can be called by name: JIT-compiled in this process by a
// target, or loaded from an exported module file (module_loader.h); or, for a device target,
// device programs (device_program.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/kernel.h"

namespace tessera::runtime {

class DeviceProgram;

class Module {
 public:
  virtual ~Module() = default;
  // Throws tessera::Error naming `name` and the kernels there are, if it is not one of them.
  virtual Kernel get_kernel(const std::string& name) const = 0;
  virtual std::vector<std::string> kernel_names() const = 0;
  // Generated code in a readable form, e.g. "ll" (LLVM IR) or "asm"; throws if unavailable.
  virtual std::string source(const std::string& format) const = 0;
  // The program `name` of a module built for a device target (opencl, cuda), whose kernels run
  // on a device rather than being called as CPU functions; throws for a CPU module.
  virtual std::shared_ptr<const DeviceProgram> device_program(const std::string& name) const {
    fail("the module has CPU kernels only, no device program '", name, "'");
  }
};

}  // namespace tessera::runtime

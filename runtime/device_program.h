// A compiled device program: the kernels a host/device split made, launched in order on the
// device its arrays live on, with the workspace buffers that pass data between them allocated for
// the call. It holds device code (OpenCL C or PTX) and the launch plan, nothing of the compiler,
// so the runtime can run it alone; the code is loaded onto each device at its first use.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device_api.h"
#include "runtime/kernel.h"
#include "runtime/module.h"

namespace tessera::runtime {

struct DeviceKernelLaunch {
  std::string name;
  // The blocks of each grid dimension: constants, or expressions of the program's dimension
  // variables evaluated at each call (a launch with none is skipped: an empty tensor's stage).
  std::array<ShapeExpr, 3> grid{1, 1, 1};
  LaunchConfig config;  // the block and shared memory; its grid is set from `grid` at each call
  // The kernel's parameters: indices into the program's arguments, then its workspace; then the
  // values (int64) of the dimension variables it reads, as indices into the program's shape_vars.
  std::vector<int> buffers;
  std::vector<int> shape_vars;
};

struct DeviceProgramSpec {
  std::string name;
  std::vector<BufferSpec> args;
  std::vector<BufferSpec> workspace;
  std::vector<std::string> shape_vars;  // the arguments' dimension variables; none when static
  std::vector<DeviceKernelLaunch> kernels;
  DeviceCodeFormat format = DeviceCodeFormat::OpenCLSource;
  std::string code;  // every kernel's, as the device's driver loads it
};

// The kind of device that runs code of `format`.
DeviceType device_type_of(DeviceCodeFormat format);

class DeviceProgram {
 public:
  explicit DeviceProgram(DeviceProgramSpec spec);
  const DeviceProgramSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }

  // Checks every array's shape and dtype and that all are on one device of the code's kind, then
  // queues the kernels there in order and, with `wait`, waits for them; without, the device's
  // one queue runs them before anything queued later (a graph waits once, at its end). Throws,
  // naming the program, the argument and what was expected. `values`: the dimension variables'
  // values in shape_vars order, as a graph's plan knows them (every argument's shape is checked
  // against them); empty: found from the arguments' shapes, which must give each.
  void operator()(const std::vector<NDArray>& args, bool wait = true, const std::vector<int64_t>& values = {}) const;

 private:
  // The code loaded on a device and the workspace its kernels pass data through there, allocated
  // at the first call and reused (a workspace of symbolic size again when a call needs another
  // size): calls are queued whole, one at a time, and run in order.
  struct OnDevice {
    std::unique_ptr<DeviceModule> module;
    std::vector<NDArray> workspace;
  };
  OnDevice& on(Device device) const;  // with mutex_ held
  // Reallocates the workspace buffers whose sizes at `values` differ from the last call's.
  void size_workspace(OnDevice& d, Device device, const std::map<std::string, int64_t>& values) const;

  DeviceProgramSpec spec_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, int>, OnDevice> devices_;  // by device type and id
};

// A module of device programs and no CPU kernels: what a device target builds, and what an
// exported device module loads.
class DeviceProgramModule final : public Module {
 public:
  explicit DeviceProgramModule(std::vector<std::shared_ptr<const DeviceProgram>> programs)
      : programs_(std::move(programs)) {}
  Kernel get_kernel(const std::string& name) const override;
  std::vector<std::string> kernel_names() const override;
  std::string source(const std::string& format) const override;
  std::shared_ptr<const DeviceProgram> device_program(const std::string& name) const override;

 private:
  std::vector<std::shared_ptr<const DeviceProgram>> programs_;
};

}  // namespace tessera::runtime

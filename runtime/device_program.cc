#include "runtime/device_program.h"

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

DeviceType device_type_of(DeviceCodeFormat format) {
  return format == DeviceCodeFormat::PTX ? DeviceType::CUDA : DeviceType::OpenCL;
}

DeviceProgram::DeviceProgram(DeviceProgramSpec spec) : spec_(std::move(spec)) {
  const size_t buffers = spec_.args.size() + spec_.workspace.size();
  for (const DeviceKernelLaunch& k : spec_.kernels)
    for (int b : k.buffers)
      if (b < 0 || static_cast<size_t>(b) >= buffers)
        fail("device program '", spec_.name, "': kernel '", k.name, "' names buffer ", b, " of ", buffers);
}

DeviceProgram::OnDevice& DeviceProgram::on(Device device) const {
  OnDevice& d = devices_[{static_cast<int>(device.type), device.id}];
  if (!d.module) {  // set last: a failure leaves nothing half made for the next call
    std::vector<NDArray> workspace;
    for (const BufferSpec& w : spec_.workspace)
      workspace.push_back(NDArray::empty(static_shape(w.shape, w.name), w.dtype, device));
    d.module = DeviceAPI::get(device).load_module(spec_.code, spec_.format);
    d.workspace = std::move(workspace);
  }
  return d;
}

void DeviceProgram::operator()(const std::vector<NDArray>& args, bool wait) const {
  if (args.size() != spec_.args.size())
    fail("device program '", spec_.name, "' takes ", spec_.args.size(), " arrays, got ", args.size());
  const DeviceType type = device_type_of(spec_.format);
  Device device{type, 0};
  for (size_t i = 0; i < args.size(); ++i) {
    const BufferSpec& s = spec_.args[i];
    const NDArray& a = args[i];
    const std::string where =
        "device program '" + spec_.name + "' argument " + std::to_string(i) + " ('" + s.name + "')";
    if (a.dtype() != s.dtype) fail(where, ": expected dtype ", s.dtype.str(), ", got ", a.dtype().str());
    if (symbolic_shape(a.shape()) != s.shape)
      fail(where, ": expected shape ", symbolic_shape_str(s.shape), ", got ", a.shape_str());
    if (a.device().type != type)
      fail(where, ": the array is on ", a.device().str(), "; the program runs on ",
           type == DeviceType::CUDA ? "a CUDA" : "an OpenCL", " device: copy it there first");
    if (i == 0) device = a.device();
    if (!(a.device() == device))
      fail(where, ": the array is on ", a.device().str(), ", the first argument on ", device.str(),
           "; all must be on one device");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    OnDevice& d = on(device);
    for (const DeviceKernelLaunch& k : spec_.kernels) {
      std::vector<KernelArg> kernel_args;
      for (int b : k.buffers) {
        const NDArray& a = static_cast<size_t>(b) < args.size() ? args[b] : d.workspace[b - args.size()];
        kernel_args.push_back(KernelArg::array(a));
      }
      d.module->function(k.name)->launch(k.config, kernel_args);
    }
  }
  if (wait) DeviceAPI::get(device).synchronize();
}

Kernel DeviceProgramModule::get_kernel(const std::string& name) const {
  fail("kernel '", name, "' runs on a device: call it through device_program('", name, "')");
}

std::vector<std::string> DeviceProgramModule::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& p : programs_) names.push_back(p->name());
  return names;
}

std::string DeviceProgramModule::source(const std::string& format) const {
  fail("the module holds device code only, no '", format, "' source");
}

std::shared_ptr<const DeviceProgram> DeviceProgramModule::device_program(const std::string& name) const {
  std::string names;
  for (const auto& p : programs_) {
    if (p->name() == name) return p;
    names += (names.empty() ? "" : ", ") + p->name();
  }
  fail("module has no device program '", name, "' (it has: ", names.empty() ? "none" : names, ")");
}

}  // namespace tessera::runtime

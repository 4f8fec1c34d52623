#include "runtime/device_program.h"

#include <algorithm>

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
  for (const DeviceKernelLaunch& k : spec_.kernels)
    for (int v : k.shape_vars)
      if (v < 0 || static_cast<size_t>(v) >= spec_.shape_vars.size())
        fail("device program '", spec_.name, "': kernel '", k.name, "' names dimension variable ", v, " of ",
             spec_.shape_vars.size());
}

DeviceProgram::OnDevice& DeviceProgram::on(Device device) const {
  OnDevice& d = devices_[{static_cast<int>(device.type), device.id}];
  if (!d.module) d.module = DeviceAPI::get(device).load_module(spec_.code, spec_.format);
  return d;
}

void DeviceProgram::size_workspace(OnDevice& d, Device device, const std::map<std::string, int64_t>& values) const {
  std::vector<NDArray> workspace;
  for (size_t i = 0; i < spec_.workspace.size(); ++i) {
    const BufferSpec& w = spec_.workspace[i];
    std::vector<int64_t> shape;
    for (const ShapeExpr& e : w.shape) shape.push_back(std::max<int64_t>(e.evaluate(values), 0));
    const bool fits = i < d.workspace.size() && d.workspace[i].shape() == shape;
    workspace.push_back(fits ? d.workspace[i] : NDArray::empty(shape, w.dtype, device));
  }
  d.workspace = std::move(workspace);  // set last: a failed allocation leaves the old one whole
}

void DeviceProgram::operator()(const std::vector<NDArray>& args, bool wait, const std::vector<int64_t>& given) const {
  if (args.size() != spec_.args.size())
    fail("device program '", spec_.name, "' takes ", spec_.args.size(), " arrays, got ", args.size());
  const DeviceType type = device_type_of(spec_.format);
  Device device{type, 0};
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    const BufferSpec& s = spec_.args[i];
    const NDArray& a = args[i];
    const std::string where =
        "device program '" + spec_.name + "' argument " + std::to_string(i) + " ('" + s.name + "')";
    if (a.dtype() != s.dtype) fail(where, ": expected dtype ", s.dtype.str(), ", got ", a.dtype().str());
    if (is_static(s.shape) && !equals(s.shape, a.shape()))
      fail(where, ": expected shape ", symbolic_shape_str(s.shape), ", got ", a.shape_str());
    if (a.device().type != type)
      fail(where, ": the array is on ", a.device().str(), "; the program runs on ",
           type == DeviceType::CUDA ? "a CUDA" : "an OpenCL", " device: copy it there first");
    if (i == 0) device = a.device();
    if (!(a.device() == device))
      fail(where, ": the array is on ", a.device().str(), ", the first argument on ", device.str(),
           "; all must be on one device");
    shapes.push_back(a.shape());
  }
  // Symbolic dimensions: their values, checked against every argument (none for a static program).
  if (!given.empty() && given.size() != spec_.shape_vars.size())
    fail("device program '", spec_.name, "' takes ", spec_.shape_vars.size(), " dimension values, got ", given.size());
  const std::vector<int64_t> values =
      spec_.shape_vars.empty() || !given.empty()
          ? given
          : shape_var_values(spec_.args, spec_.shape_vars, shapes, "device program '" + spec_.name + "'");
  std::map<std::string, int64_t> named;
  for (size_t i = 0; i < values.size(); ++i) named[spec_.shape_vars[i]] = values[i];
  for (size_t i = 0; !given.empty() && i < args.size(); ++i) {
    const SymbolicShape& want = spec_.args[i].shape;
    bool fits = want.size() == shapes[i].size();
    for (size_t d = 0; fits && d < want.size(); ++d) fits = want[d].evaluate(named) == shapes[i][d];
    if (!fits)
      fail("device program '", spec_.name, "' argument ", i, " ('", spec_.args[i].name, "'): expected shape ",
           symbolic_shape_str(want), " at the values given, got ", args[i].shape_str());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    OnDevice& d = on(device);
    size_workspace(d, device, named);
    for (const DeviceKernelLaunch& k : spec_.kernels) {
      LaunchConfig config = k.config;
      bool empty = false;
      for (int g = 0; g < 3; ++g) {
        const int64_t blocks = k.grid[g].evaluate(named);
        empty |= blocks <= 0;
        config.grid[g] = static_cast<size_t>(std::max<int64_t>(blocks, 0));
      }
      if (empty) continue;  // the stage of an empty tensor
      std::vector<KernelArg> kernel_args;
      for (int b : k.buffers) {
        const NDArray& a = static_cast<size_t>(b) < args.size() ? args[b] : d.workspace[b - args.size()];
        kernel_args.push_back(KernelArg::array(a));
      }
      for (int v : k.shape_vars) kernel_args.push_back(KernelArg::scalar<int64_t>(values.at(v)));
      d.module->function(k.name)->launch(config, kernel_args);
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

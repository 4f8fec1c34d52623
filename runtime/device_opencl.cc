// OpenCL devices as DeviceAPIs: every device of every platform the ICD loader finds, numbered in
// that order (PoCL gives one: the CPU). Each device has its own context and one in-order queue
// with profiling on, so markers time the work between them.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/load_once.h"
#include "runtime/opencl_binary_cache.h"
#include "runtime/opencl_library.h"

namespace tessera::runtime {

namespace {

struct OpenCLDeviceList {
  std::vector<cl_platform_id> platforms;  // of each device
  std::vector<cl_device_id> devices;
};

OpenCLDeviceList enumerate_devices() {
  const OpenCLLibrary& cl = opencl_library();
  cl_uint n_platforms = 0;
  cl_int err = cl.clGetPlatformIDs(0, nullptr, &n_platforms);
  if (err == -1001 || (err == CL_SUCCESS && n_platforms == 0))  // -1001: CL_PLATFORM_NOT_FOUND_KHR
    fail(
        "no OpenCL platform found (libOpenCL.so.1 was loaded, but it found no driver: install one, such as "
        "pocl-opencl-icd for the CPU)");
  if (err != CL_SUCCESS) fail("OpenCL: clGetPlatformIDs failed: ", opencl_error_str(err));
  std::vector<cl_platform_id> platforms(n_platforms);
  cl.clGetPlatformIDs(n_platforms, platforms.data(), nullptr);
  OpenCLDeviceList list;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    // A platform without devices answers CL_DEVICE_NOT_FOUND; it adds none.
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> devices(n);
    cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr);
    list.devices.insert(list.devices.end(), devices.begin(), devices.end());
    list.platforms.insert(list.platforms.end(), n, p);
  }
  return list;
}

const OpenCLDeviceList& device_list() {
  static LoadOnce<OpenCLDeviceList> once;
  return once.get(enumerate_devices);
}

// Throws "opencl(0): WHAT failed: CL_..." unless err is CL_SUCCESS.
void check(cl_int err, Device device, const char* what) {
  if (err != CL_SUCCESS) fail(device.str(), ": ", what, " failed: ", opencl_error_str(err));
}

template <typename T>
T device_info(cl_device_id id, cl_device_info what, Device device) {
  T value{};
  check(opencl_library().clGetDeviceInfo(id, what, sizeof value, &value, nullptr), device, "clGetDeviceInfo");
  return value;
}

std::string device_string(cl_device_id id, cl_device_info what, Device device) {
  size_t size = 0;
  check(opencl_library().clGetDeviceInfo(id, what, 0, nullptr, &size), device, "clGetDeviceInfo");
  std::string name(size, '\0');
  check(opencl_library().clGetDeviceInfo(id, what, size, name.data(), nullptr), device, "clGetDeviceInfo");
  name.resize(std::strlen(name.c_str()));
  return name;
}

struct OpenCLEvent : DeviceEvent {
  OpenCLEvent(Device device, cl_event event) : DeviceEvent(device), event(event) {}
  ~OpenCLEvent() override { opencl_library().clReleaseEvent(event); }
  cl_event event;
};

// A built program; its kernels hold it.
struct OpenCLProgram {
  explicit OpenCLProgram(cl_program program) : program(program) {}
  ~OpenCLProgram() { opencl_library().clReleaseProgram(program); }
  cl_program program;
};

class OpenCLFunction final : public DeviceFunction {
 public:
  OpenCLFunction(Device device, cl_command_queue queue, std::shared_ptr<OpenCLProgram> program, cl_kernel kernel,
                 std::string name)
      : device_(device), queue_(queue), program_(std::move(program)), kernel_(kernel), name_(std::move(name)) {}
  ~OpenCLFunction() override { opencl_library().clReleaseKernel(kernel_); }

  void launch(const LaunchConfig& config, const std::vector<KernelArg>& args) override {
    const OpenCLLibrary& cl = opencl_library();
    const std::string where = "kernel '" + name_ + "'";
    if (config.dynamic_shared_bytes)
      fail(device_.str(), ": ", where,
           ": OpenCL kernels take local memory as __local arguments, not as "
           "dynamic_shared_bytes");
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      if (config.grid[d] == 0 || config.block[d] == 0) fail(device_.str(), ": ", where, ": a launch extent is 0");
      global[d] = config.grid[d] * config.block[d];
      local[d] = config.block[d];
    }
    // Arguments are state of the cl_kernel until the launch is queued: one launch at a time.
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].is_buffer() && !(args[i].device() == device_))
        fail(device_.str(), ": ", where, " argument ", i, " is memory of ", args[i].device().str());
      cl_int err = cl.clSetKernelArg(kernel_, static_cast<cl_uint>(i), args[i].size(), args[i].value());
      if (err != CL_SUCCESS) fail(device_.str(), ": ", where, " argument ", i, ": ", opencl_error_str(err));
    }
    cl_int err = cl.clEnqueueNDRangeKernel(queue_, kernel_, 3, nullptr, global, local, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) fail(device_.str(), ": launching ", where, " failed: ", opencl_error_str(err));
  }

 private:
  Device device_;
  cl_command_queue queue_;
  std::shared_ptr<OpenCLProgram> program_;
  cl_kernel kernel_;
  std::string name_;
  std::mutex mutex_;
};

class OpenCLModule final : public DeviceModule {
 public:
  OpenCLModule(Device device, cl_command_queue queue, std::shared_ptr<OpenCLProgram> program)
      : device_(device), queue_(queue), program_(std::move(program)) {}

  std::shared_ptr<DeviceFunction> function(const std::string& name) override {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = opencl_library().clCreateKernel(program_->program, name.c_str(), &err);
    if (err != CL_SUCCESS)
      fail(device_.str(), ": the program has no kernel '", name, "' (", opencl_error_str(err), ")");
    return std::make_shared<OpenCLFunction>(device_, queue_, program_, kernel, name);
  }

 private:
  Device device_;
  cl_command_queue queue_;
  std::shared_ptr<OpenCLProgram> program_;
};

class OpenCLDeviceAPI final : public DeviceAPI {
 public:
  OpenCLDeviceAPI(Device device, cl_platform_id platform, cl_device_id id)
      : DeviceAPI(device), cl_(opencl_library()), id_(id) {
    attributes_.name = device_string(id, CL_DEVICE_NAME, device);
    driver_description_ = attributes_.name + "; " + device_string(id, CL_DEVICE_VERSION, device) + "; driver " +
                          device_string(id, CL_DRIVER_VERSION, device);
    attributes_.max_threads_per_block =
        static_cast<int>(device_info<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, device));
    attributes_.max_shared_memory_per_block =
        static_cast<int64_t>(device_info<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE, device));
    attributes_.dedicated_shared_memory =
        device_info<cl_device_local_mem_type>(id, CL_DEVICE_LOCAL_MEM_TYPE, device) == CL_LOCAL;
    attributes_.compute_units = static_cast<int>(device_info<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS, device));
    attributes_.global_memory_bytes =
        static_cast<int64_t>(device_info<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE, device));
    base_alignment_ = device_info<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, device) / 8;  // given in bits
    cl_context_properties context_props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    context_ = cl_.clCreateContext(context_props, 1, &id_, nullptr, nullptr, &err);
    check(err, device, "clCreateContext");
    cl_queue_properties queue_props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    queue_ = cl_.clCreateCommandQueueWithProperties(context_, id_, queue_props, &err);
    check(err, device, "clCreateCommandQueueWithProperties");
  }

  const DeviceAttributes& attributes() const override { return attributes_; }

  void* alloc(size_t bytes, size_t alignment) override {
    check_alignment(alignment, base_alignment_);
    cl_int err = CL_SUCCESS;
    // OpenCL refuses empty buffers.
    cl_mem mem = cl_.clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
    if (err != CL_SUCCESS) fail(device().str(), ": allocating ", bytes, " bytes failed: ", opencl_error_str(err));
    return mem;
  }
  void free(void* handle) override { cl_.clReleaseMemObject(static_cast<cl_mem>(handle)); }

  void fill_zero(void* handle, size_t offset, size_t bytes) override {
    if (!bytes) return;
    const cl_uchar zero = 0;
    check(cl_.clEnqueueFillBuffer(queue_, static_cast<cl_mem>(handle), &zero, 1, offset, bytes, 0, nullptr, nullptr),
          device(), "clEnqueueFillBuffer");
  }
  void copy_from_host(const void* src, void* dst, size_t dst_offset, size_t bytes) override {
    if (!bytes) return;  // OpenCL refuses empty copies
    check(cl_.clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(dst), CL_TRUE, dst_offset, bytes, src, 0, nullptr,
                                   nullptr),
          device(), "clEnqueueWriteBuffer");
  }
  void copy_to_host(const void* src, size_t src_offset, void* dst, size_t bytes) override {
    if (!bytes) return;
    check(cl_.clEnqueueReadBuffer(queue_, static_cast<cl_mem>(const_cast<void*>(src)), CL_TRUE, src_offset, bytes, dst,
                                  0, nullptr, nullptr),
          device(), "clEnqueueReadBuffer");
  }
  void copy_within(const void* src, size_t src_offset, void* dst, size_t dst_offset, size_t bytes) override {
    if (!bytes) return;
    check(cl_.clEnqueueCopyBuffer(queue_, static_cast<cl_mem>(const_cast<void*>(src)), static_cast<cl_mem>(dst),
                                  src_offset, dst_offset, bytes, 0, nullptr, nullptr),
          device(), "clEnqueueCopyBuffer");
  }
  void synchronize() override { check(cl_.clFinish(queue_), device(), "clFinish"); }

  // Built once per source, device and driver: later loads take the binary from the cache, and a
  // binary the driver refuses is dropped and built again from the source.
  std::unique_ptr<DeviceModule> load_module(const std::string& code, DeviceCodeFormat format) override {
    if (format != DeviceCodeFormat::OpenCLSource)
      fail(device().str(), ": OpenCL devices load OpenCL C source, not PTX");
    const OpenCLBinaryCache cache(code, driver_description_);
    if (std::optional<std::string> binary = cache.read()) {
      if (cl_program program = build_from_binary(*binary))
        return std::make_unique<OpenCLModule>(device(), queue_, std::make_shared<OpenCLProgram>(program));
      cache.remove();
    }
    const char* source = code.c_str();
    const size_t length = code.size();
    cl_int err = CL_SUCCESS;
    cl_program program = cl_.clCreateProgramWithSource(context_, 1, &source, &length, &err);
    check(err, device(), "clCreateProgramWithSource");
    auto holder = std::make_shared<OpenCLProgram>(program);
    err = cl_.clBuildProgram(program, 1, &id_, "", nullptr, nullptr);
    if (err != CL_SUCCESS)
      fail(device().str(), ": clBuildProgram failed: ", opencl_error_str(err), "\n", build_log(program));
    if (std::optional<std::string> binary = program_binary(program)) cache.write(*binary);
    return std::make_unique<OpenCLModule>(device(), queue_, std::move(holder));
  }

  std::unique_ptr<DeviceEvent> record_event() override {
    cl_event event = nullptr;
    check(cl_.clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), device(), "clEnqueueMarkerWithWaitList");
    return std::make_unique<OpenCLEvent>(device(), event);
  }
  double elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) override {
    cl_event a = own_event<OpenCLEvent>(start).event, b = own_event<OpenCLEvent>(end).event;
    check(cl_.clWaitForEvents(1, &b), device(), "clWaitForEvents");
    // A marker ends when all work queued before it has: end to end is the work in between.
    cl_ulong t0 = 0, t1 = 0;
    check(cl_.clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_END, sizeof t0, &t0, nullptr), device(),
          "clGetEventProfilingInfo");
    check(cl_.clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr), device(),
          "clGetEventProfilingInfo");
    return (static_cast<double>(t1) - static_cast<double>(t0)) * 1e-6;
  }

 private:
  // The built program, or null when the driver refuses the binary.
  cl_program build_from_binary(const std::string& binary) const {
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    const size_t size = binary.size();
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program program = cl_.clCreateProgramWithBinary(context_, 1, &id_, &size, &bytes, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS) {
      if (program) cl_.clReleaseProgram(program);
      return nullptr;
    }
    if (cl_.clBuildProgram(program, 1, &id_, "", nullptr, nullptr) != CL_SUCCESS) {
      cl_.clReleaseProgram(program);
      return nullptr;
    }
    return program;
  }

  // The device's binary of a built program (one device), if the driver gives it.
  std::optional<std::string> program_binary(cl_program program) const {
    size_t size = 0;
    if (cl_.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || !size)
      return std::nullopt;
    std::string binary(size, '\0');
    unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
    if (cl_.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) != CL_SUCCESS)
      return std::nullopt;
    return binary;
  }

  std::string build_log(cl_program program) const {
    size_t size = 0;
    if (cl_.clGetProgramBuildInfo(program, id_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return "";
    std::string log(size, '\0');
    cl_.clGetProgramBuildInfo(program, id_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    log.resize(std::strlen(log.c_str()));
    return log;
  }

  const OpenCLLibrary& cl_;
  cl_device_id id_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  size_t base_alignment_ = 0;
  DeviceAttributes attributes_;
  std::string driver_description_;  // what a cached binary must have been built for
};

}  // namespace

int opencl_device_count() { return static_cast<int>(device_list().devices.size()); }

std::unique_ptr<DeviceAPI> make_opencl_device_api(int id) {
  const OpenCLDeviceList& list = device_list();
  const Device device{DeviceType::OpenCL, id};
  if (id >= static_cast<int>(list.devices.size()))
    fail(device.str(), ": only ", list.devices.size(), " OpenCL device(s) found");
  return std::make_unique<OpenCLDeviceAPI>(device, list.platforms[id], list.devices[id]);
}

}  // namespace tessera::runtime

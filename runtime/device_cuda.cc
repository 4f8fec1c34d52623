// CUDA devices as DeviceAPIs, through the driver API opened at run time (cuda_driver.h). Each
// device uses its primary context (the one the CUDA runtime and PyTorch share) and the legacy
// default stream, so work is ordered with theirs and with the synchronous copies.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/device_api.h"
#include "runtime/error.h"

namespace tessera::runtime {

namespace {

using namespace cuda;

constexpr CUstream kDefaultStream = nullptr;
// cuMemAlloc aligns every allocation to at least this.
constexpr size_t kCudaAllocAlignment = 256;

void check(CUresult err, Device device, const char* what) {
  if (err != CUDA_SUCCESS) fail(device.str(), ": ", what, " failed: ", cuda_error_str(err));
}

CUdeviceptr ptr(const void* handle, size_t offset = 0) { return reinterpret_cast<CUdeviceptr>(handle) + offset; }

// Makes the device's context current on the calling thread (contexts are per thread).
struct ContextScope {
  ContextScope(CUcontext context, Device device) {
    check(cuda_driver().cuCtxSetCurrent(context), device, "cuCtxSetCurrent");
  }
};

struct CUDAEvent : DeviceEvent {
  CUDAEvent(Device device, CUevent event) : DeviceEvent(device), event(event) {}
  ~CUDAEvent() override { cuda_driver().cuEventDestroy(event); }
  CUevent event;
};

struct CUDAModuleHandle {
  CUDAModuleHandle(CUcontext context, CUmodule module) : context(context), module(module) {}
  ~CUDAModuleHandle() {
    cuda_driver().cuCtxSetCurrent(context);
    cuda_driver().cuModuleUnload(module);
  }
  CUcontext context;
  CUmodule module;
};

class CUDAFunction final : public DeviceFunction {
 public:
  CUDAFunction(Device device, std::shared_ptr<CUDAModuleHandle> module, CUfunction function, std::string name)
      : device_(device), module_(std::move(module)), function_(function), name_(std::move(name)) {}

  void launch(const LaunchConfig& config, const std::vector<KernelArg>& args) override {
    const std::string where = "kernel '" + name_ + "'";
    unsigned extents[6];
    for (int d = 0; d < 3; ++d) {
      for (auto [i, n] : {std::pair{d, config.grid[d]}, std::pair{d + 3, config.block[d]}}) {
        if (n == 0 || n > std::numeric_limits<unsigned>::max())
          fail(device_.str(), ": ", where, ": launch extent ", n, " is out of range");
        extents[i] = static_cast<unsigned>(n);
      }
    }
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].is_buffer() && !(args[i].device() == device_))
        fail(device_.str(), ": ", where, " argument ", i, " is memory of ", args[i].device().str());
      params[i] = const_cast<void*>(args[i].value());
    }
    ContextScope scope(module_->context, device_);
    CUresult err = cuda_driver().cuLaunchKernel(function_, extents[0], extents[1], extents[2], extents[3], extents[4],
                                                extents[5], static_cast<unsigned>(config.dynamic_shared_bytes),
                                                kDefaultStream, params.data(), nullptr);
    if (err != CUDA_SUCCESS) fail(device_.str(), ": launching ", where, " failed: ", cuda_error_str(err));
  }

 private:
  Device device_;
  std::shared_ptr<CUDAModuleHandle> module_;
  CUfunction function_;
  std::string name_;
};

class CUDAModule final : public DeviceModule {
 public:
  CUDAModule(Device device, std::shared_ptr<CUDAModuleHandle> module) : device_(device), module_(std::move(module)) {}

  std::shared_ptr<DeviceFunction> function(const std::string& name) override {
    CUfunction f = nullptr;
    CUresult err = cuda_driver().cuModuleGetFunction(&f, module_->module, name.c_str());
    if (err != CUDA_SUCCESS) fail(device_.str(), ": the module has no kernel '", name, "' (", cuda_error_str(err), ")");
    return std::make_shared<CUDAFunction>(device_, module_, f, name);
  }

 private:
  Device device_;
  std::shared_ptr<CUDAModuleHandle> module_;
};

class CUDADeviceAPI final : public DeviceAPI {
 public:
  CUDADeviceAPI(Device device, CUdevice id) : DeviceAPI(device), d_(cuda_driver()) {
    char name[256] = {};
    check(d_.cuDeviceGetName(name, sizeof name - 1, id), device, "cuDeviceGetName");
    attributes_.name = name;
    attributes_.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, id);
    attributes_.max_shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, id);
    attributes_.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, id);
    attributes_.compute_units = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, id);
    attributes_.dedicated_shared_memory = true;
    attributes_.compute_capability_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, id);
    attributes_.compute_capability_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, id);
    size_t memory = 0;
    check(d_.cuDeviceTotalMem(&memory, id), device, "cuDeviceTotalMem");
    attributes_.global_memory_bytes = static_cast<int64_t>(memory);
    check(d_.cuDevicePrimaryCtxRetain(&context_, id), device, "cuDevicePrimaryCtxRetain");
  }

  const DeviceAttributes& attributes() const override { return attributes_; }

  void* alloc(size_t bytes, size_t alignment) override {
    check_alignment(alignment, kCudaAllocAlignment);
    ContextScope scope(context_, device());
    CUdeviceptr p = 0;
    CUresult err = d_.cuMemAlloc(&p, std::max<size_t>(bytes, 1));
    if (err != CUDA_SUCCESS) fail(device().str(), ": allocating ", bytes, " bytes failed: ", cuda_error_str(err));
    return reinterpret_cast<void*>(p);
  }
  void free(void* handle) override {
    ContextScope scope(context_, device());
    d_.cuMemFree(ptr(handle));
  }
  void fill_zero(void* handle, size_t offset, size_t bytes) override {
    if (!bytes) return;
    ContextScope scope(context_, device());
    check(d_.cuMemsetD8Async(ptr(handle, offset), 0, bytes, kDefaultStream), device(), "cuMemsetD8Async");
  }
  void copy_from_host(const void* src, void* dst, size_t dst_offset, size_t bytes) override {
    if (!bytes) return;
    ContextScope scope(context_, device());
    check(d_.cuMemcpyHtoD(ptr(dst, dst_offset), src, bytes), device(), "cuMemcpyHtoD");
  }
  void copy_to_host(const void* src, size_t src_offset, void* dst, size_t bytes) override {
    if (!bytes) return;
    ContextScope scope(context_, device());
    check(d_.cuMemcpyDtoH(dst, ptr(src, src_offset), bytes), device(), "cuMemcpyDtoH");
  }
  void copy_within(const void* src, size_t src_offset, void* dst, size_t dst_offset, size_t bytes) override {
    if (!bytes) return;
    ContextScope scope(context_, device());
    check(d_.cuMemcpyDtoDAsync(ptr(dst, dst_offset), ptr(src, src_offset), bytes, kDefaultStream), device(),
          "cuMemcpyDtoDAsync");
  }
  void synchronize() override {
    ContextScope scope(context_, device());
    check(d_.cuCtxSynchronize(), device(), "cuCtxSynchronize");
  }

  std::unique_ptr<DeviceModule> load_module(const std::string& code, DeviceCodeFormat format) override {
    if (format != DeviceCodeFormat::PTX) fail(device().str(), ": CUDA devices load PTX, not OpenCL C");
    ContextScope scope(context_, device());
    // The PTX JIT's log says which line it refused.
    std::string log(8192, '\0');
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log.data(), reinterpret_cast<void*>(log.size())};
    CUmodule module = nullptr;
    CUresult err = d_.cuModuleLoadDataEx(&module, code.c_str(), 2, options, values);
    if (err != CUDA_SUCCESS) {
      log.resize(std::strlen(log.c_str()));
      fail(device().str(), ": loading PTX failed: ", cuda_error_str(err), "\n", log);
    }
    return std::make_unique<CUDAModule>(device(), std::make_shared<CUDAModuleHandle>(context_, module));
  }

  std::unique_ptr<DeviceEvent> record_event() override {
    ContextScope scope(context_, device());
    CUevent event = nullptr;
    check(d_.cuEventCreate(&event, 0), device(), "cuEventCreate");
    auto e = std::make_unique<CUDAEvent>(device(), event);
    check(d_.cuEventRecord(event, kDefaultStream), device(), "cuEventRecord");
    return e;
  }
  double elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) override {
    ContextScope scope(context_, device());
    CUevent a = own_event<CUDAEvent>(start).event, b = own_event<CUDAEvent>(end).event;
    check(d_.cuEventSynchronize(b), device(), "cuEventSynchronize");
    float ms = 0;
    check(d_.cuEventElapsedTime(&ms, a, b), device(), "cuEventElapsedTime");
    return ms;
  }

 private:
  int attribute(int what, CUdevice id) const {
    int value = 0;
    check(d_.cuDeviceGetAttribute(&value, what, id), device(), "cuDeviceGetAttribute");
    return value;
  }

  const DriverLibrary& d_;
  CUcontext context_ = nullptr;
  DeviceAttributes attributes_;
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  CUresult err = cuda_driver().cuDeviceGetCount(&n);
  if (err != CUDA_SUCCESS) fail("CUDA: cuDeviceGetCount failed: ", cuda_error_str(err));
  return n;
}

std::unique_ptr<DeviceAPI> make_cuda_device_api(int id) {
  const Device device{DeviceType::CUDA, id};
  const int n = cuda_device_count();
  if (id >= n) fail(device.str(), ": only ", n, " CUDA device(s) found");
  CUdevice handle = 0;
  check(cuda_driver().cuDeviceGet(&handle, id), device, "cuDeviceGet");
  return std::make_unique<CUDADeviceAPI>(device, handle);
}

}  // namespace tessera::runtime

// The device runtime on every device present: the CPU, PoCL's OpenCL device (scripts/setup.sh
// installs it), and CUDA devices where a driver is found; without one, the CUDA error is checked.
#include "runtime/device_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "temp_dir.h"
#include "error_of.h"

namespace tessera::runtime {
namespace {

using namespace tessera::testing;

const Device kOpenCL{DeviceType::OpenCL, 0};
const Device kCUDA{DeviceType::CUDA, 0};

std::vector<Device> present_devices() {
  std::vector<Device> devices = {Device::cpu(), kOpenCL};  // OpenCL is required: a missing PoCL fails
  if (DeviceAPI::exists(kCUDA)) devices.push_back(kCUDA);
  return devices;
}

std::vector<uint8_t> bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  DeviceAPI& api() { return DeviceAPI::get(GetParam()); }
};

TEST_P(DeviceTest, ExistsAndHasAttributes) {
  ASSERT_TRUE(DeviceAPI::exists(GetParam()))
      << error_of([&] { DeviceAPI::get(GetParam()); }) << " (scripts/setup.sh installs pocl-opencl-icd)";
  const DeviceAttributes& a = api().attributes();
  EXPECT_FALSE(a.name.empty());
  EXPECT_GT(a.max_threads_per_block, 0);
  EXPECT_GT(a.compute_units, 0);
  EXPECT_GT(a.warp_size, 0);
  EXPECT_EQ(api().device(), GetParam());
  EXPECT_GE(DeviceAPI::count(GetParam().type), 1);
  if (GetParam().type != DeviceType::CPU) {
    EXPECT_GT(a.max_shared_memory_per_block, 0);
    EXPECT_GT(a.global_memory_bytes, 0);
  }
  if (GetParam().type == DeviceType::CUDA) {
    EXPECT_GE(a.compute_capability_major, 3);
    EXPECT_EQ(a.warp_size, 32);
  }
}

TEST_P(DeviceTest, HostRoundTripsOfEverySize) {
  for (size_t n : {0, 1, 3, 64, 1001, 1 << 20}) {
    std::vector<uint8_t> in = bytes(n), out(n, 0xEE);
    void* h = api().alloc(n, 64);
    ASSERT_NE(h, nullptr);
    api().copy_from_host(in.data(), h, 0, n);
    api().copy_to_host(h, 0, out.data(), n);
    EXPECT_EQ(out, in) << n << " bytes";
    api().free(h);
  }
}

TEST_P(DeviceTest, OffsetsAndCopiesWithinTheDevice) {
  const size_t n = 257;
  std::vector<uint8_t> in = bytes(n), out(n, 0);
  void* a = api().alloc(n, 64);
  void* b = api().alloc(2 * n, 64);
  api().copy_from_host(in.data(), a, 0, n);
  api().fill_zero(b, 0, 2 * n);
  api().copy_within(a, 5, b, n + 3, n - 5);  // the tail of a into the second half of b
  api().synchronize();
  std::vector<uint8_t> got(2 * n);
  api().copy_to_host(b, 0, got.data(), 2 * n);
  for (size_t i = 0; i < 2 * n; ++i) {
    uint8_t expected = i >= n + 3 && i < 2 * n - 2 ? in[i - n - 3 + 5] : 0;
    ASSERT_EQ(got[i], expected) << "byte " << i;
  }
  api().copy_to_host(b, n + 3, out.data(), 10);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 10, in.begin() + 5));
  api().free(a);
  api().free(b);
}

TEST_P(DeviceTest, EventsTimeTheWorkBetweenThem) {
  std::vector<uint8_t> in = bytes(1 << 22), out(in.size());
  void* h = api().alloc(in.size(), 64);
  auto start = api().record_event();
  api().copy_from_host(in.data(), h, 0, in.size());
  auto end = api().record_event();
  double ms = api().elapsed_ms(*start, *end);
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 60e3);
  api().free(h);
}

TEST_P(DeviceTest, NDArraysLiveOnTheDeviceAndCopyBack) {
  NDArray host = NDArray::empty({3, 5}, kFloat32);
  std::iota(host.data_as<float>(), host.data_as<float>() + 15, 1.0f);
  NDArray fresh = NDArray::empty({3, 5}, kFloat32, GetParam());
  EXPECT_EQ(fresh.device(), GetParam());
  NDArray zeros = fresh.copy_to(Device::cpu());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(zeros.data_as<float>()[i], 0.0f);
  NDArray on_device = host.copy_to(GetParam());
  NDArray copy = on_device.copy_to(GetParam());  // within the device
  NDArray back = copy.copy_to(Device::cpu());
  EXPECT_EQ(back.device(), Device::cpu());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(back.data_as<float>()[i], i + 1.0f);
  EXPECT_EQ(NDArray::empty({0, 4}, kInt64, GetParam()).copy_to(Device::cpu()).numel(), 0);
  EXPECT_NE(error_of([&] {
              on_device.copy_from(NDArray::empty({5, 3}, kFloat32));
            }).find("expected shape (3, 5) float32, got (5, 3) float32"),
            std::string::npos);
}

TEST_P(DeviceTest, AlignmentsTheDeviceCannotPromiseAreRefused) {
  EXPECT_NE(error_of([&] { api().alloc(8, 3); }).find(GetParam().str() + ": alignment 3 is not a power of two"),
            std::string::npos);
  if (GetParam().type != DeviceType::CPU) {
    EXPECT_NE(error_of([&] { api().alloc(8, 1 << 20); }).find("exceeds the"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Present, DeviceTest, ::testing::ValuesIn(present_devices()), [](const auto& info) {
  return info.param.type == DeviceType::CPU      ? std::string("cpu")
         : info.param.type == DeviceType::OpenCL ? std::string("opencl")
                                                 : std::string("cuda");
});

TEST(NDArrayOnDevice, HostPointersOfDeviceArraysAreRefused) {
  NDArray a = NDArray::empty({2, 2}, kFloat32, kOpenCL);
  EXPECT_EQ(error_of([&] { a.data(); }),
            "the array (2, 2) float32 is on opencl(0), whose memory the host cannot address: copy it to the CPU first "
            "(copy_to)");
  EXPECT_NE(error_of([&] { a.data_as<float>(); }), "");
  EXPECT_NE(a.device_data(), nullptr);
}

constexpr const char* kVectorAddCL = R"(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
})";

// nvcc -ptx -arch=sm_75 of the same kernel, at PTX ISA 7.0 so that drivers from CUDA 11 on load it.
constexpr const char* kVectorAddPTX = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry vadd(.param .u64 vadd_param_0, .param .u64 vadd_param_1, .param .u64 vadd_param_2,
                     .param .u32 vadd_param_3)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [vadd_param_0];
  ld.param.u64 %rd2, [vadd_param_1];
  ld.param.u64 %rd3, [vadd_param_2];
  ld.param.u32 %r2, [vadd_param_3];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__BB0_2;
  cvta.to.global.u64 %rd4, %rd1;
  mul.wide.s32 %rd5, %r1, 4;
  add.s64 %rd6, %rd4, %rd5;
  cvta.to.global.u64 %rd7, %rd2;
  add.s64 %rd8, %rd7, %rd5;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f2, %f1;
  cvta.to.global.u64 %rd9, %rd3;
  add.s64 %rd10, %rd9, %rd5;
  st.global.f32 [%rd10], %f3;
$L__BB0_2:
  ret;
}
)";

// A vector add launched on `device`, checked against the host, and timed with device events.
void check_vector_add(Device device, const char* code, DeviceCodeFormat format) {
  DeviceAPI& api = DeviceAPI::get(device);
  const int n = 1000;  // not a multiple of the block: the kernel's bound check matters
  NDArray a = NDArray::empty({n}, kFloat32), b = NDArray::empty({n}, kFloat32);
  for (int i = 0; i < n; ++i) {
    a.data_as<float>()[i] = 0.5f * i;
    b.data_as<float>()[i] = 1000.0f - i;
  }
  NDArray da = a.copy_to(device), db = b.copy_to(device), dc = NDArray::empty({n}, kFloat32, device);
  std::shared_ptr<DeviceFunction> vadd = api.load_module(code, format)->function("vadd");  // the module goes
  LaunchConfig config;
  config.grid[0] = (n + 63) / 64;
  config.block[0] = 64;
  const std::vector<KernelArg> args = {KernelArg::array(da), KernelArg::array(db), KernelArg::array(dc),
                                       KernelArg::scalar<int32_t>(n)};
  vadd->launch(config, args);  // the first launch may compile for this block size
  auto start = api.record_event();
  vadd->launch(config, args);
  auto end = api.record_event();
  api.synchronize();
  EXPECT_GT(api.elapsed_ms(*start, *end), 0.0);
  NDArray c = dc.copy_to(Device::cpu());
  for (int i = 0; i < n; ++i) ASSERT_EQ(c.data_as<float>()[i], 0.5f * i + (1000.0f - i)) << "element " << i;

  // Memory of another device is refused, not handed to the kernel.
  NDArray host = NDArray::empty({n}, kFloat32);
  EXPECT_EQ(error_of([&] {
              vadd->launch(config, {KernelArg::array(da), KernelArg::array(host), KernelArg::array(dc),
                                    KernelArg::scalar<int32_t>(n)});
            }),
            device.str() + ": kernel 'vadd' argument 1 is memory of cpu(0)");
}

TEST(DeviceLaunch, OpenCLVectorAdd) { check_vector_add(kOpenCL, kVectorAddCL, DeviceCodeFormat::OpenCLSource); }

// The first load builds from source and stores the binary; the next loads from it; an entry whose
// binary the driver refuses is dropped and built again, never trusted.
TEST(DeviceLaunch, OpenCLBinariesAreCachedAndCheckedOnLoad) {
  const std::filesystem::path dir = testing::test_temp_dir() / "opencl-cache";
  setenv("TESSERA_OPENCL_CACHE", dir.c_str(), 1);
  const std::string source = std::string(kVectorAddCL) + "\n// " + std::to_string(getpid()) + "\n";
  check_vector_add(kOpenCL, source.c_str(), DeviceCodeFormat::OpenCLSource);
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].extension(), ".clbin");
  auto contents = [&] {
    std::ifstream in(entries[0], std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string entry = contents();
  ASSERT_NE(entry.find(source), std::string::npos);  // what it was built from, compared on load
  check_vector_add(kOpenCL, source.c_str(), DeviceCodeFormat::OpenCLSource);  // from the cache
  const size_t binary_at = entry.find(source) + source.size();
  std::ofstream(entries[0], std::ios::binary) << entry.substr(0, binary_at) << "not a binary";
  check_vector_add(kOpenCL, source.c_str(), DeviceCodeFormat::OpenCLSource);
  EXPECT_EQ(contents(), entry);  // rebuilt and stored again
  unsetenv("TESSERA_OPENCL_CACHE");
}

TEST(DeviceLaunch, CUDAVectorAdd) {
  if (!DeviceAPI::exists(kCUDA)) GTEST_SKIP() << "no CUDA device: " << error_of([] { DeviceAPI::get(kCUDA); });
  check_vector_add(kCUDA, kVectorAddPTX, DeviceCodeFormat::PTX);
}

TEST(DeviceLaunch, OpenCLErrorsNameTheKernelAndTheLog) {
  DeviceAPI& api = DeviceAPI::get(kOpenCL);
  std::string build =
      error_of([&] { api.load_module("__kernel void k() { undeclared_name; }", DeviceCodeFormat::OpenCLSource); });
  EXPECT_NE(build.find("opencl(0): clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << build;
  EXPECT_NE(build.find("undeclared_name"), std::string::npos) << build;  // the compiler's log
  auto module = api.load_module(kVectorAddCL, DeviceCodeFormat::OpenCLSource);
  EXPECT_EQ(error_of([&] { module->function("vsub"); }),
            "opencl(0): the program has no kernel 'vsub' (CL_INVALID_KERNEL_NAME (-46))");
  EXPECT_EQ(error_of([&] { api.load_module("", DeviceCodeFormat::PTX); }),
            "opencl(0): OpenCL devices load OpenCL C source, not PTX");
  EXPECT_NE(error_of([] { DeviceAPI::get(Device::cpu()).load_module("", DeviceCodeFormat::PTX); }), "");
}

TEST(DeviceErrors, MissingDevicesAreNamed) {
  const int n = DeviceAPI::count(DeviceType::OpenCL);
  EXPECT_EQ(error_of([&] {
              DeviceAPI::get({DeviceType::OpenCL, n});
            }),
            "opencl(" + std::to_string(n) + "): only " + std::to_string(n) + " OpenCL device(s) found");
  EXPECT_FALSE(DeviceAPI::exists({DeviceType::OpenCL, n}));
  EXPECT_EQ(error_of([] { DeviceAPI::get({DeviceType::OpenCL, -1}); }), "opencl(-1): device ids start at 0");
  EXPECT_EQ(error_of([] {
              DeviceAPI::get({DeviceType::CPU, 1});
            }),
            "cpu(1): the CPU is device 0 (its cores are one device)");
  EXPECT_NE(error_of([] {
              NDArray::empty({2}, kFloat32, {DeviceType::OpenCL, 99});
            }).find("opencl(99): only"),
            std::string::npos);
}

TEST(DeviceErrors, CUDAWithoutADriverSaysSo) {
  if (DeviceAPI::exists(kCUDA)) GTEST_SKIP() << "a CUDA device is present: DeviceTest and CUDAVectorAdd use it";
  const std::string error = error_of([] { DeviceAPI::get(kCUDA); });
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    EXPECT_EQ(error.rfind("no CUDA driver found (libcuda.so.1 could not be loaded: ", 0), 0u) << error;
  } else {
    dlclose(driver);
    EXPECT_NE(error.find("CUDA"), std::string::npos) << error;  // a driver without a GPU
  }
  EXPECT_EQ(DeviceAPI::count(DeviceType::CUDA), 0);
  EXPECT_EQ(error_of([] { NDArray::empty({4}, kFloat32, kCUDA); }), error);  // the same error, every time
}

}  // namespace
}  // namespace tessera::runtime

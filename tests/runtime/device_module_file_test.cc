// Modules for a device (format version 2 on): device programs in the metadata, no host code. A
// hand-written OpenCL program round-trips and runs on PoCL; the ways such a file can be wrong or
// meet the wrong device are each reported.
#include <gtest/gtest.h>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "runtime/module_loader.h"
#include "tests/runtime/test_module.h"

namespace tessera::runtime {
namespace {

using namespace testing;

const Device kOpenCL{DeviceType::OpenCL, 0};
const Device kCUDA{DeviceType::CUDA, 0};

// add4_metadata() with its kernel an OpenCL program: y[i] = x[i] + c[i].
ModuleMetadata opencl_add4() {
  ModuleMetadata m = add4_metadata();
  m.target = "opencl";
  m.arch.clear();
  DeviceProgramSpec p;
  p.name = "add4";
  p.args = m.kernels[0].args;
  DeviceKernelLaunch k;
  k.name = "add4_kernel0";
  k.config.block = {4, 1, 1};
  k.buffers = {0, 1, 2};
  p.kernels = {k};
  p.format = DeviceCodeFormat::OpenCLSource;
  p.code =
      "__kernel void add4_kernel0(__global const float* x, __global const float* c, __global float* y) {\n"
      "  int i = get_local_id(0);\n  y[i] = x[i] + c[i];\n}\n";
  m.kernels.clear();
  m.device_programs = {p};
  return m;
}

std::string write_device_module(const std::string& name, const ModuleMetadata& m) {
  const std::string path = temp_path(name);
  write_module_file(path, "", m);
  return path;
}

std::string load_error(const std::string& path, std::optional<Device> device = std::nullopt) {
  try {
    load_module(path, device);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "loading " << path << " did not fail";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(DeviceModuleFile, RoundTripsAndRunsOnTheDevice) {
  if (!DeviceAPI::exists(kOpenCL)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  const std::string path = write_device_module("add4_opencl.so", opencl_add4());
  EXPECT_TRUE(is_module_file(path));
  LoadedModule m = load_module(path);
  EXPECT_EQ(m.target, "opencl");
  EXPECT_EQ(m.format_version, kModuleFormatVersion);
  ASSERT_EQ(m.executor->device(), kOpenCL);
  NDArray x = NDArray::empty({4}, kFloat32);
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = float(i);
  m.executor->set_input(0, x);  // from the host
  m.executor->run();
  const NDArray y = m.executor->output(0).copy_to(Device::cpu());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data_as<float>()[i], float(i) + 10.0f * (i + 1));
  EXPECT_TRUE(contains(load_error(path, Device::cpu()), "on cpu(0): it was built for opencl devices (target 'opencl')"));
  EXPECT_TRUE(contains(load_error(path, Device{DeviceType::OpenCL, 9}), "on opencl(9): "));
}

TEST(DeviceModuleFile, AMissingDriverOrAnOlderGpuIsNamedAtLoad) {
  ModuleMetadata m = opencl_add4();
  m.target = "cuda -arch=sm_90";
  m.device_programs[0].format = DeviceCodeFormat::PTX;
  m.device_programs[0].code = ".version 8.0\n.target sm_90\n";
  const std::string path = write_device_module("add4_cuda.so", m);
  const std::string message = load_error(path);
  EXPECT_TRUE(contains(message, "cannot load module '" + path + "' (target 'cuda -arch=sm_90') on cuda(0): ")) << message;
  if (!DeviceAPI::exists(kCUDA)) {
    EXPECT_TRUE(contains(message, "no CUDA driver found")) << message;
  } else if (DeviceAPI::get(kCUDA).attributes().compute_capability_major < 9) {
    EXPECT_TRUE(contains(message, "is older than the code's sm_90")) << message;
  }
  EXPECT_TRUE(contains(load_error(path, kOpenCL), "it was built for cuda devices"));
  // A CPU module asked onto a device says what to build instead.
  EXPECT_TRUE(contains(load_error(write_add4_module("cpu.so"), kOpenCL), "it holds CPU code (target 'test'); build "
                                                                         "the model for opencl to run it there"));
}

TEST(DeviceModuleFile, InconsistentDeviceModulesAreCorrupt) {
  ModuleMetadata m = opencl_add4();
  // Host code beside device programs.
  const std::string both = temp_path("both.so");
  write_module_file(both, read_file(TESSERA_TEST_KERNELS), m);
  EXPECT_TRUE(contains(load_error(both), "corrupt: it holds")) << load_error(both);
  m.plan.steps[0].kernel = "add5";
  EXPECT_TRUE(contains(load_error(write_device_module("unknown.so", m)),
                       "step 0 calls 'add5', which is neither a kernel nor a device program"));
  m = opencl_add4();
  m.device_programs.push_back(m.device_programs[0]);
  m.device_programs[1].name = "other";
  m.device_programs[1].format = DeviceCodeFormat::PTX;
  EXPECT_TRUE(contains(load_error(write_device_module("mixed.so", m)),
                       "device program 'other' holds code of another kind of device"));
  m = opencl_add4();
  m.device_programs[0].kernels[0].grid[1] = int64_t(1) << 40;
  EXPECT_TRUE(contains(load_error(write_device_module("grid.so", m)), "device kernel 'add4_kernel0' has a grid extent of "
                                                                      "1099511627776"));
  m = opencl_add4();
  m.device_programs[0].kernels[0].config.block = {64, 64, 64};
  EXPECT_TRUE(contains(load_error(write_device_module("block.so", m)), "has an invalid block (262144 threads"));
  m = opencl_add4();
  m.device_programs[0].kernels[0].buffers = {0, 1, 3};
  EXPECT_TRUE(contains(load_error(write_device_module("buffer.so", m)), "device kernel 'add4_kernel0': buffer 3 is "
                                                                        "out of range (0..3)"));
}

// Programs of symbolic sizes (format version 4): the variables, grids and kernels' variables
// round-trip; an older version cannot hold them; a grid of an unknown variable or a kernel's
// variable out of range is corrupt.
TEST(DeviceModuleFile, ProgramsOfSymbolicSizesRoundTripFromVersionFour) {
  ModuleMetadata m = opencl_add4();
  DeviceProgramSpec& p = m.device_programs[0];
  const ShapeExpr n = ShapeExpr::var("n");
  p.shape_vars = {"n"};
  for (BufferSpec& a : p.args) a.shape = {n};
  p.kernels[0].grid[0] = ShapeExpr::binary(ShapeExpr::Op::FloorDiv, ShapeExpr::binary(ShapeExpr::Op::Add, n, 3), 4);
  p.kernels[0].shape_vars = {0};
  const ModuleFile f = read_module_file(write_device_module("symbolic.so", m));
  const DeviceProgramSpec& read = f.metadata.device_programs.at(0);
  EXPECT_EQ(read.shape_vars, std::vector<std::string>{"n"});
  EXPECT_EQ(read.args.at(1).shape, SymbolicShape{n});
  EXPECT_EQ(read.kernels.at(0).grid[0], p.kernels[0].grid[0]);
  EXPECT_EQ(read.kernels.at(0).grid[1], ShapeExpr(1));
  EXPECT_EQ(read.kernels.at(0).shape_vars, std::vector<int>{0});
  try {
    write_module_file(temp_path("symbolic_v3.so"), "", m, 3);
    ADD_FAILURE() << "a version 3 file was written with a program of symbolic sizes";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "version 3 cannot hold device program 'add4' of symbolic sizes")) << e.what();
  }
  ModuleMetadata unknown = m;
  unknown.device_programs[0].kernels[0].grid[2] = ShapeExpr::var("m");
  EXPECT_TRUE(contains(load_error(write_device_module("grid_var.so", unknown)),
                       "device kernel 'add4_kernel0' grid has the dimension variable m, which is not among its "
                       "variables"));
  ModuleMetadata out_of_range = m;
  out_of_range.device_programs[0].kernels[0].shape_vars = {1};
  EXPECT_TRUE(contains(load_error(write_device_module("kernel_var.so", out_of_range)),
                       "device kernel 'add4_kernel0': variable 1 is out of range (0..1)"));
}

TEST(DeviceModuleFile, VersionOneFilesStillLoadAndCannotHoldDevicePrograms) {
  const std::string path = temp_path("v1.so");
  write_module_file(path, read_file(TESSERA_TEST_KERNELS), add4_metadata(), 1);
  LoadedModule m = load_module(path);
  EXPECT_EQ(m.format_version, 1u);
  EXPECT_EQ(m.executor->device(), Device::cpu());
  try {
    write_module_file(temp_path("v1_device.so"), "", opencl_add4(), 1);
    FAIL() << "a version 1 file was written with device programs";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "version 1 cannot hold device programs")) << e.what();
  }
}

TEST(DeviceModuleFile, DevicesParseFromText) {
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceType::CUDA, 1}));
  EXPECT_EQ(Device::parse("opencl"), kOpenCL);
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  for (const char* bad : {"vulkan", "cuda:", "cuda:x", "cuda:-1", "opencl:1x"}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "device")) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera::runtime

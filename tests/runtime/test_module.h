// Writing small module files by hand for the runtime's tests: the code is the test kernel
// library (test_kernels.c), the plan y = add4(x, c) with a constant c = {10, 20, 30, 40}.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/cpu_features.h"
#include "runtime/module_file.h"
#include "temp_dir.h"

namespace tessera::runtime::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline ModuleMetadata add4_metadata() {
  using Info = GraphPlan::TensorInfo;
  ModuleMetadata m;
  m.target = "test";
  m.arch = host_arch();
  const BufferSpec f4{"", {4}, kFloat32};
  m.kernels = {{"add4", {f4, f4, f4}}};
  GraphPlan& p = m.plan;
  p.tensors = {{Info::Input, "x", {4}, kFloat32, 0},
               {Info::Constant, "c", {4}, kFloat32, 0},
               {Info::Output, "y", {4}, kFloat32, 0}};
  p.steps = {{"add4", {0, 1, 2}}};
  p.inputs = {0};
  p.outputs = {2};
  NDArray c = NDArray::empty({4}, kFloat32);
  for (int i = 0; i < 4; ++i) c.data_as<float>()[i] = 10.0f * (i + 1);
  p.constants = {c};
  return m;
}

// A path in the test process's temporary folder.
inline std::string temp_path(const std::string& name) { return (tessera::testing::test_temp_dir() / name).string(); }

inline std::string write_add4_module(const std::string& name, const ModuleMetadata& m = add4_metadata()) {
  std::string path = temp_path(name);
  write_module_file(path, read_file(TESSERA_TEST_KERNELS), m);
  return path;
}

}  // namespace tessera::runtime::testing

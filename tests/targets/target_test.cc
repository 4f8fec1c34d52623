#include "targets/target.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "targets/build.h"

namespace tessera::targets {
namespace {

void expect_error(const std::string& text, const std::string& part) {
  try {
    Target::parse(text);
    FAIL() << "parsing '" << text << "' should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Target, ParsesLlvmOptions) {
  Target t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx2,-avx512f");
  EXPECT_EQ(t.kind, "llvm");
  EXPECT_EQ(t.mtriple, "x86_64-linux-gnu");
  EXPECT_EQ(t.mcpu, "znver3");
  EXPECT_EQ(t.mattr, (std::vector<std::string>{"+avx2", "-avx512f"}));
  EXPECT_EQ(Target::parse("llvm").mcpu, "");
  EXPECT_EQ(Target::parse("  llvm   -mcpu=skylake-avx512 ").mcpu, "skylake-avx512");
}

TEST(Target, ParsesOtherKinds) {
  EXPECT_EQ(Target::parse("c").kind, "c");
  EXPECT_EQ(Target::parse("opencl").kind, "opencl");
  Target cuda = Target::parse("cuda -arch=sm_90");
  EXPECT_EQ(cuda.kind, "cuda");
  EXPECT_EQ(cuda.arch, "sm_90");
}

TEST(Target, StrRoundTrips) {
  for (const char* text :
       {"llvm", "llvm -mcpu=skylake-avx512", "llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx2,-avx512f", "c",
        "opencl", "opencl -device=pthread-skylake-avx512-amd-epyc", "cuda", "cuda -arch=sm_90"}) {
    Target t = Target::parse(text);
    EXPECT_EQ(t.str(), text);
    EXPECT_EQ(Target::parse(t.str()), t);
  }
  // Option order does not matter; the canonical string has one.
  EXPECT_EQ(Target::parse("llvm -mcpu=znver3 -mtriple=x86_64-linux-gnu").str(),
            "llvm -mtriple=x86_64-linux-gnu -mcpu=znver3");
}

TEST(Target, HostIsComplete) {
  Target host = Target::host();
  EXPECT_EQ(host.kind, "llvm");
  EXPECT_FALSE(host.mtriple.empty());
  EXPECT_FALSE(host.mcpu.empty());
  EXPECT_FALSE(host.mattr.empty());
  EXPECT_EQ(Target::parse(host.str()), host);
}

TEST(Target, HostDefaultsNameTheHostsCpuAndFeatures) {
  Target host = Target::host(), spelled = Target::parse("llvm").with_host_defaults();
  EXPECT_EQ(spelled.mtriple, host.mtriple);
  EXPECT_EQ(spelled.mcpu, host.mcpu);
  for (const std::string& f : spelled.mattr)
    EXPECT_NE(std::find(host.mattr.begin(), host.mattr.end(), f), host.mattr.end()) << f << " is not the host's";
  // A feature given stays, last, and is not also listed from the host.
  Target without = Target::parse("llvm -mattr=-avx2").with_host_defaults();
  ASSERT_FALSE(without.mattr.empty());
  EXPECT_EQ(without.mattr.back(), "-avx2");
  EXPECT_EQ(std::count_if(without.mattr.begin(), without.mattr.end(),
                          [](const std::string& f) { return f.substr(1) == "avx2"; }),
            1);
  // A CPU given, or another architecture, gets no host features.
  EXPECT_TRUE(Target::parse("llvm -mcpu=znver3").with_host_defaults().mattr.empty());
  Target arm = Target::parse("llvm -mtriple=aarch64-linux-gnu").with_host_defaults();
  EXPECT_TRUE(arm.mcpu.empty());
  EXPECT_TRUE(arm.mattr.empty());
}

TEST(Target, RejectsBadStrings) {
  expect_error("", "empty");
  expect_error("vulkan", "unknown kind 'vulkan'");
  expect_error("llvm -mcpux=znver3", "unknown option '-mcpux'");
  expect_error("llvm -arch=sm_90", "unknown option '-arch'");
  expect_error("c -mcpu=znver3", "takes no options");
  expect_error("llvm -mcpu=a -mcpu=b", "-mcpu is given twice");
  expect_error("llvm -mcpu", "-mcpu needs a value");
  expect_error("llvm -mcpu=", "-mcpu needs a value");
  expect_error("llvm -mattr=avx2", "feature 'avx2' must be +name or -name");
  expect_error("llvm -mattr=+avx2,", "feature ''");
  expect_error("llvm mcpu=znver3", "expected an option -name=value, got 'mcpu=znver3'");
  expect_error("llvm -mcpu=zn;ver3", "invalid value 'zn;ver3'");
  expect_error("cuda -arch=90", "expected sm_<number>");
  expect_error("opencl -device=Tesla_V100", "expected a device name as device_slug spells it ('tesla_v100')");
  expect_error("opencl -device=a--b", "('a-b')");
  expect_error("cuda -device=x", "unknown option '-device'");
}

TEST(Target, DeviceSlugs) {
  EXPECT_EQ(device_slug("pthread-skylake-avx512-AMD EPYC 7B13"), "pthread-skylake-avx512-amd-epyc-7b13");
  EXPECT_EQ(device_slug("  NVIDIA GeForce RTX 4090 (rev. 2) "), "nvidia-geforce-rtx-4090-rev.-2");
  EXPECT_EQ(device_slug(""), "");
}

// Tuning records of an OpenCL target are keyed by the device they were measured on.
TEST(Target, OpenCLTargetsNameTheirDevice) {
  const runtime::Device first{runtime::DeviceType::OpenCL, 0};
  if (!runtime::DeviceAPI::exists(first)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  const std::string name = device_slug(runtime::DeviceAPI::get(first).attributes().name);
  EXPECT_EQ(tuning_key(Target::parse("opencl")), "opencl -device=" + name);
  EXPECT_EQ(device_of(Target::parse("opencl -device=" + name)), first);
  EXPECT_EQ(find_device(Target::parse("opencl -device=no-such-gpu")), std::nullopt);
  EXPECT_EQ(tuning_key(Target::parse("opencl -device=no-such-gpu")), "opencl -device=no-such-gpu");
  EXPECT_EQ(tuning_key(Target::parse("llvm")), Target::parse("llvm").with_host_defaults().str());
  try {
    device_of(Target::parse("opencl -device=no-such-gpu"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such opencl device here (found: " + name + ")"), std::string::npos)
        << e.what();
  }
}

TEST(Target, ExportRejectsDeviceTargets) {
  for (const char* text : {"opencl", "cuda -arch=sm_90"}) {
    try {
      build_shared_library({}, Target::parse(text));
      FAIL() << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not implemented yet"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera::targets

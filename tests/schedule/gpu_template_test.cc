// The default GPU schedule (schedule/templates/gpu.h): what each kind of stage is given, as the
// lowered kernels show it. Their numbers are checked on PoCL by the model and node-suite tests.
#include <gtest/gtest.h>

#include <tuple>

#include "runtime/device_api.h"
#include "runtime/device_program.h"
#include "schedule/templates/gpu.h"
#include "schedule_test_util.h"

namespace tessera::schedule::testing {
namespace {

HardwareParams gpu(int warp_size) {
  HardwareParams hw;
  hw.registers = tensor_ir::ops::Registers::scalar_device();
  hw.gpu = {1024, 48 * 1024, warp_size};
  return hw;
}

std::string lowered(const std::vector<Tensor>& outputs, const std::vector<Tensor>& args, int warp_size = 32) {
  auto s = default_gpu_schedule(outputs, gpu(warp_size));
  return to_string(lower_for_device(*s, args, "main", warp_size));
}

TEST(GpuTemplate, AThreadPerElementWithShortReductionsInTheThread) {
  Matmul mm = matmul(101, 299, 8);  // 30199 outputs of 8 terms each; prime extents: no whole tiles
  std::string text = lowered({mm.C}, {mm.A, mm.B, mm.C});
  for (const char* piece : {"launch_thread (i.j.fused.outer = blockIdx.x, 118) {",
                            "launch_thread (i.j.fused.inner = threadIdx.x, 256) {", "for (k, 0, 8) {"})
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
}

TEST(GpuTemplate, ReductionsComputeRegisterTilesWhereTheAxesDivide) {
  Matmul mm = matmul(100, 300, 8);  // 1875 threads of 4 x 4 tiles, in blocks of a divisor of 1875
  std::string text = lowered({mm.C}, {mm.A, mm.B, mm.C});
  for (const char* piece : {"launch_thread (i.outer.j.outer.fused.outer = blockIdx.x, 15) {",
                            "launch_thread (i.outer.j.outer.fused.inner = threadIdx.x, 125) {",
                            "allocate C.local: float32[16] (local)", "for (k, 0, 8) {\n        unrolled (i, 0, 4) {",
                            "unrolled (i.inner, 0, 4) {"})
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
}

TEST(GpuTemplate, MatrixProductsShareSharedPanelsInBlocksOfTiles) {
  Matmul mm = matmul(256, 512, 64);  // 64 x 128 tiles of 4 x 4; blocks of 16 x 16 tiles
  std::string text = lowered({mm.C}, {mm.A, mm.B, mm.C});
  for (const char* piece : {"launch_thread (i.outer.outer.j.outer.outer.fused = blockIdx.x, 32) {",
                            "launch_thread (i.outer.inner = threadIdx.y, 16) {", "launch_thread (j.outer.inner = threadIdx.x, 16) {",
                            "allocate A.shared: float32[1024] (shared)", "allocate B.shared: float32[1024] (shared)",
                            "for (k.outer, 0, 4) {\n          barrier()", "allocate C.local: float32[16] (local)"})
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
}

// PoCL's local memory is not on the chip, so models built for it never take the panels: here the
// template is told it is, and the panels run there against the host's product (awkward shapes:
// tiles that leave whole blocks only in some axes, a reduction not a multiple of the step).
TEST(GpuTemplate, SharedPanelsComputeTheProductOnOpenCL) {
  const runtime::Device opencl{runtime::DeviceType::OpenCL, 0};
  if (!runtime::DeviceAPI::exists(opencl)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  for (auto [n, m, k] : {std::tuple<int64_t, int64_t, int64_t>{256, 512, 64}, {96, 40, 20}, {128, 192, 50}}) {
    Matmul mm = matmul(n, m, k);
    HardwareParams hw = gpu(1);
    hw.gpu.dedicated_shared_memory = true;
    auto s = default_gpu_schedule({mm.C}, hw);
    LoweredFunc f = lower_for_device(*s, {mm.A, mm.B, mm.C}, "mm", 1);
    ASSERT_TRUE(contains(to_string(f), "(shared)")) << to_string(f);
    auto module = targets::build({f}, targets::Target::parse("opencl"));
    NDArray a = random_array({n, k}, 1), b = random_array({k, m}, 2);
    std::vector<NDArray> on = {a.copy_to(opencl), b.copy_to(opencl), NDArray::empty({n, m}, runtime::kFloat32, opencl)};
    (*module->device_program("mm"))(on);
    EXPECT_LT(matmul_error(mm, a, b, on[2].copy_to(runtime::Device::cpu())), 1e-4) << n << " x " << m << " x " << k;
  }
}

// A 3x3 convolution with padding, NCHW: C input and K output channels of H x W.
struct Conv {
  Tensor X, W, Y;
};

Conv conv3x3(int64_t c, int64_t k, int64_t h, int64_t w) {
  Conv cv;
  cv.X = placeholder({Expr(1), Expr(c), Expr(h), Expr(w)}, runtime::kFloat32, "X");
  cv.W = placeholder({Expr(k), Expr(c), Expr(3), Expr(3)}, runtime::kFloat32, "W");
  Tensor padded = compute(
      {Expr(1), Expr(c), Expr(h + 2), Expr(w + 2)},
      [&](const std::vector<Var>& v) {
        Expr y = v[2] - 1, x = v[3] - 1;
        Expr inside = logical_and(logical_and(y >= 0, y < Expr(h)), logical_and(x >= 0, x < Expr(w)));
        return select(inside, cv.X(v[0], v[1], y, x), make_zero(runtime::kFloat32));
      },
      "pad");
  IterVar rc = reduce_axis(Range(Expr(0), Expr(c)), "rc"), ry = reduce_axis(Range(Expr(0), Expr(3)), "ry"),
          rx = reduce_axis(Range(Expr(0), Expr(3)), "rx");
  cv.Y = compute(
      {Expr(1), Expr(k), Expr(h), Expr(w)},
      [&](const std::vector<Var>& v) {
        return sum(padded(v[0], rc, v[2] + ry, v[3] + rx) * cv.W(v[1], rc, ry, rx), {rc, ry, rx});
      },
      "conv");
  return cv;
}

// A convolution's panels: a slice of input channels with its window's halo, and the block's
// output channels' weights for that slice, as deep as half a block's shared memory allows; none
// where not even two channels fit.
TEST(GpuTemplate, ConvolutionsStagePanelsThatFitInSharedMemory) {
  Conv cv = conv3x3(64, 64, 14, 16);
  HardwareParams hw = gpu(32);
  auto text = [&](const HardwareParams& h) {
    return to_string(lower_for_device(*default_gpu_schedule({cv.Y}, h), {cv.X, cv.W, cv.Y}, "conv", 32));
  };
  EXPECT_TRUE(contains(text(hw), "(shared)")) << text(hw);
  hw.gpu.max_shared_memory_bytes = 2 * 1024;
  EXPECT_FALSE(contains(text(hw), "(shared)")) << text(hw);
  hw.gpu.dedicated_shared_memory = false;
  hw.gpu.max_shared_memory_bytes = 48 * 1024;
  EXPECT_FALSE(contains(text(hw), "(shared)"));
}

// The same panels on PoCL (told its shared memory is on the chip), against the unscheduled loop
// nest on the host: channels not a multiple of the slice, images whose tiles leave partial blocks.
TEST(GpuTemplate, ConvolutionPanelsComputeTheConvolutionOnOpenCL) {
  const runtime::Device opencl{runtime::DeviceType::OpenCL, 0};
  if (!runtime::DeviceAPI::exists(opencl)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  for (auto [c, k, h, w] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{64, 64, 14, 16}, {40, 24, 9, 12},
                            {17, 32, 8, 8}}) {
    Conv cv = conv3x3(c, k, h, w);
    HardwareParams hw = gpu(1);
    hw.gpu.dedicated_shared_memory = true;
    LoweredFunc f = lower_for_device(*default_gpu_schedule({cv.Y}, hw), {cv.X, cv.W, cv.Y}, "conv", 1);
    if (c == 64) {
      ASSERT_TRUE(contains(to_string(f), "(shared)")) << to_string(f);
    }
    NDArray x = random_array({1, c, h, w}, 3), wt = random_array({k, c, 3, 3}, 4);
    NDArray expected = NDArray::empty({1, k, h, w}, runtime::kFloat32);
    Schedule plain({cv.Y});
    run(plain, {cv.X, cv.W, cv.Y}, {x, wt, expected});
    auto module = targets::build({f}, targets::Target::parse("opencl"));
    std::vector<NDArray> on = {x.copy_to(opencl), wt.copy_to(opencl), NDArray::empty({1, k, h, w}, runtime::kFloat32, opencl)};
    (*module->device_program("conv"))(on);
    NDArray got = on[2].copy_to(runtime::Device::cpu());
    double err = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      err = std::max(err, std::fabs(double(got.data_as<float>()[i]) - expected.data_as<float>()[i]));
    EXPECT_LT(err, 1e-4) << c << " x " << k << " x " << h << " x " << w;
  }
}

// Y[b, i, j] = X[b, j, i] + 1: a block stages a 32 x 32 tile of X in shared memory (rows padded
// to 33), on PoCL only when told its shared memory is on the chip; awkward extents leave partial
// tiles at both edges.
TEST(GpuTemplate, TransposesStageTilesInSharedMemory) {
  const int64_t b = 3, n = 70, m = 45;
  Tensor X = placeholder({Expr(b), Expr(m), Expr(n)}, runtime::kFloat32, "X");
  Tensor Y = compute(
      {Expr(b), Expr(n), Expr(m)}, [&](const std::vector<Var>& v) { return X(v[0], v[2], v[1]) + make_const(runtime::kFloat32, 1); }, "Y");
  HardwareParams hw = gpu(1);
  EXPECT_TRUE(contains(lowered({Y}, {X, Y}, 1), "(shared)"));
  hw.gpu.dedicated_shared_memory = false;
  EXPECT_FALSE(contains(to_string(lower_for_device(*default_gpu_schedule({Y}, hw), {X, Y}, "t", 1)), "(shared)"));

  const runtime::Device opencl{runtime::DeviceType::OpenCL, 0};
  if (!runtime::DeviceAPI::exists(opencl)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  hw.gpu.dedicated_shared_memory = true;
  auto module = targets::build({lower_for_device(*default_gpu_schedule({Y}, hw), {X, Y}, "t", 1)},
                               targets::Target::parse("opencl"));
  NDArray x = random_array({b, m, n}, 5);
  std::vector<NDArray> on = {x.copy_to(opencl), NDArray::empty({b, n, m}, runtime::kFloat32, opencl)};
  (*module->device_program("t"))(on);
  NDArray y = on[1].copy_to(runtime::Device::cpu());
  for (int64_t k = 0; k < b; ++k)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        ASSERT_EQ(y.data_as<float>()[(k * n + i) * m + j], x.data_as<float>()[(k * m + j) * n + i] + 1.0f)
            << k << ", " << i << ", " << j;
}

TEST(GpuTemplate, AnOutputReadByAnotherOutputIsTiledAndStillRead) {
  // cache_write's copy replaces C for its reader too (max_pool with its argmax is such a pair).
  Matmul mm = matmul(16, 16, 8);
  Tensor twice = compute({Expr(16), Expr(16)}, [&](const std::vector<Var>& v) { return mm.C(v[0], v[1]) * 2; }, "twice");
  std::string text = lowered({mm.C, twice}, {mm.A, mm.B, mm.C, twice});
  EXPECT_TRUE(contains(text, "allocate C.local: float32[16] (local)")) << text;
  EXPECT_TRUE(contains(text, "twice[") && contains(text, "C[")) << text;
}

TEST(GpuTemplate, FewOutputsOfLongReductionsShareABlock) {
  Matmul mm = matmul(3, 5, 1000);  // 15 outputs of 1000 terms: a block each, 256 threads sharing them
  std::string text = lowered({mm.C}, {mm.A, mm.B, mm.C});
  for (const char* piece : {"launch_thread (i.j.fused = blockIdx.x, 15) {", "launch_thread (k.inner = threadIdx.x, 256)",
                            "warp_shuffle_down", "allocate C.warps: float32[8] (shared)"})
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
  EXPECT_FALSE(contains(lowered({mm.C}, {mm.A, mm.B, mm.C}, 1), "warp_shuffle_down"));
}

TEST(GpuTemplate, InjectiveStagesInlineAndAReductionComputesInItsConsumersThreads) {
  Matmul mm = matmul(40, 30, 20);
  Tensor relu = compute(
      {Expr(40), Expr(30)}, [&](const std::vector<Var>& v) { return max(mm.C(v[0], v[1]) * 2, make_zero(runtime::kFloat32)); }, "relu");
  std::string text = lowered({relu}, {mm.A, mm.B, relu});
  // One kernel: each thread computes its 4 x 2 tile of C in registers, then the epilogue.
  EXPECT_TRUE(contains(text, "allocate C: float32[8] (local)")) << text;
  EXPECT_EQ(text.find("blockIdx.x"), text.rfind("blockIdx.x")) << text;
}

TEST(GpuTemplate, AScalarRunsOnOneThread) {
  Tensor A = placeholder({Expr(1)}, runtime::kFloat32, "A");
  Tensor S = compute({}, [&](const std::vector<Var>&) { return A(Expr(0)) * 2; }, "S");
  std::string text = lowered({S}, {A, S});
  EXPECT_TRUE(contains(text, "launch_thread (S.block = blockIdx.x, 1) {\n    launch_thread (S.thread = threadIdx.x, 1)"))
      << text;
}

}  // namespace
}  // namespace tessera::schedule::testing

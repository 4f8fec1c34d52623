// Each schedule primitive: the structure of the code it lowers to and the numbers it computes,
// on shapes its factors do not divide.
#include <gtest/gtest.h>

#include "schedule_test_util.h"

namespace tessera::schedule::testing {
namespace {

class PrimitiveTest : public ::testing::TestWithParam<Case> {};

TEST_P(PrimitiveTest, LowersAndComputes) {
  Matmul mm = matmul(19, 37, 11);
  Schedule s({mm.C});
  GetParam().apply(s, mm);
  if (GetParam().device) {
    // Device kernels run where a device code generator is (tests/targets); here, their structure.
    std::string text = to_string(lower_for_device(s, {mm.A, mm.B, mm.C}));
    for (const auto& piece : GetParam().expect)
      EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
    return;
  }
  NDArray a = random_array({19, 11}, 1), b = random_array({11, 37}, 2), c = NDArray::empty({19, 37}, runtime::kFloat32);
  LoweredFunc f = run(s, {mm.A, mm.B, mm.C}, {a, b, c});
  std::string text = to_string(f);
  for (const auto& piece : GetParam().expect)
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
  EXPECT_LT(matmul_error(mm, a, b, c), 1e-4) << text;
}

INSTANTIATE_TEST_SUITE_P(Schedule, PrimitiveTest, ::testing::ValuesIn(schedule_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// TVM's row reduction: rfactor gives each thread a strided share of the reduction, whose loop is
// bound to threadIdx.x; the threads' partials meet and thread 0 stores the result. Lowered for a
// device whose warps have `warp_size` lanes.
std::string cross_thread_matmul(int64_t k, int threads, int warp_size) {
  Matmul mm = matmul(3, 5, k);
  Schedule s({mm.C});
  auto [ko, ki] = s[mm.C].split(s[mm.C].loop("k"), threads);
  Tensor rf = s.rfactor(mm.C, ki);
  Stage& c = s[mm.C];
  c.bind(c.loop("i"), "blockIdx.y");
  c.bind(c.loop("j"), "blockIdx.x");
  c.bind(c.loop("k.inner"), "threadIdx.x");
  s[rf].compute_at(c, c.loop("k.inner"));
  return to_string(lower_for_device(s, {mm.A, mm.B, mm.C}, "main", warp_size));
}

// On a device without warps, the partials meet in a tree through shared memory.
TEST(Primitives, CrossThreadReductionAfterRfactor) {
  std::string text = cross_thread_matmul(37, 16, 1);
  for (const char* piece :
       {"launch_thread (i = blockIdx.y, 3) {\n    launch_thread (j = blockIdx.x, 5) {\n      launch_thread (k.inner = "
        "threadIdx.x, 16) {\n        allocate C.red: float32[16] (shared)\n        allocate C.rf: float32[1] (local)",
        "C.red[k.inner] = C.partial[0]\n        barrier()\n        if (k.inner < 8) {",
        "C.red[k.inner] = C.red[k.inner] + C.red[k.inner + 1]\n        }\n        barrier()\n        C.partial[0] = C.red[0]\n        "
        "if (k.inner == 0) "
        "{\n          C[i*5 + j] = C.partial[0]"})
    EXPECT_TRUE(contains(text, piece)) << "missing '" << piece << "' in\n" << text;
}

// Where the device has warps (cuda: 32 lanes), threads over whole warps combine their partials
// by shuffles, each warp into its first lane; with several warps, those lanes leave their results
// in shared slots and every warp shuffles the slots again. Fewer threads than a warp, or a part
// of one, go through the tree.
TEST(Primitives, CrossThreadReductionShufflesWithinWarps) {
  std::string one_warp = cross_thread_matmul(300, 32, 32);
  for (const char* piece : {"C.partial[0] = C.partial[0] + warp_shuffle_down(C.partial[0], int32(16))",
                            "C.partial[0] = C.partial[0] + warp_shuffle_down(C.partial[0], int32(1))\n        if (k.inner == 0) "
                            "{\n          C[i*5 + j] = C.partial[0]"})
    EXPECT_TRUE(contains(one_warp, piece)) << "missing '" << piece << "' in\n" << one_warp;
  EXPECT_FALSE(contains(one_warp, "shared")) << one_warp;
  EXPECT_FALSE(contains(one_warp, "barrier")) << one_warp;

  std::string warps = cross_thread_matmul(300, 96, 32);
  for (const char* piece :
       {"allocate C.warps: float32[3] (shared)",
        "warp_shuffle_down(C.partial[0], int32(1))\n        if (k.inner % 32 == 0) {\n          "
        "C.warps[k.inner // 32] = C.partial[0]\n        }\n        C.partial[0] = 0.0f\n        barrier()\n"
        "        if (k.inner % 32 < 3) {\n          C.partial[0] = C.warps[k.inner % 32]\n        }\n"
        "        C.partial[0] = C.partial[0] + warp_shuffle_down(C.partial[0], int32(2))\n"
        "        C.partial[0] = C.partial[0] + warp_shuffle_down(C.partial[0], int32(1))\n        if (k.inner == 0) {"})
    EXPECT_TRUE(contains(warps, piece)) << "missing '" << piece << "' in\n" << warps;

  for (auto [threads, warp_size] : {std::pair{16, 32}, std::pair{48, 32}, std::pair{64, 1}}) {
    std::string tree = cross_thread_matmul(300, threads, warp_size);
    EXPECT_FALSE(contains(tree, "warp_shuffle_down")) << tree;
    EXPECT_TRUE(contains(tree, "C.red")) << tree;
  }
}

TEST(Primitives, ComputeInlineSubstitutesTheProducer) {
  Tensor A = placeholder({Expr(10)}, runtime::kFloat32, "A");
  Tensor B = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return A(i[0]) * 2; }, "B");
  Tensor C = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return B(i[0]) + 1; }, "C");
  Schedule s({C});
  s[B].compute_inline();
  NDArray a = random_array({10}, 3), c = NDArray::empty({10}, runtime::kFloat32);
  std::string text = to_string(run(s, {A, C}, {a, c}));
  EXPECT_FALSE(contains(text, "allocate B")) << text;
  EXPECT_TRUE(contains(text, "C[i] = A[i]*2.0f + 1.0f")) << text;
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] * 2 + 1);
}

TEST(Primitives, ComputeAtComputesOnlyTheWindowItNeeds) {
  // C[i] = B[i] + B[i+1] with B computed per block of 8 outputs: 9 elements, clipped at the end.
  Tensor A = placeholder({Expr(21)}, runtime::kFloat32, "A");
  Tensor B = compute(
      {Expr(21)}, [&](const std::vector<Var>& i) { return A(i[0]) * 3; }, "B");
  Tensor C = compute(
      {Expr(20)}, [&](const std::vector<Var>& i) { return B(i[0]) + B(i[0] + 1); }, "C");
  Schedule s({C});
  auto [io, ii] = s[C].split(s[C].loop("i"), 8);
  s[B].compute_at(s[C], io);
  NDArray a = random_array({21}, 4), c = NDArray::empty({20}, runtime::kFloat32);
  std::string text = to_string(run(s, {A, C}, {a, c}));
  EXPECT_TRUE(contains(text, "allocate B: float32[9]")) << text;
  for (int i = 0; i < 20; ++i)
    EXPECT_FLOAT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] * 3 + a.data_as<float>()[i + 1] * 3);
}

TEST(Primitives, TailIsPartitionedSoTheMainBodyStaysVectorized) {
  Matmul mm = matmul(3, 100, 2);
  Schedule s({mm.C});
  auto [jo, ji] = s[mm.C].split(s[mm.C].loop("j"), 16);
  s[mm.C].vectorize(ji);
  std::string text = to_string(lower(s, {mm.A, mm.B, mm.C}));
  EXPECT_TRUE(contains(text, "for (j.outer, 0, 6)")) << text;
  EXPECT_TRUE(contains(text, "ramp(i*100 + j.outer*16, 1, 16)")) << text;
  EXPECT_TRUE(contains(text, "ramp(i*100 + 96, 1, 4)")) << text;  // the 4-wide tail
  EXPECT_FALSE(contains(text, "if (")) << text;
}

}  // namespace
}  // namespace tessera::schedule::testing

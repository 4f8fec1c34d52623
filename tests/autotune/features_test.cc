// Candidate features: fixed length, deterministic, fast, and moved by the schedule decisions the
// cost model must tell apart.
#include <gtest/gtest.h>

#include <chrono>

#include "autotune/features.h"
#include "search_test_util.h"
#include "tensor_ir/printer.h"

namespace tessera::autotune {
namespace {

using namespace testing;

float feature(const std::vector<float>& f, const std::string& name) {
  const auto& names = feature_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw std::runtime_error("no feature " + name);
  return f[static_cast<size_t>(it - names.begin())];
}

std::vector<float> features_of(const SearchSpace& space, const Candidate& c) {
  return extract_features(space.lower(*space.apply(c)));
}

TEST(Features, FixedLengthAndNamed) {
  EXPECT_EQ(feature_names().size(), feature_count());
  EXPECT_GE(feature_count(), 50u);
  EXPECT_LE(feature_count(), 200u);
  SearchSpace space(softmax_task().compute);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(features_of(space, space.sample(rng)).size(), feature_count());
}

TEST(Features, DeterministicAcrossReplays) {
  SearchSpace space(conv_task().compute);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 5; ++i) {
    Candidate c = space.sample(rng);
    auto f = features_of(space, c);
    EXPECT_EQ(f, features_of(space, c));
    EXPECT_EQ(f, extract_features(space.lower(*space.replay(space.trace_json(c)))));
  }
}

schedule::HardwareParams gpu_hardware() {
  schedule::HardwareParams hw;
  hw.registers = tensor_ir::ops::Registers::scalar_device();
  hw.gpu = {1024, 48 * 1024, 32, true};
  return hw;
}

// A sample of sketch `name` that lowers for the device.
Candidate runnable(const SearchSpace& space, const std::string& name) {
  std::mt19937_64 rng(3);
  for (int tries = 0; tries < 2000; ++tries) {
    Candidate c = space.sample(rng);
    if (space.sketches()[c.sketch].name != name) continue;
    try {
      space.lower(*space.apply(c));
      return c;
    } catch (const Error&) {
    }
  }
  throw std::runtime_error("no runnable sample of " + name);
}

TEST(Features, DescribeGpuLaunches) {
  // A thread per element of 2400 in blocks of 256: 10 blocks, every access coalesced.
  SearchSpace sigmoid(for_hardware(elementwise_task(), gpu_hardware()).compute);
  auto f = features_of(sigmoid, SearchSpace::default_candidate());
  EXPECT_FLOAT_EQ(feature(f, "blocks"), std::log2(11.0f));
  EXPECT_FLOAT_EQ(feature(f, "threads"), std::log2(257.0f));
  EXPECT_FLOAT_EQ(feature(f, "coalesced"), 1.0f);
  EXPECT_FLOAT_EQ(feature(f, "s0.b0.thread_stride"), 1.0f);  // log2(1 + 1)
  EXPECT_FLOAT_EQ(feature(f, "shared_bytes"), 0.0f);
  // Register tiles with and without their inputs staged in shared memory.
  SearchSpace gemm(for_hardware(te_gemm_task(64), gpu_hardware()).compute);
  auto plain = features_of(gemm, runnable(gemm, "C:cache_write_tile"));
  auto staged = features_of(gemm, runnable(gemm, "C:cache_write_tile_shared"));
  EXPECT_EQ(feature(plain, "shared_bytes"), 0.0f);
  EXPECT_GT(feature(staged, "shared_bytes"), 0.0f);
  float shared_buffers = 0;
  for (int b = 0; b < 4; ++b) shared_buffers += feature(staged, "s0.b" + std::to_string(b) + ".shared");
  EXPECT_GT(shared_buffers, 0.0f);
  for (const auto& g : {plain, staged}) EXPECT_GT(feature(g, "threads"), 0.0f);
  // A CPU kernel launches nothing.
  SearchSpace cpu(elementwise_task().compute);
  auto c = features_of(cpu, SearchSpace::default_candidate());
  EXPECT_EQ(feature(c, "blocks"), 0.0f);
  EXPECT_EQ(feature(c, "threads"), 0.0f);
}

TEST(Features, FollowTheSchedule) {
  // te gemm 64^3, plain tiling: innermost tile of j (the vectorized one) 16 vs 1; threads or not.
  SearchSpace space(te_gemm_task(64).compute);
  int tile = -1;
  for (size_t i = 1; i < space.sketches().size(); ++i)
    if (space.sketches()[i].name == "C:tile") tile = static_cast<int>(i);
  ASSERT_GE(tile, 1);
  // Layout: C.i (3), C.j (3), C.k (1), C.parallel, C.unroll.
  Candidate vec{tile, {4, 2, 2, 16, 2, 1, 4, 2, 0}};
  Candidate scalar{tile, {4, 2, 2, 1, 2, 16, 4, 0, 0}};
  auto fv = features_of(space, vec), fs = features_of(space, scalar);
  EXPECT_NE(fv, fs);
  EXPECT_FLOAT_EQ(feature(fv, "s0.lanes"), std::log2(17.0f));
  EXPECT_FLOAT_EQ(feature(fs, "s0.lanes"), 1.0f);  // log2(1 + 1)
  EXPECT_GT(feature(fv, "parallel_fraction"), 0.99f);
  EXPECT_EQ(feature(fs, "parallel_fraction"), 0.0f);
  // Same arithmetic either way.
  EXPECT_FLOAT_EQ(feature(fv, "float_ops"), feature(fs, "float_ops"));
  // Along the vector, C and B are contiguous (A is invariant); with scalar j the innermost loop
  // is i's tile: C and A strided, B invariant.
  auto contiguous = [](const std::vector<float>& f) {
    return feature(f, "s0.b0.contiguous") + feature(f, "s0.b1.contiguous") + feature(f, "s0.b2.contiguous");
  };
  EXPECT_EQ(contiguous(fv), 2.0f);
  EXPECT_EQ(contiguous(fs), 0.0f);
  // Unrolling shows.
  Candidate unrolled = vec;
  unrolled.decisions.back() = 64;
  EXPECT_GT(feature(features_of(space, unrolled), "s0.unrolled"), feature(fv, "s0.unrolled"));
}

TEST(Features, IgnorePrefetches) {
  // Features describe the stores and what they read; a prefetch reads nothing. The convolution
  // template with and without its weight prefetch lowers to different code, the same features.
  SearchSpace space(conv_task().compute);
  int knobs = -1;
  for (size_t i = 0; i < space.sketches().size(); ++i)
    if (space.sketches()[i].is_template) knobs = static_cast<int>(i);
  ASSERT_GE(knobs, 0);
  Candidate on{knobs, {}};
  size_t prefetch = space.layout(knobs).size();
  for (size_t k = 0; k < space.layout(knobs).size(); ++k) {
    on.decisions.push_back(space.layout(knobs)[k].options[0]);
    if (space.layout(knobs)[k].name == "conv.prefetch") prefetch = k;
  }
  ASSERT_LT(prefetch, on.decisions.size());
  Candidate off = on;
  off.decisions[prefetch] = 0;
  std::string with = tensor_ir::to_string(space.lower(*space.apply(on))),
              without = tensor_ir::to_string(space.lower(*space.apply(off)));
  EXPECT_NE(with.find("prefetch("), std::string::npos);
  EXPECT_EQ(without.find("prefetch("), std::string::npos);
  EXPECT_EQ(features_of(space, on), features_of(space, off));
}

TEST(Features, TakeMicrosecondsToMilliseconds) {
  SearchSpace space(matmul_task(256, 256, 256).compute);
  std::mt19937_64 rng(4);
  auto func = space.lower(*space.apply(space.sample(rng)));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) extract_features(func);
  double each = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 20;
  EXPECT_LT(each, 5e-3);
}

}  // namespace
}  // namespace tessera::autotune

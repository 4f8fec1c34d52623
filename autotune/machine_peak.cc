#include "autotune/machine_peak.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tessera::autotune {

namespace {

constexpr long kIterations = 400'000;

// A kernel runs kIterations rounds of independent FMA chains (enough to cover an FMA's latency on
// every pipe, few enough to stay in registers: the loops over them are unrolled) and returns the
// floating-point operations it did. The sum of its accumulators goes to `sink`, so that none of
// the arithmetic is dead.
struct Kernel {
  double (*run)(float* sink);
  const char* name;
};

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_avx512(float* sink) {
  constexpr int chains = 12;
  __m512 acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = _mm512_set1_ps(c);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  for (int c = 1; c < chains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, acc[0]);
  *sink = lanes[0];
  return 2.0 * 16 * chains * kIterations;
}

// Ten chains and two constants fill the 16 registers (more spill).
__attribute__((target("avx2,fma"))) double fma_avx2(float* sink) {
  constexpr int chains = 10;
  __m256 acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = _mm256_set1_ps(c);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 10
    for (int c = 0; c < chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  for (int c = 1; c < chains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, acc[0]);
  *sink = lanes[0];
  return 2.0 * 8 * chains * kIterations;
}

// Both widths where the CPU has AVX-512: some CPUs split a 512-bit FMA over their 256-bit pipes
// and reach their peak with either, others only with one.
std::vector<Kernel> fma_kernels() {
  __builtin_cpu_init();
  std::vector<Kernel> kernels;
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({fma_avx512, "AVX-512 FMA"});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back({fma_avx2, "AVX2 FMA"});
  return kernels;  // none: a peak of separate multiplies and adds is not measured
}
#elif defined(__aarch64__)
double fma_neon(float* sink) {
  constexpr int chains = 12;
  float32x4_t acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = vdupq_n_f32(c);
  const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
  for (long i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c) acc[c] = vfmaq_f32(b, acc[c], a);
  for (int c = 1; c < chains; ++c) acc[0] = vaddq_f32(acc[0], acc[c]);
  *sink = vaddvq_f32(acc[0]);
  return 2.0 * 4 * chains * kIterations;
}

std::vector<Kernel> fma_kernels() { return {{fma_neon, "NEON FMA"}}; }
#else
std::vector<Kernel> fma_kernels() { return {}; }
#endif

// GFLOP/s of `threads` copies of the kernel run at once (threads sharing a core share its pipes,
// as a kernel's threads do): the best of many short runs, since the machine may be busy.
double run_on_threads(const Kernel& kernel, int threads) {
  double best = 0;
  for (int attempt = 0; attempt < 15; ++attempt) {
    std::vector<float> sinks(threads);
    std::vector<double> flops(threads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { flops[t] = kernel.run(&sinks[t]); });
    for (auto& w : workers) w.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, flops[0] * threads / seconds / 1e9);
  }
  return best;
}

}  // namespace

std::optional<MachinePeak> measure_machine_peak(const std::string& target_kind) {
  if (target_kind != "llvm") return std::nullopt;
  const int threads = runtime::default_num_threads();
  std::optional<MachinePeak> peak;
  for (const Kernel& kernel : fma_kernels()) {
    double gflops = run_on_threads(kernel, threads);
    if (!peak || gflops > peak->gflops)
      peak = MachinePeak{gflops, std::string(kernel.name) + " x " + std::to_string(threads) + " thread" +
                                     (threads == 1 ? "" : "s") + ", measured"};
  }
  return peak;
}

}  // namespace tessera::autotune
